"""Runs set beside a published table: per column the run's number with its items and 95% interval,
the paper's number with its items and interval, the difference, whether the run read the paper's
files, the paper's version named, and how each run's protocol differs from the authors'.

`mem-agent compare RUN ... --paper TABLE[:ROW]` (evaluation/paper_tables.py holds the tables and
their sources, evaluation/paper_beside.py the numbers beside them, shared with the evaluator's
--paper) prints, for each column the run and the table share, those numbers per run and chosen row,
lists each run's protocol differences (temperature, top_p, samples per question, chunk size, memory
budget, chunk cap, a direct run's window), and writes paper_comparison.json and
paper_comparison.png to compare's --output-dir. Every stored table works: RULER-HQA's sub_em at the
run's RULER-HQA lengths, RULER's average at its RULER lengths. With two or more runs the runs are
also compared with each other first, as compare does without --paper.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import check_outputs, write_figure_png, write_text_atomic
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.accuracy_plot import draw_published, finish_accuracy_axes, tokens_label
from mem_agent.evaluation.cell_scores import HEADLINE
from mem_agent.evaluation.paper_beside import beside_run
from mem_agent.evaluation.paper_tables import PaperRow, PaperTable, choose, protocol_differences
from mem_agent.evaluation.ruler_report import length_label
from mem_agent.observability.comparison import (
    ComparisonRequest,
    EvalRun,
    compare_outputs,
    compare_runs,
    load_eval_run,
)

NUMBERS_NAME, PLOT_NAME = "paper_comparison.json", "paper_comparison.png"


@dataclass(frozen=True)
class Beside:
    table: PaperTable
    rows: tuple[PaperRow, ...]
    runs: tuple[EvalRun, ...]
    entries: tuple[dict[str, Any], ...]  # per run, paper_beside.beside_run's entry for this table

    def labels(self) -> list[str]:
        ours = {label for entry in self.entries for label in entry["columns"]}
        return [label for label in self.table.columns if label in ours]


def compare_with_papers(request: ComparisonRequest, papers: Sequence[str]) -> None:
    """Runs compared with each other (two or more), then beside each chosen table (none: compare
    alone). UsageError: an unknown table or row, a --metric that is neither `headline` nor the
    table's, or no run with a column of the table."""
    if not papers:
        compare_runs(request)
        return
    chosen = [choose(choice) for choice in papers]
    for choice, (table, _) in zip(papers, chosen, strict=True):
        if request.metric not in (HEADLINE, table.metric):
            raise UsageError(
                f"--paper {choice} holds {table.metric}; runs are set beside it by --metric {table.metric}"
                f" or {HEADLINE}"
            )
    numbers_path, plot_path = request.output_dir / NUMBERS_NAME, request.output_dir / PLOT_NAME
    both = len(request.runs) >= 2  # compared with each other too: compare's outputs first
    check_outputs([*(compare_outputs(request.output_dir) if both else ()), numbers_path, plot_path])
    if both:
        compare_runs(request)
        print()
    labels = request.labels or [None] * len(request.runs)
    if len(labels) != len(request.runs):
        raise UsageError(f"--labels names {len(labels)} runs but {len(request.runs)} were given")
    runs = tuple(load_eval_run(path, label) for path, label in zip(request.runs, labels, strict=True))
    besides = [_beside(table, rows, runs, request.seed, request.resamples) for table, rows in chosen]
    for beside in besides:
        if not beside.labels():
            raise UsageError(
                f"no run has a column of {beside.table.name} ({', '.join(beside.table.columns)}"
                f" {'tokens of RULER' if beside.table.metric == 'ruler_average' else 'documents of RULER-HQA'})"
            )
    numbers = [_report(beside) for beside in besides]
    write_text_atomic(numbers_path, json.dumps(numbers, indent=2, allow_nan=False) + "\n")
    _plot(besides, plot_path)
    print(f"plot: {plot_path}  numbers: {numbers_path}")


def _beside(
    table: PaperTable, rows: tuple[PaperRow, ...], runs: tuple[EvalRun, ...], seed: int, resamples: int
) -> Beside:
    entries = tuple(
        beside_run(
            [(table, rows)],
            list(run.cells.values()),
            lambda label, run=run: run.items.get(label, {}).values(),
            run.facts,
            seed=seed,
            resamples=resamples,
        )[0]
        for run in runs
    )
    return Beside(table, rows, runs, entries)


def _report(beside: Beside) -> dict[str, Any]:
    """Print one table beside the runs; the same numbers, as written to paper_comparison.json."""
    table = beside.table
    print(f"beside {table.cited} ({table.paper}; read from {table.source})")
    print(f"{table.metric} x 100; run: {beside.entries[0]['interval']}; paper: Wilson 95% where its items are known")
    header = ["column", "paper"]
    for run in beside.runs:
        header += [f"{run.name}", "items", "95%", "files"]
    for row in beside.rows:
        header += [row.model, "items", "95%"] + [f"{run.name} - paper" for run in beside.runs]
    lines, lengths = [header], {}
    paper_items = table.items_per_column
    for label in beside.labels():
        ours = {run.name: entry["run"].get(label) for run, entry in zip(beside.runs, beside.entries, strict=True)}
        published = {row.model: row.values.get(label) for row in beside.rows}
        intervals = {row.model: beside.entries[0]["paper_intervals"][row.model][label] for row in beside.rows}
        lengths[label] = {
            "paper_column": table.columns[label],
            "runs": {name: None if side is None else side["value"] for name, side in ours.items()},
            "run_items": {name: None if side is None else side["items"] for name, side in ours.items()},
            "run_interval": {
                name: None if side is None else [side["low"], side["high"]] for name, side in ours.items()
            },
            "run_files": {name: None if side is None else side["files"] for name, side in ours.items()},
            "paper": published,
            "paper_items": paper_items,
            "paper_interval": intervals,
            "difference": {
                name: {m: _minus(side, value) for m, value in published.items()} for name, side in ours.items()
            },
        }
        cells = [label, table.columns[label]]
        for side in ours.values():
            cells += _run_cells(side)
        for model, value in published.items():
            cells += [_shown(value), _count(paper_items), _interval(intervals[model])]
            cells += [_signed(_minus(side, value)) for side in ours.values()]
        lines.append(cells)
    print(_aligned(lines))
    differences = {run.name: protocol_differences(table, run.facts) for run in beside.runs}
    for name, items in differences.items():
        print(f"protocol of {name} against the paper: {'; '.join(items) if items else 'the same settings'}")
    return {
        "table": table.name,
        "paper": table.paper,
        "cited": table.cited,
        "version": table.version,
        "source": table.source,
        "metric": table.metric,
        "interval": beside.entries[0]["interval"],
        "paper_items": paper_items,
        "paper_items_source": table.items_source,
        "lengths": lengths,
        "protocol_differences": differences,
    }


def _run_cells(side: dict[str, Any] | None) -> list[str]:
    if side is None:
        return ["-", "0", "-", "-"]
    return [_shown(side["value"]), str(side["items"]), _interval(_pair(side)), side["files"]]


def _pair(side: dict[str, Any]) -> list[float] | None:
    return None if side["low"] is None else [side["low"], side["high"]]


def _minus(side: dict[str, Any] | None, published: float | None) -> float | None:
    return None if side is None or published is None else round(side["value"] - published, 4)


def _shown(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.2f}"


def _count(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def _interval(pair: Sequence[float] | None) -> str:
    return "n/a" if pair is None else f"[{pair[0]:.1f}, {pair[1]:.1f}]"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    lines = [" | ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _plot(besides: Sequence[Beside], path: Path) -> None:
    """A panel per table: each run (solid, its 95% interval as bars) and each published row
    (dashed) at the run's context tokens per column (RULER-HQA: its mean tokens; RULER: the length)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(1, len(besides), figsize=(7.2 * len(besides), 4.6), dpi=120, squeeze=False)
    for axes, beside in zip(panels[0], besides, strict=True):
        tokens: dict[str, float] = {}
        for run, entry in zip(beside.runs, beside.entries, strict=True):
            for label, side in entry["run"].items():
                tokens.setdefault(label, max(float(side["tokens"]), 1.0))
            points = sorted((tokens[label], side) for label, side in entry["run"].items())
            ys = [side["value"] for _, side in points]
            errors = [[_gap(y, side["low"]) for y, (_, side) in zip(ys, points, strict=True)],
                      [_gap(side["high"], y) for y, (_, side) in zip(ys, points, strict=True)]]  # fmt: skip
            axes.errorbar([x for x, _ in points], ys, yerr=errors, marker="o", capsize=3, label=f"{run.name}")
        draw_published(axes, [(row.model, row.values) for row in beside.rows], tokens)
        table = beside.table
        named = length_label if table.metric == "ruler_average" else tokens_label  # RULER's lengths: 8K, 32K
        finish_accuracy_axes(
            axes,
            {x: named(int(x)) if named is length_label else named(x) for x in sorted(tokens.values())},
            ylabel=f"{table.metric} x 100",
            title=f"{table.name}, arXiv {table.arxiv}{table.version}",
            xlabel="context length (tokens of this run, log scale)",
            tick_size=8,
            legend_size=7,
        )
    figure.tight_layout()
    write_figure_png(figure, path)


def _gap(high: float | None, low: float | None) -> float:
    return 0.0 if high is None or low is None else max(high - low, 0.0)
