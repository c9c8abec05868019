"""What an evaluation shows people: each suite's table and figure, and summary.json.

summary.json's `results` holds one cell per eval file of every suite (its suite, task, length,
label, headline metric and figures, evaluation/suites/), the one shape every view reads. Each suite
prints and draws its own cells as its paper does (RULER-HQA: sub_em x 100 per length with EM, F1
and the strict training reward beside it and the accuracy curve; RULER: the heat map; LongBench:
a row and a bar per task), always with the count of failed items (which are scored as wrong) so
that a flaky server can never pass for a weak model or the reverse.

A rerun into the same folder reuses finished results. summary.json therefore keeps the facts of
every run that produced results (`run`: the latest, `earlier_runs`: the ones before, oldest
first), and a run that reused everything adds none: its zero requests never replace the facts of
the run that did the work. Results are reused only when the settings that shape an answer are
those the folder's record names (evaluation/reuse.py); otherwise the evaluator refuses before it starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import check_outputs, write_text_atomic
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.cell_tables import cut_label
from mem_agent.evaluation.paper_beside import beside_run
from mem_agent.evaluation.paper_tables import Chosen
from mem_agent.evaluation.results import read_results, unique_items
from mem_agent.evaluation.reuse import RECORD_NAME
from mem_agent.evaluation.suites import SUITES, Cell, EvalFile, cell_of, suite_named, suite_rank
from mem_agent.evaluation.summary_file import SUMMARY_NAME, read_summary

# Every suite's metric names: a cell holds its own suite's alone.
SCORE_FIELDS = frozenset(metric for suite in SUITES for metric in suite.metric_names)

__all__ = ["EvalFileReport", "cut_label", "write_reports"]


@dataclass(frozen=True)
class EvalFileReport:
    label: str
    path: Path
    summary: dict[str, Any]

    def cell(self) -> dict[str, Any]:
        """summary.json's entry: which suite, task and length, the headline metric, the figures."""
        cell = cell_of(self.path)
        metrics = suite_named(cell.suite).metrics(cell.task)
        facts = cell.facts() | {"label": self.label, "file": str(self.path), "metric": metrics[0]}
        figures = {key: value for key, value in self.summary.items() if key not in SCORE_FIELDS or key in metrics}
        return facts | {"metrics": list(metrics)} | figures


def check_run_outputs(output_dir: Path, files: Sequence[EvalFile], *, plot: bool) -> None:
    """Every file a run over `files` writes in `output_dir` (results, summary.json, each suite's figure)
    checked before the first is written: a link or a FIFO at any of them is refused with nothing changed."""
    suites = [suite for suite in SUITES if suite.name in {file.cell.suite for file in files}]
    outputs = [output_dir / file.results_name for file in files] + [output_dir / SUMMARY_NAME, output_dir / RECORD_NAME]
    check_outputs(outputs + [output_dir / suite.plot_name for suite in suites if plot])


def write_reports(
    reports: Sequence[EvalFileReport],
    output_dir: Path,
    runs: Sequence[dict[str, Any]],
    *,
    plot: bool = True,
    keep_other_labels: bool = False,
    papers: Sequence[Chosen] = (),
) -> None:
    """Each suite's table on stdout, then summary.json and each suite's figure (all checked before the
    first is written); `runs` are the facts of every run that produced these results, oldest first
    (the last is the latest). With `keep_other_labels` the cells an earlier run evaluated into this
    folder and this one did not stay (their results files are still there, made with the settings
    `runs` records). `papers` (--paper) are set beside the suite whose metric their table holds: in
    summary.json's 'paper', and in that suite's table and figure."""
    cells = [report.cell() for report in reports]
    if keep_other_labels:
        cells = _with_other_cells(cells, output_dir)
    by_suite = {suite.name: [c for c in cells if c["suite"] == suite.name] for suite in SUITES}
    beside = beside_run(papers, cells, _lines_in(output_dir), runs[-1] if runs else None)
    for entry in beside:
        if not entry["columns"]:
            print(f"--paper {entry['table']}: none of its lengths is in this run, so it is not drawn")
    suites = [suite for suite in SUITES if by_suite[suite.name]]
    for suite in suites:
        paper = [entry for entry in beside if entry["metric"] == suite.paper_metric and entry["columns"]]
        print(suite.table(by_suite[suite.name], paper), flush=True)
    check_outputs([output_dir / SUMMARY_NAME, *(output_dir / suite.plot_name for suite in suites if plot)])
    document = {
        "suites": [suite.name for suite in suites],
        "results": [cell for suite in suites for cell in by_suite[suite.name]],
        "paper": beside,
        "run": runs[-1] if runs else None,
        "earlier_runs": list(runs[:-1]),
    }
    write_text_atomic(output_dir / SUMMARY_NAME, json.dumps(document, indent=2) + "\n")
    if plot:
        for suite in suites:
            paper = [entry for entry in beside if entry["metric"] == suite.paper_metric and entry["columns"]]
            suite.plot(by_suite[suite.name], output_dir / suite.plot_name, paper)
    plots = "".join(f"  plot: {output_dir / suite.plot_name}" for suite in suites) if plot else ""
    print(f"summary: {output_dir / SUMMARY_NAME}" + plots)


def _lines_in(output_dir: Path) -> Callable[[str], list[dict[str, Any]]]:
    """A cell label -> its results lines as the report counts them (none for a file not there)."""

    def lines(label: str) -> list[dict[str, Any]]:
        path = Path(output_dir) / f"results_{label}.jsonl"
        return unique_items(read_results(path)) if path.is_file() else []

    return lines


def _with_other_cells(cells: list[dict[str, Any]], output_dir: Path) -> list[dict[str, Any]]:
    """`cells` and the earlier summary's other cells whose results file is still there, each suite's
    in its order."""
    try:
        earlier = read_summary(Path(output_dir) / SUMMARY_NAME)["results"]
    except (OSError, UsageError):
        earlier = []
    labels = {cell["label"] for cell in cells}
    merged = list(cells)
    for cell in earlier:
        if cell["label"] not in labels and (Path(output_dir) / f"results_{cell['label']}.jsonl").is_file():
            merged.append(cell)
    known = [cell for cell in merged if cell.get("suite") in {suite.name for suite in SUITES}]
    return sorted(known, key=lambda cell: (suite_rank(cell["suite"]), _order(cell)))


def _order(cell: dict[str, Any]) -> tuple[Any, ...]:
    suite = suite_named(cell["suite"])
    length = cell.get("length")
    return suite.order(
        Cell(cell["suite"], str(cell.get("task")), length if isinstance(length, int) else None, cell["label"])
    )
