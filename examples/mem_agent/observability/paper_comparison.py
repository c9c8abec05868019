"""Runs set beside a published table: the same metric per length, the paper's version named, and
how each run's protocol differs from the authors'.

`mem-agent compare RUN ... --paper TABLE[:ROW]` (evaluation/paper_tables.py holds the tables and
their sources) prints, for each length the run and the table share, the run's sub_em x 100 next to
each chosen row's published number, lists each run's protocol differences (temperature, top_p,
samples per question, chunk size, memory budget, chunk cap, a direct run's window), and writes
paper_comparison.json and paper_comparison.png to compare's --output-dir. With two or more runs
the runs are also compared with each other first, as compare does without --paper.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.common.atomic_files import write_figure_png, write_text_atomic
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.accuracy_plot import draw_published, finish_accuracy_axes, tokens_label
from mem_agent.evaluation.paper_tables import PaperRow, PaperTable, choose, protocol_differences
from mem_agent.observability.comparison import ComparisonRequest, EvalRun, compare_runs, load_eval_run

NUMBERS_NAME, PLOT_NAME = "paper_comparison.json", "paper_comparison.png"


@dataclass(frozen=True)
class Beside:
    table: PaperTable
    rows: tuple[PaperRow, ...]
    runs: tuple[EvalRun, ...]

    def labels(self) -> list[str]:
        ours = {label for run in self.runs for label in run.lengths}
        return [label for label in self.table.columns if label in ours]


def compare_with_papers(request: ComparisonRequest, papers: Sequence[str]) -> None:
    """Runs compared with each other (two or more), then beside each chosen table (none: compare
    alone). UsageError: an unknown table or row, a metric other than the table's, or a run that
    shares no length with it."""
    if not papers:
        compare_runs(request)
        return
    chosen = [choose(choice) for choice in papers]
    for choice, (table, _) in zip(papers, chosen, strict=True):
        if table.metric != request.metric:
            raise UsageError(
                f"--paper {choice} holds {table.metric}; runs are set beside it by --metric {table.metric}"
            )
    if len(request.runs) >= 2:
        compare_runs(request)
        print()
    labels = request.labels or [None] * len(request.runs)
    if len(labels) != len(request.runs):
        raise UsageError(f"--labels names {len(labels)} runs but {len(request.runs)} were given")
    runs = tuple(load_eval_run(path, label) for path, label in zip(request.runs, labels, strict=True))
    besides = [Beside(table, rows, runs) for table, rows in chosen]
    for beside in besides:
        if not beside.labels():
            raise UsageError(f"no run has a length of {beside.table.name} ({', '.join(beside.table.columns)} docs)")
    request.output_dir.mkdir(parents=True, exist_ok=True)
    numbers = [_report(beside, request.metric) for beside in besides]
    numbers_path, plot_path = request.output_dir / NUMBERS_NAME, request.output_dir / PLOT_NAME
    write_text_atomic(numbers_path, json.dumps(numbers, indent=2) + "\n")
    _plot(besides, request.metric, plot_path)
    print(f"plot: {plot_path}  numbers: {numbers_path}")


def _report(beside: Beside, metric: str) -> dict[str, Any]:
    """Print one table beside the runs; the same numbers, as written to paper_comparison.json."""
    table = beside.table
    print(f"beside {table.cited} ({table.paper}; read from {table.source})")
    header = ["docs", "paper", *(f"{run.name} {metric}" for run in beside.runs), *(row.model for row in beside.rows)]
    lines = [header]
    lengths = {}
    for label in beside.labels():
        ours = {run.name: float(run.lengths[label][metric]) for run in beside.runs if label in run.lengths}
        published = {row.model: row.values.get(label) for row in beside.rows}
        lengths[label] = {"paper_column": table.columns[label], "runs": ours, "paper": published}
        cells = [label, table.columns[label], *(_shown(ours.get(run.name)) for run in beside.runs)]
        lines.append(cells + [_shown(value) for value in published.values()])
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
        "metric": metric,
        "lengths": lengths,
        "protocol_differences": differences,
    }


def _shown(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.2f}"


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    lines = [" | ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _plot(besides: Sequence[Beside], metric: str, path: Path) -> None:
    """Each run (solid) and each published row (dashed) at the run's mean context tokens per length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.2, 4.4), dpi=120)
    runs = besides[0].runs
    tokens: dict[str, float] = {}
    for run in runs:
        for label, result in run.lengths.items():
            tokens.setdefault(label, max(float(result["mean_context_tokens"]), 1.0))
        points = sorted((tokens[label], float(run.lengths[label][metric])) for label in run.lengths)
        axes.plot([x for x, _ in points], [y for _, y in points], marker="o", label=run.name)
    for beside in besides:
        draw_published(axes, [(f"{row.model} ({beside.table.cited})", row.values) for row in beside.rows], tokens)
    finish_accuracy_axes(
        axes,
        {x: tokens_label(x) for x in sorted(tokens.values())},
        ylabel=f"{metric} x 100",
        title="This run beside the published table",
        xlabel="context length (tokens of this run, log scale)",
        tick_size=8,
        legend_size=7,
    )
    figure.tight_layout()
    write_figure_png(figure, path)
