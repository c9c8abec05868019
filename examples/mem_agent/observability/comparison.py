"""Evaluation runs side by side: every cell (suite, task, length) two runs share, one overlaid plot
per suite, and paired differences (what is shown of them: comparison_report.py).

Two runs over the same questions differ by chance as well as by design (one sample per question
at temperature 0.7), so a gap between two means says little alone. For each pair of runs the
difference is taken item by item, per cell by the cell's own headline metric (summary.json's
`metric`: sub_em for RULER-HQA, string_match_all or sub_em for a RULER split, qa_f1 for LongBench),
over the items both answered (failed in either run, or answered with nothing, which MemAgent's mean
leaves out: the item leaves the pair, and the count says how many remain), and a 95% percentile
bootstrap interval over those items (seeded: the same runs give the same interval) says how far
chance alone moves it. Each suite then gets one average row: its shared items pooled, so each item
weighs the same and a cell weighs by its shared items. No average is taken across suites: their
metrics are not one scale.

Runs are compared only when they read the same data (each eval file's sha256, which the evaluator
records in summary.json) and scored answers by the same rules (summary.json's `scoring`); other
runs are refused in one line unless forced, and so are runs without an item in common. A suite
one run holds and the other not is named in one line. The mode (memagent, rememr1, direct) labels
each run, and the settings in which runs differ are listed.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mem_agent.common.guarded_files import check_outputs, write_text_atomic
from mem_agent.common.run_folder import folder_in_use
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.cell_scores import (
    HEADLINE,
    HQA_METRICS,
    bootstrap_mean,
    cell_metric,
    is_empty,
    item_score,
)
from mem_agent.evaluation.results import COMPLETED, read_results, unique_items
from mem_agent.evaluation.summary_file import SUMMARY_NAME, read_summary
from mem_agent.observability import comparison_report as report
from mem_agent.observability.comparison_plot import plot_runs

# `headline`: each cell's own metric; a RULER-HQA metric by name (the other suites keep theirs);
# `ruler_average`, what the paper's RULER table holds, is the headline of each RULER cell.
METRICS = (HEADLINE, *HQA_METRICS, "ruler_average")
AVERAGE = "average"  # the label of a suite's pooled row
WEIGHTING = "pooled: every shared item of the suite weighs the same (a cell by its shared items)"
PLOT_NAME = "compare.png"
NUMBERS_NAME = "compare.json"


@dataclass(frozen=True)
class EvalRun:
    path: Path
    name: str  # how tables and the plot label it
    mode: str
    facts: dict[str, Any]  # summary.json's latest run
    cells: dict[str, dict[str, Any]]  # cell label -> summary.json's cell (suite, task, length, metric, ...)
    items: dict[str, dict[str, dict[str, Any]]]  # cell label -> item id -> result line (results.unique_items)


def load_eval_run(path: Path, name: str | None = None, notes: list[str] | None = None) -> EvalRun:
    """The run at `path`, read by the evaluator's own readers and rule (of an item found more than
    once, the line the report counts). UsageError: not a run, a file that fails its schema, or a
    folder a live run holds (its summary and results would not match)."""
    summary_path = Path(path) / SUMMARY_NAME
    busy = folder_in_use(Path(path))
    if busy is not None:
        raise UsageError(f"{busy}: compare it when that run has ended")
    try:
        document = read_summary(summary_path)
    except FileNotFoundError:
        raise UsageError(f"{path} is not an evaluation run: no {SUMMARY_NAME}") from None
    facts = document["run"] or {}
    cells = {r["label"]: r for r in document["results"]}
    items = {}
    for label in cells:
        results_path = Path(path) / f"results_{label}.jsonl"
        lines = read_results(results_path, notes) if results_path.exists() else []  # a FIFO there: refused
        items[label] = {line["id"]: line for line in unique_items(lines)}
    mode = str(facts.get("mode") or (facts.get("config") or {}).get("mode") or "memagent")
    folder = Path(path).resolve().name
    default = mode if folder == mode else f"{mode}: {folder}"
    return EvalRun(Path(path), name or default, mode, facts, cells, items)


def comparison_problems(runs: Sequence[EvalRun]) -> list[str]:
    """Why these runs cannot be compared: data (per shared cell) or scoring rules that differ.
    A fact a run does not record (an older summary.json) is not compared."""
    problems = []
    for first, other in itertools.combinations(runs, 2):
        for label in report.ordered_labels(first.cells, first.cells.keys() & other.cells.keys()):
            a, b = _sha(first, label), _sha(other, label)
            if a and b and a != b:
                problems.append(f"eval_{label} differs (sha256 {a[:12]} in {first.path}, {b[:12]} in {other.path})")
        rules = first.facts.get("scoring"), other.facts.get("scoring")
        if None not in rules and rules[0] != rules[1]:
            problems.append(f"scoring rules differ ({_rules(first)} in {first.path}, {_rules(other)} in {other.path})")
    return problems


def unchecked_data(runs: Sequence[EvalRun]) -> list[str]:
    """Runs whose summary.json records no data sha256 (made before it did): their data is unchecked."""
    return [str(run.path) for run in runs if not run.facts.get("data_sha256")]


def _sha(run: EvalRun, label: str) -> str | None:
    value = (run.facts.get("data_sha256") or {}).get(label)
    return value if isinstance(value, str) else None


def _rules(run: EvalRun) -> str:
    rules = run.facts.get("scoring")
    return ", ".join(f"{k}={v}" for k, v in sorted(rules.items())) if isinstance(rules, dict) else "unrecorded"


@dataclass(frozen=True)
class PairedDifference:
    first: str
    second: str
    suite: str
    task: str | None  # None on a suite's average row
    length: int | None  # documents (RULER-HQA), tokens (RULER); None for LongBench and on average rows
    label: str  # the cell's label, or AVERAGE (every shared item of the suite pooled)
    metric: str  # the metric compared; "headline" on an average over cells of more than one metric
    questions: int  # answered by both
    difference: float  # mean of first - second, x 100
    low: float  # 95% bootstrap interval, x 100
    high: float
    first_shared: float  # each run's mean on those shared items, x 100
    second_shared: float
    first_all: float  # each run's own full-set figure (summary.json), items-weighted over cells, x 100
    second_all: float
    first_items: int  # the items of that full set
    second_items: int


@dataclass(frozen=True)
class _Pairing:
    """Two runs paired under one --metric, with the seeded generator every interval draws from."""

    first: EvalRun
    second: EvalRun
    choice: str
    rng: np.random.Generator
    resamples: int

    def pairs(self, label: str) -> np.ndarray:
        """(first, second) scores x 100 of the cell's items both completed with an answer."""
        a, b = self.first.items[label], self.second.items[label]
        metric = cell_metric(self.first.cells[label], self.choice)
        both = sorted(i for i in a.keys() & b.keys() if _counted(a[i]) and _counted(b[i]))
        return np.array([[item_score(a[i], metric), item_score(b[i], metric)] for i in both]).reshape(-1, 2) * 100

    def row(self, suite: str, labels: Sequence[str], pairs: np.ndarray, *, average: bool) -> PairedDifference:
        """The row of one cell (`labels`: its label) or of the suite's average (its shared cells)."""
        cell = self.first.cells[labels[0]]
        names = {cell_metric(self.first.cells[label], self.choice) for label in labels}
        shared = pairs.mean(axis=0) if pairs.size else (float("nan"),) * 2
        return PairedDifference(
            self.first.name,
            self.second.name,
            suite,
            None if average else cell.get("task"),
            None if average else cell.get("length"),
            AVERAGE if average else labels[0],
            names.pop() if len(names) == 1 else HEADLINE,
            len(pairs),
            *bootstrap_mean(pairs[:, 0] - pairs[:, 1], self.rng, self.resamples),
            float(shared[0]),
            float(shared[1]),
            *_full_set(self.first, self.second, suite, None if average else labels, self.choice),
        )


def paired_difference(
    first: EvalRun, second: EvalRun, metric: str, *, seed: int = 0, resamples: int = 10_000
) -> list[PairedDifference]:
    """Per suite both runs hold: a row per shared cell, then the suite's average (its shared items
    pooled): the mean per-item difference and its interval, each run's mean on the shared items,
    and each run's full-set figure."""
    pairing = _Pairing(first, second, metric, np.random.default_rng(seed), resamples)
    shared = report.ordered_labels(first.cells, first.items.keys() & second.items.keys())
    by_suite: dict[str, list[str]] = {}
    for label in shared:
        by_suite.setdefault(str(first.cells[label]["suite"]), []).append(label)
    differences = []
    for suite, labels in by_suite.items():
        per_cell = [pairing.pairs(label) for label in labels]
        differences += [
            pairing.row(suite, [label], pairs, average=False) for label, pairs in zip(labels, per_cell, strict=True)
        ]
        differences.append(pairing.row(suite, labels, np.concatenate(per_cell), average=True))
    return differences


def _counted(line: dict[str, Any]) -> bool:
    """An item a pair holds: completed, with an answer (an empty one is out of MemAgent's mean)."""
    return line.get("status") == COMPLETED and not is_empty(line)


def _full_set(
    first: EvalRun, second: EvalRun, suite: str, labels: Sequence[str] | None, choice: str
) -> tuple[float, float, int, int]:
    """Each run's figure over every item it holds in `labels` (None: every cell of the suite),
    items-weighted from summary.json."""
    figures = []
    for run in (first, second):
        chosen = [run.cells[name] for name in labels] if labels else report.suite_cells(run, suite)
        items = sum(int(cell["items"]) for cell in chosen)
        total = sum(float(cell.get(cell_metric(cell, choice)) or 0.0) * int(cell["items"]) for cell in chosen)
        figures.append((total / items if items else float("nan"), items))
    return figures[0][0], figures[1][0], figures[0][1], figures[1][1]


@dataclass(frozen=True)
class ComparisonRequest:
    """The runs (evaluator output folders) with their labels, the metric, and where the plot and
    the numbers go; `force` compares runs over different data or scoring rules anyway."""

    runs: tuple[Path, ...]
    labels: tuple[str, ...] | None  # default: "mode: folder name"
    metric: str
    output_dir: Path
    seed: int
    resamples: int
    force: bool


def compare_outputs(output_dir: Path) -> tuple[Path, Path]:
    """compare.json and compare.png in `output_dir`."""
    return output_dir / NUMBERS_NAME, output_dir / PLOT_NAME


def compare_runs(request: ComparisonRequest) -> None:
    """Print a table per suite, the paired table, the questions the runs disagree on and the
    settings that differ; write the numbers and the plot. UsageError: fewer than two runs, labels
    that do not match them, a run that cannot be read or that a live run holds, runs without an
    item in common, or runs that cannot be compared (without `force`); nothing is written then."""
    runs, problems, notes = _comparable_runs(request)
    for note in notes:
        print(f"note: {note}")
    for path in unchecked_data(runs):
        print(f"note: {path}/summary.json records no data sha256 (an older run): its data was not checked")
    for problem in problems:
        print(f"warning (--force): {problem}")
    for warning in report.question_set_warnings(runs):
        print(f"warning: {warning}")
    metric = request.metric
    pairs = list(itertools.combinations(runs, 2))
    differences = [
        d
        for first, second in pairs
        for d in paired_difference(first, second, metric, seed=request.seed, resamples=request.resamples)
    ]
    found = [d for first, second in pairs for d in report.disagreements(first, second, metric)]
    differing = report.differing_settings(runs)
    numbers_path, plot_path = outputs = compare_outputs(request.output_dir)
    check_outputs(outputs)  # both, before either is written
    numbers = {
        "metric": metric,
        "average_weighting": WEIGHTING,
        "runs": {run.name: str(run.path) for run in runs},
        "suites": {run.name: report.run_suites(run) for run in runs},
        "cells": {run.name: report.cell_numbers(run, metric) for run in runs},
        "pairs": [{k: _finite(v) for k, v in asdict(d).items()} for d in differences],
        "settings_that_differ": {
            name: dict(zip((r.name for r in runs), values, strict=True)) for name, values in differing.items()
        },
        "disagreements": [{"right": d.right, "wrong": d.wrong, "ids": d.ids} for d in found],
    }
    write_text_atomic(numbers_path, json.dumps(numbers, indent=2, allow_nan=False, default=str) + "\n")
    plot_runs(runs, metric, plot_path)
    # Printed once everything is written: a reader that stops early (| head) loses no file.
    for table in report.suite_tables(runs, metric):
        print(table)
        print()
    print(report.pairs_table(differences, metric))
    print()
    print("\n".join(report.settings_lines(runs, differing) + report.disagreement_lines(found)))
    print(f"plot: {plot_path}  numbers: {numbers_path}")


def _comparable_runs(request: ComparisonRequest) -> tuple[list[EvalRun], list[str], list[str]]:
    """The runs, read and named, what differs between them (empty unless forced), and what the
    readers skipped (lines cut by a crash)."""
    if len(request.runs) < 2:
        raise UsageError("give two or more runs to compare")
    if request.labels is not None and len(request.labels) != len(request.runs):
        raise UsageError(f"--labels names {len(request.labels)} runs but {len(request.runs)} were given")
    labels = request.labels or [None] * len(request.runs)
    notes: list[str] = []
    runs = [load_eval_run(path, label, notes) for path, label in zip(request.runs, labels, strict=True)]
    runs = runs if request.labels else _named(runs)
    if unshared := report.unshared_pairs(runs):
        raise UsageError(f"no question in common: {'; '.join(unshared)}; there is nothing to pair")
    problems = comparison_problems(runs)
    if problems and not request.force:
        raise UsageError(f"runs cannot be compared: {'; '.join(problems)} (pass --force to compare anyway)")
    return runs, problems, notes


def _named(runs: list[EvalRun]) -> list[EvalRun]:
    """Runs named by mode and folder name, and by path where two folders share a name."""
    names = [run.name for run in runs]
    return [replace(run, name=f"{run.mode}: {run.path}") if names.count(run.name) > 1 else run for run in runs]


def _finite(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else value
