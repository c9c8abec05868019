"""What `compare` shows of evaluation runs: a table per suite with each run's items and the
share of context it cut, the paired table, the questions on which the runs disagree, the settings
that differ, and the warnings about what is not paired (the plot: comparison_plot.py).

A mean over other questions is a different number: two runs are set side by side per cell with
their item counts, and the headline (`pairs_table`) is the paired difference on the items both
answered, with each run's mean on those same items and its own full-set mean beside it, so a run
holding a subset of the other's questions never passes for the better one. Each suite's table is
laid out as the suite is read: RULER-HQA per length (documents), RULER split by length (tokens),
LongBench per task, each headed with the metric its cells are compared by.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.direct_reading import DIRECT_MODE
from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.console import program_name
from mem_agent.evaluation.cell_scores import cell_metric, is_empty, item_score, suite_rank, suite_title
from mem_agent.evaluation.cell_tables import cut_label
from mem_agent.evaluation.model_facts import UNKNOWN, describe_model
from mem_agent.evaluation.results import COMPLETED
from mem_agent.settings.config import ANSWER_SHAPING_FIELDS

# Facts of summary.json's `run` that say what was run, compared one level deep; of `config` only
# the settings that shape an answer (a timeout or the retries never change one).
SETTING_FACTS = ("mode", "model", "tokenizer", "direct", "config", "sampling", "prompts", "scoring")


def length_order(label: str) -> tuple[int, str]:
    """Numbers in numeric order (50 before 100), other labels after them: item ids, lengths."""
    return (int(label), "") if label.isdigit() else (1 << 62, label)


def cell_order(cell: dict[str, Any]) -> tuple[int, str, int, str, int]:
    """Suites in the registry's order, RULER's splits in RULER's order, then length."""
    task = str(cell.get("task") or "")
    task_rank = RULER_SPLITS.index(task) if cell.get("suite") == "ruler" and task in RULER_SPLITS else len(RULER_SPLITS)
    length = cell.get("length")
    return (suite_rank(str(cell.get("suite"))), str(cell.get("suite")), task_rank, task, length or 0)


def ordered_labels(cells: dict[str, dict[str, Any]], labels: Iterable[str]) -> list[str]:
    return sorted(labels, key=lambda label: (cell_order(cells[label]), label))


def run_suites(run: Any) -> list[str]:
    return sorted({str(cell["suite"]) for cell in run.cells.values()}, key=lambda s: (suite_rank(s), s))


def suite_cells(run: Any, suite: str) -> list[dict[str, Any]]:
    return [run.cells[label] for label in ordered_labels(run.cells, run.cells) if run.cells[label]["suite"] == suite]


def cut_share(items: dict[str, dict[str, Any]]) -> float:
    """The share of the context tokens a run cut before reading (the direct baseline's window)."""
    context = sum(int(line.get("context_tokens") or 0) for line in items.values())
    dropped = sum(int(line.get("dropped_tokens") or 0) for line in items.values())
    return dropped / context if context else 0.0


def cell_numbers(run: Any, choice: str) -> dict[str, dict[str, Any]]:
    """compare.json's per-cell figures of one run: where the cell sits, the metric compared and its
    value x 100, the items, the share of context cut."""
    numbers = {}
    for label in ordered_labels(run.cells, run.cells):
        cell = run.cells[label]
        metric = cell_metric(cell, choice)
        numbers[label] = {key: cell.get(key) for key in ("suite", "task", "length")} | {
            "metric": metric,
            "value": float(cell.get(metric) or 0.0),
            "items": int(cell["items"]),
            "cut_share": cut_share(run.items.get(label, {})),
        }
    return numbers


# The columns that name a cell in each suite's table: (heading, cell field).
_ROW_NAMES = {"ruler_hqa": (("docs", "length"),), "ruler": (("split", "task"), ("tokens", "length"))}
_TASK_ONLY = (("task", "task"),)


def suite_tables(runs: Sequence[Any], choice: str) -> list[str]:
    """One table per suite any run holds: its title and metric, then a row per cell with the mean
    context tokens and, per run, the metric x 100 (failed items), the items and the share cut."""
    suites = sorted({s for run in runs for s in run_suites(run)}, key=lambda s: (suite_rank(s), s))
    tables = []
    for suite in suites:
        cells = {label: c for run in runs for label, c in run.cells.items() if c["suite"] == suite}
        metrics = sorted({cell_metric(cell, choice) for cell in cells.values()})
        tables.append(f"{suite_title(suite)} ({', '.join(metrics)} x 100)\n{_suite_table(runs, suite, cells, choice)}")
    return tables


def _suite_table(runs: Sequence[Any], suite: str, cells: dict[str, dict[str, Any]], choice: str) -> str:
    names = _ROW_NAMES.get(suite, _TASK_ONLY)
    cutting = [run for run in runs if any(cut_share(items) for items in run.items.values())]
    header = [heading for heading, _ in names] + ["ctx tokens"]
    for run in runs:
        header += [run.name, f"{run.name} items"] + ([f"{run.name} cut"] if run in cutting else [])
    rows = []
    for label in ordered_labels(cells, cells):
        held = [run.cells[label] for run in runs if label in run.cells]
        tokens = sorted({f"{float(cell.get('mean_context_tokens', 0)):,.0f}" for cell in held})
        row = [str(cells[label].get(field)) for _, field in names] + [" / ".join(tokens)]
        for run in runs:
            cell = run.cells.get(label)
            if cell is None:
                row += ["-", "0"] + (["-"] if run in cutting else [])
                continue
            failed = int(cell.get("failed", 0)) + int(cell.get("missing", 0))
            value = float(cell.get(cell_metric(cell, choice)) or 0.0)
            row += [f"{value:.1f}" + (f" ({failed} failed)" if failed else ""), str(cell["items"])]
            if run in cutting:
                row.append(cut_label(cut_share(run.items.get(label, {}))))
        rows.append(row)
    return aligned([header, *rows])


def pairs_table(differences: Sequence[Any], choice: str) -> str:
    """Per pair of runs, a row per shared cell and one per suite (its shared items pooled)."""
    header = ["pair", "suite", "cell", "metric", "shared", "first", "second", "difference", "95% interval"]
    header += ["first, full set", "second, full set"]
    rows = []
    for d in differences:
        row = [f"{d.first} - {d.second}", suite_title(d.suite), d.label, d.metric, str(d.questions)]
        if d.questions == 0:
            row += ["-", "-", "-", "-"]
        else:
            row += [f"{d.first_shared:.1f}", f"{d.second_shared:.1f}", f"{d.difference:+.1f}"]
            row.append(f"[{d.low:+.1f}, {d.high:+.1f}]")
        row += [f"{d.first_all:.1f} of {d.first_items}", f"{d.second_all:.1f} of {d.second_items}"]
        rows.append(row)
    return aligned([header, *rows])


def aligned(rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    lines = [" | ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def question_set_warnings(runs: Sequence[Any]) -> list[str]:
    """A run given twice, a suite one run holds and another not, cells one run has and another
    not, and cells whose item sets differ."""
    warnings = []
    for first, second in itertools.combinations(runs, 2):
        if first.path.resolve() == second.path.resolve():
            warnings.append(f"{first.path} is given twice: it is compared with itself")
            continue
        suites = set(run_suites(first)) & set(run_suites(second))
        for run, other in ((first, second), (second, first)):
            for suite in run_suites(run):
                if suite not in suites:
                    warnings.append(f"{suite}: only in {run.name}; not paired with {other.name}")
            only = [label for label in ordered_labels(run.cells, run.items.keys() - other.items.keys())]
            only = [label for label in only if run.cells[label]["suite"] in suites]
            if only:
                warnings.append(f"cells {', '.join(only)} only in {run.name}: not in the paired rows")
        for label in ordered_labels(first.cells, first.items.keys() & second.items.keys()):
            a, b = first.items[label].keys(), second.items[label].keys()
            if a != b:
                warnings.append(
                    f"item sets differ at {label}: {first.name} has {len(a)}, {second.name} {len(b)},"
                    f" {len(a & b)} shared; the paired rows compare the shared ones only"
                )
    return warnings


def unshared_pairs(runs: Sequence[Any]) -> list[str]:
    """Pairs of runs without a single item in common: there is nothing to pair."""
    return [
        f"{first.name} ({', '.join(ordered_labels(first.cells, first.items)) or 'no cells'}) and"
        f" {second.name} ({', '.join(ordered_labels(second.cells, second.items)) or 'no cells'})"
        for first, second in itertools.combinations(runs, 2)
        if not any(
            first.items[label].keys() & second.items[label].keys() for label in first.items.keys() & second.items.keys()
        )
    ]


def differing_settings(runs: Sequence[Any]) -> dict[str, list[str]]:
    """Setting -> its value in each run (as text, "unset" where a run does not record it), for
    every setting of SETTING_FACTS whose values are not all the same."""
    differing = {}
    for key in SETTING_FACTS:
        values = [run.facts.get(key) for run in runs]
        if key == "model":  # one line per run: its name and fingerprint, "unknown" where not recorded
            columns = {key: [describe_model(v) for v in values]}
        elif all(isinstance(v, dict) or v is None for v in values) and any(isinstance(v, dict) for v in values):
            names = sorted({name for v in values if isinstance(v, dict) for name in v})
            if key == "config":
                names = [name for name in names if name in ANSWER_SHAPING_FIELDS]
            columns = {
                f"{key}.{name}": [
                    _text((v or {}).get(name), _unused(run, key)) for run, v in zip(runs, values, strict=True)
                ]
                for name in names
            }
        else:
            columns = {key: [_text(v) for v in values]}
        differing |= {name: shown for name, shown in columns.items() if len(set(shown)) > 1}
    return differing


def _unused(run: Any, key: str) -> bool:
    """A setting a direct run does not record is one it never read (reporting.recorded_settings)."""
    return key == "config" and run.mode == DIRECT_MODE


NOT_USED = "not used"
SAME_SETTINGS = "mode, model, sampling, answer-shaping settings, prompts"


def _text(value: Any, unused: bool = False) -> str:
    if value is None:
        return NOT_USED if unused else "unset"
    return '""' if value == "" else str(value)


def settings_lines(runs: Sequence[Any], differing: dict[str, list[str]]) -> list[str]:
    """A line per setting that differs; the memory agent's settings that differ only because a
    direct run never read them are one line, with the value the other runs share."""
    unknown = [run.name for run in runs if describe_model(run.facts.get("model")) == UNKNOWN]
    # A model no run recorded is not one they share: it is said apart, never folded into "the same".
    model_line = [f"model: {UNKNOWN} in {', '.join(unknown)} (not recorded)"] if unknown else []
    if not differing:
        same = "mode, sampling, answer-shaping settings, prompts" if unknown else SAME_SETTINGS
        return [f"settings: the same in every run ({same})", *model_line]
    lines = ["settings that differ:"]
    unused: dict[tuple[str, ...], list[str]] = {}
    for name, values in differing.items():
        used = {value for value in values if value != NOT_USED}
        if NOT_USED in values and len(used) == 1:
            skipping = tuple(run.name for run, value in zip(runs, values, strict=True) if value == NOT_USED)
            unused.setdefault(skipping, []).append(f"{name.removeprefix('config.')}={used.pop()}")
            continue
        lines.append(f"  {name}: " + " | ".join(f"{run.name}={value}" for run, value in zip(runs, values, strict=True)))
    for skipping, settings in unused.items():
        lines.append(f"  not used by direct run {', '.join(skipping)}; the others: {', '.join(settings)}")
    return lines + ([] if "model" in differing else model_line)


@dataclass(frozen=True)
class Disagreement:
    """Items `right` scored above `wrong` (wrong, partly right, or failed), by cell."""

    right: str
    wrong: str
    wrong_path: Path
    ids: dict[str, list[str]]  # cell label -> item ids, in numeric order

    @property
    def count(self) -> int:
        return sum(len(ids) for ids in self.ids.values())

    def view_command(self) -> str:
        """The command that opens a page of exactly these questions in the run that got them wrong."""
        targets = [f"{label}:{item}" for label, ids in self.ids.items() for item in ids]
        return f"{program_name('mem_agent.view')} {shlex.quote(str(self.wrong_path))} --ids {' '.join(targets)}"


def disagreements(first: Any, second: Any, choice: str) -> list[Disagreement]:
    """Both directions: the items first scored above second (second wrong, partly right or failed),
    then the reverse; by each cell's metric."""
    found = []
    for right, wrong in ((first, second), (second, first)):
        ids: dict[str, list[str]] = {}
        for label in ordered_labels(right.cells, right.items.keys() & wrong.items.keys()):
            metric = cell_metric(right.cells[label], choice)
            a, b = right.items[label], wrong.items[label]
            chosen = [i for i in a.keys() & b.keys() if _score(a[i], metric) > max(_score(b[i], metric), 0.0)]
            if chosen:
                ids[label] = sorted(chosen, key=length_order)
        found.append(Disagreement(right.name, wrong.name, wrong.path, ids))
    return found


def _score(line: dict[str, Any], metric: str) -> float:
    """An item's score; -1 for one that failed (below any answer), 0 for an empty answer."""
    if line.get("status") != COMPLETED:
        return -1.0
    return 0.0 if is_empty(line) else item_score(line, metric)


def disagreement_lines(found: Sequence[Disagreement]) -> list[str]:
    lines = []
    for d in found:
        lines.append(f"{d.right} scored above {d.wrong}: {d.count} item(s)")
        if d.count:
            lines.append(f"  {d.view_command()}")
    return lines
