"""Evaluation runs side by side: accuracy per length, one overlaid curve, and paired differences
(what is shown of them: comparison_report.py).

Two runs over the same questions differ by chance as well as by design (one sample per question
at temperature 0.7), so a gap between two means says little alone. For each pair of runs the
difference is taken question by question over the questions both answered (a failed item in
either run is left out of the pair, and the count says how many remain), and a 95% percentile
bootstrap interval over those questions (seeded: the same runs give the same interval) says how
far chance alone moves it.

Runs are compared only when they read the same data (each eval file's sha256, which the evaluator
records in summary.json) and scored answers by the same rules (summary.json's `scoring`); other
runs are refused in one line unless forced, and so are runs without a question in common. The
mode (memagent, rememr1, direct) labels each run, and the settings in which runs differ are listed.
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

from mem_agent.common.atomic_files import write_text_atomic
from mem_agent.common.run_folder import folder_in_use
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.results import COMPLETED, read_results, unique_items
from mem_agent.evaluation.summary_file import SUMMARY_NAME, read_summary
from mem_agent.observability import comparison_report as report

METRICS = ("sub_em", "em", "f1", "strict")
PLOT_NAME = "compare.png"
NUMBERS_NAME = "compare.json"


class NotComparableError(ValueError):
    """Runs over different data or scoring rules; the message names what differs and `--force`."""


@dataclass(frozen=True)
class EvalRun:
    path: Path
    name: str  # how tables and the plot label it
    mode: str
    facts: dict[str, Any]  # summary.json's latest run
    lengths: dict[str, dict[str, Any]]  # length label -> summary.json's result for it
    items: dict[str, dict[str, dict[str, Any]]]  # length label -> item id -> result line (results.unique_items)


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
    lengths = {r["label"]: r for r in document["results"]}
    items = {}
    for label in lengths:
        results_path = Path(path) / f"results_{label}.jsonl"
        lines = read_results(results_path, notes) if results_path.is_file() else []
        items[label] = {line["id"]: line for line in unique_items(lines)}
    mode = str(facts.get("mode") or (facts.get("config") or {}).get("mode") or "memagent")
    folder = Path(path).resolve().name
    default = mode if folder == mode else f"{mode}: {folder}"
    return EvalRun(Path(path), name or default, mode, facts, lengths, items)


def comparison_problems(runs: Sequence[EvalRun]) -> list[str]:
    """Why these runs cannot be compared: data (per shared length) or scoring rules that differ.
    A fact a run does not record (an older summary.json) is not compared."""
    problems = []
    for first, other in itertools.combinations(runs, 2):
        for label in sorted(first.lengths.keys() & other.lengths.keys(), key=report.length_order):
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


def all_lengths(runs: Sequence[EvalRun]) -> list[str]:
    return sorted({label for run in runs for label in run.lengths}, key=report.length_order)


@dataclass(frozen=True)
class PairedDifference:
    first: str
    second: str
    length: str  # a length label, or "all" (every shared question of every shared length)
    questions: int  # answered by both
    difference: float  # mean of first - second, x 100
    low: float  # 95% bootstrap interval, x 100
    high: float
    first_shared: float  # each run's mean on those shared questions, x 100
    second_shared: float
    first_all: float  # each run's own full-set figure (summary.json: failed items count 0), x 100
    second_all: float
    first_items: int  # the items of that full set
    second_items: int


def paired_difference(
    first: EvalRun, second: EvalRun, metric: str, *, seed: int = 0, resamples: int = 10_000
) -> list[PairedDifference]:
    """Per shared length, then over all of them: the mean per-question difference and its interval,
    each run's mean on the shared questions, and each run's full-set figure."""
    per_length: list[tuple[str, np.ndarray]] = []
    for label in sorted(first.items.keys() & second.items.keys(), key=report.length_order):
        a, b = first.items[label], second.items[label]
        both = sorted(i for i in a.keys() & b.keys() if a[i].get("status") == b[i].get("status") == COMPLETED)
        pairs = np.array([[float(a[i][metric]), float(b[i][metric])] for i in both]).reshape(-1, 2) * 100.0
        per_length.append((label, pairs))
    pooled = np.concatenate([d for _, d in per_length]) if per_length else np.zeros((0, 2))
    rng = np.random.default_rng(seed)
    differences = []
    for label, pairs in [*per_length, ("all", pooled)]:
        shared = pairs.mean(axis=0) if pairs.size else (float("nan"),) * 2
        differences.append(
            PairedDifference(
                first.name,
                second.name,
                label,
                len(pairs),
                *_bootstrap(pairs[:, 0] - pairs[:, 1], rng, resamples),
                float(shared[0]),
                float(shared[1]),
                *_full_set(first, second, None if label == "all" else label, metric),
            )
        )
    return differences


def _full_set(first: EvalRun, second: EvalRun, label: str | None, metric: str) -> tuple[float, float, int, int]:
    """Each run's figure over every item it holds at `label` (None: all its lengths), items-weighted."""
    figures = []
    for run in (first, second):
        chosen = [run.lengths[name] for name in ([label] if label else run.lengths)]
        items = sum(int(result["items"]) for result in chosen)
        total = sum(float(result[metric]) * int(result["items"]) for result in chosen)
        figures.append((total / items if items else float("nan"), items))
    return figures[0][0], figures[1][0], figures[0][1], figures[1][1]


def _bootstrap(differences: np.ndarray, rng: np.random.Generator, resamples: int) -> tuple[float, float, float]:
    """Mean and 95% percentile interval; resampled in blocks so 1,000 questions x 10,000 stay small."""
    if differences.size == 0:
        return (float("nan"),) * 3
    means = []
    for start in range(0, resamples, 1000):
        picks = rng.integers(0, differences.size, size=(min(1000, resamples - start), differences.size))
        means.append(differences[picks].mean(axis=1))
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return float(differences.mean()), float(low), float(high)


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


def compare_runs(request: ComparisonRequest) -> None:
    """Print the per-length table, the paired table, the questions the runs disagree on and the
    settings that differ; write the numbers and the plot. UsageError: fewer than two runs, labels
    that do not match them, a run that cannot be read or that a live run holds, runs without a
    question in common, or runs that cannot be compared (without `force`); nothing is written then."""
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
    request.output_dir.mkdir(parents=True, exist_ok=True)
    numbers = {
        "metric": metric,
        "runs": {run.name: str(run.path) for run in runs},
        "lengths": {run.name: report.length_numbers(run, metric) for run in runs},
        "pairs": [{k: _finite(v) for k, v in asdict(d).items()} for d in differences],
        "settings_that_differ": {
            name: dict(zip((r.name for r in runs), values, strict=True)) for name, values in differing.items()
        },
        "disagreements": [{"right": d.right, "wrong": d.wrong, "ids": d.ids} for d in found],
    }
    numbers_path, plot_path = request.output_dir / NUMBERS_NAME, request.output_dir / PLOT_NAME
    write_text_atomic(numbers_path, json.dumps(numbers, indent=2, allow_nan=False, default=str) + "\n")
    report.plot_runs(runs, metric, plot_path)
    # Printed once everything is written: a reader that stops early (| head) loses no file.
    print(report.length_table(runs, metric))
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
    if request.resamples <= 0:
        raise UsageError(f"--resamples {request.resamples} must be a positive integer")
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
