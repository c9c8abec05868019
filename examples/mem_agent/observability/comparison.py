"""Evaluation runs side by side: accuracy per length, one overlaid curve, and paired differences.

Two runs over the same questions differ by chance as well as by design (one sample per question
at temperature 0.7), so a gap between two means says little alone. For each pair of runs the
difference is taken question by question over the questions both answered (a failed item in
either run is left out of the pair, and the count says how many remain), and a 95% percentile
bootstrap interval over those questions (seeded: the same runs give the same interval) says how
far chance alone moves it.

Runs are compared only when they read the same data (each eval file's sha256, which the evaluator
records in summary.json) and scored answers by the same rules (summary.json's `scoring`); other
runs are refused in one line unless forced. The mode (memagent, rememr1, direct) labels each run.
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

from mem_agent.common.atomic_files import write_figure_png, write_text_atomic
from mem_agent.common.run_folder import folder_in_use
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.reporting import tokens_label
from mem_agent.evaluation.results import COMPLETED, read_results, unique_items
from mem_agent.evaluation.summary_file import SUMMARY_NAME, read_summary

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
        for label in sorted(first.lengths.keys() & other.lengths.keys(), key=_length_order):
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


def _length_order(label: str) -> tuple[int, str]:
    return (int(label), "") if label.isdigit() else (1 << 62, label)


def all_lengths(runs: Sequence[EvalRun]) -> list[str]:
    return sorted({label for run in runs for label in run.lengths}, key=_length_order)


@dataclass(frozen=True)
class PairedDifference:
    first: str
    second: str
    length: str  # a length label, or "all" (every shared question of every shared length)
    questions: int  # answered by both
    difference: float  # mean of first - second, x 100
    low: float  # 95% bootstrap interval, x 100
    high: float


def paired_difference(
    first: EvalRun, second: EvalRun, metric: str, *, seed: int = 0, resamples: int = 10_000
) -> list[PairedDifference]:
    """Per shared length, then over all of them: the mean per-question difference and its interval."""
    per_length: list[tuple[str, np.ndarray]] = []
    for label in sorted(first.items.keys() & second.items.keys(), key=_length_order):
        a, b = first.items[label], second.items[label]
        both = sorted(i for i in a.keys() & b.keys() if a[i].get("status") == b[i].get("status") == COMPLETED)
        per_length.append((label, np.array([float(a[i][metric]) - float(b[i][metric]) for i in both]) * 100.0))
    pooled = np.concatenate([d for _, d in per_length]) if per_length else np.zeros(0)
    rng = np.random.default_rng(seed)
    return [
        PairedDifference(first.name, second.name, label, int(d.size), *_bootstrap(d, rng, resamples))
        for label, d in [*per_length, ("all", pooled)]
    ]


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


def length_table(runs: Sequence[EvalRun], metric: str) -> str:
    """One row per length: its mean context tokens, then each run's metric x 100 and failed items."""
    header = ["docs", "ctx tokens", *(f"{run.name} {metric}" for run in runs)]
    rows = []
    for label in all_lengths(runs):
        tokens = next(float(r.lengths[label]["mean_context_tokens"]) for r in runs if label in r.lengths)
        cells = [label, f"{tokens:,.0f}"]
        for run in runs:
            result = run.lengths.get(label)
            failed = int(result.get("failed", 0)) + int(result.get("missing", 0)) if result else 0
            cells.append(f"{float(result[metric]):.1f}" + (f" ({failed} failed)" if failed else "") if result else "-")
        rows.append(cells)
    return _aligned([header, *rows])


def pairs_table(differences: Sequence[PairedDifference], metric: str) -> str:
    header = ["pair", "docs", "questions", f"{metric} difference", "95% interval"]
    rows = [
        [f"{d.first} - {d.second}", d.length, str(d.questions)]
        + (["-", "-"] if d.questions == 0 else [f"{d.difference:+.1f}", f"[{d.low:+.1f}, {d.high:+.1f}]"])
        for d in differences
    ]
    return _aligned([header, *rows])


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    lines = [" | ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def plot_runs(runs: Sequence[EvalRun], metric: str, path: Path) -> None:
    """Every run's metric against mean context tokens (log axis) on one plot, as the MemAgent paper
    sets the memory agent beside the same model reading directly."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    ticks: dict[float, str] = {}
    for run, marker in zip(runs, "osD^v<>phx*", strict=False):
        points = sorted(
            (max(float(r["mean_context_tokens"]), 1.0), float(r[metric]), k) for k, r in run.lengths.items()
        )
        axes.plot([x for x, _, _ in points], [y for _, y, _ in points], marker=marker, label=run.name)
        ticks.update({x: f"{label} docs" for x, _, label in points})
    axes.set_xscale("log")
    axes.set_xticks(list(ticks), [f"{tokens_label(x)}\n{label}" for x, label in ticks.items()], fontsize=8)
    axes.minorticks_off()
    axes.set_ylim(-3, 103)  # a run at 0 or 100 stays visible off the frame
    axes.set_xlabel("context length (tokens, log scale)")
    axes.set_ylabel(f"{metric} x 100")
    axes.set_title("Accuracy vs context length")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    write_figure_png(figure, path)


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
    """Print the per-length table and the paired differences, write the numbers and the plot.
    UsageError: fewer than two runs, labels that do not match them, a run that cannot be read, or
    runs that cannot be compared (without `force`); nothing is written then."""
    runs, problems, notes = _comparable_runs(request)
    for note in notes:
        print(f"note: {note}")
    for path in unchecked_data(runs):
        print(f"note: {path}/summary.json records no data sha256 (an older run): its data was not checked")
    for problem in problems:
        print(f"warning (--force): {problem}")
    metric = request.metric
    differences = [
        d
        for first, second in itertools.combinations(runs, 2)
        for d in paired_difference(first, second, metric, seed=request.seed, resamples=request.resamples)
    ]
    print(length_table(runs, metric))
    print()
    print(pairs_table(differences, metric))
    request.output_dir.mkdir(parents=True, exist_ok=True)
    numbers = {
        "metric": metric,
        "runs": {run.name: str(run.path) for run in runs},
        "pairs": [{k: _finite(v) for k, v in asdict(d).items()} for d in differences],
    }
    numbers_path, plot_path = request.output_dir / NUMBERS_NAME, request.output_dir / PLOT_NAME
    write_text_atomic(numbers_path, json.dumps(numbers, indent=2, allow_nan=False, default=str) + "\n")
    plot_runs(runs, metric, plot_path)
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
