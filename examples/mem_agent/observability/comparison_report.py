"""What `compare` shows of evaluation runs: the per-length table with each run's items and the
share of context it cut, the paired table, the questions on which the runs disagree, the settings
that differ, the warnings about what is not paired, and the overlaid plot.

A mean over other questions is a different number: two runs are set side by side per length
with their item counts, and the headline (`pairs_table`) is the paired difference on the
questions both answered, with each run's mean on those same questions and its own full-set mean
beside it, so a run holding a subset of the other's questions never passes for the better one.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.direct_reading import DIRECT_MODE
from mem_agent.common.atomic_files import write_figure_png
from mem_agent.common.console import program_name
from mem_agent.evaluation.accuracy_plot import finish_accuracy_axes, tokens_label
from mem_agent.evaluation.model_facts import UNKNOWN, describe_model
from mem_agent.evaluation.reporting import cut_label
from mem_agent.evaluation.results import COMPLETED
from mem_agent.settings.config import ANSWER_SHAPING_FIELDS

# Facts of summary.json's `run` that say what was run, compared one level deep; of `config` only
# the settings that shape an answer (a timeout or the retries never change one).
SETTING_FACTS = ("mode", "model", "tokenizer", "direct", "config", "sampling", "prompts", "scoring")


def length_order(label: str) -> tuple[int, str]:
    """Document counts as numbers (50 before 100), other labels (RULER's split_length) after them."""
    return (int(label), "") if label.isdigit() else (1 << 62, label)


def cut_share(items: dict[str, dict[str, Any]]) -> float:
    """The share of the context tokens a run cut before reading (the direct baseline's window)."""
    context = sum(int(line.get("context_tokens") or 0) for line in items.values())
    dropped = sum(int(line.get("dropped_tokens") or 0) for line in items.values())
    return dropped / context if context else 0.0


def length_numbers(run: Any, metric: str) -> dict[str, dict[str, Any]]:
    """compare.json's per-length figures of one run: items, the metric x 100, the share of context cut."""
    return {
        label: {
            "items": result["items"],
            metric: float(result[metric]),
            "cut_share": cut_share(run.items.get(label, {})),
        }
        for label, result in sorted(run.lengths.items(), key=lambda pair: length_order(pair[0]))
    }


def length_table(runs: Sequence[Any], metric: str) -> str:
    """One row per length: mean context tokens, then per run its metric x 100 (failed items), its
    item count, and, for a run that cut any context, the share it cut."""
    cutting = [run for run in runs if any(cut_share(items) for items in run.items.values())]
    header = ["docs", "ctx tokens"]
    for run in runs:
        header += [f"{run.name} {metric}", f"{run.name} items"] + ([f"{run.name} cut"] if run in cutting else [])
    rows = []
    for label in sorted({label for run in runs for label in run.lengths}, key=length_order):
        tokens = sorted({f"{float(r.lengths[label]['mean_context_tokens']):,.0f}" for r in runs if label in r.lengths})
        cells = [label, " / ".join(tokens)]
        for run in runs:
            result = run.lengths.get(label)
            if result is None:
                cells += ["-", "0"] + (["-"] if run in cutting else [])
                continue
            failed = int(result.get("failed", 0)) + int(result.get("missing", 0))
            cells += [f"{float(result[metric]):.1f}" + (f" ({failed} failed)" if failed else ""), str(result["items"])]
            if run in cutting:
                cells.append(cut_label(cut_share(run.items.get(label, {}))))
        rows.append(cells)
    return aligned([header, *rows])


def pairs_table(differences: Sequence[Any], metric: str) -> str:
    header = ["pair", "docs", "shared", "first", "second", f"{metric} difference", "95% interval"]
    header += ["first, full set", "second, full set"]
    rows = []
    for d in differences:
        row = [f"{d.first} - {d.second}", d.length, str(d.questions)]
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
    """A run given twice, lengths one run has and another not, and lengths whose question sets differ."""
    warnings = []
    for first, second in itertools.combinations(runs, 2):
        if first.path.resolve() == second.path.resolve():
            warnings.append(f"{first.path} is given twice: it is compared with itself")
            continue
        for run, other in ((first, second), (second, first)):
            only = sorted(run.items.keys() - other.items.keys(), key=length_order)
            if only:
                warnings.append(f"lengths {', '.join(only)} only in {run.name}: not in the paired rows")
        for label in sorted(first.items.keys() & second.items.keys(), key=length_order):
            a, b = first.items[label].keys(), second.items[label].keys()
            if a != b:
                warnings.append(
                    f"question sets differ at {label} docs: {first.name} has {len(a)}, {second.name} {len(b)},"
                    f" {len(a & b)} shared; the paired rows compare the shared ones only"
                )
    return warnings


def unshared_pairs(runs: Sequence[Any]) -> list[str]:
    """Pairs of runs without a single question in common: there is nothing to pair."""
    return [
        f"{first.name} ({', '.join(sorted(first.items, key=length_order)) or 'no lengths'}) and"
        f" {second.name} ({', '.join(sorted(second.items, key=length_order)) or 'no lengths'})"
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
    """Questions `right` answered right and `wrong` did not (wrong, or failed), by length."""

    right: str
    wrong: str
    wrong_path: Path
    ids: dict[str, list[str]]  # length label -> item ids, in numeric order

    @property
    def count(self) -> int:
        return sum(len(ids) for ids in self.ids.values())

    def view_command(self) -> str:
        """The command that opens a page of exactly these questions in the run that got them wrong."""
        targets = [f"{label}:{item}" for label, ids in self.ids.items() for item in ids]
        return f"{program_name('mem_agent.view')} {shlex.quote(str(self.wrong_path))} --ids {' '.join(targets)}"


def disagreements(first: Any, second: Any, metric: str) -> list[Disagreement]:
    """Both directions: first right and second wrong, then second right and first wrong."""
    found = []
    for right, wrong in ((first, second), (second, first)):
        ids: dict[str, list[str]] = {}
        for label in sorted(right.items.keys() & wrong.items.keys(), key=length_order):
            a, b = right.items[label], wrong.items[label]
            chosen = [i for i in a.keys() & b.keys() if _is_right(a[i], metric) and not _is_right(b[i], metric)]
            if chosen:
                ids[label] = sorted(chosen, key=length_order)
        found.append(Disagreement(right.name, wrong.name, wrong.path, ids))
    return found


def _is_right(line: dict[str, Any], metric: str) -> bool:
    try:
        return line.get("status") == COMPLETED and float(line.get(metric, 0.0)) > 0
    except (TypeError, ValueError):
        return False


def disagreement_lines(found: Sequence[Disagreement]) -> list[str]:
    lines = []
    for d in found:
        lines.append(f"{d.right} right, {d.wrong} wrong: {d.count} question(s)")
        if d.count:
            lines.append(f"  {d.view_command()}")
    return lines


def plot_runs(runs: Sequence[Any], metric: str, path: Path) -> None:
    """Every run's metric against mean context tokens (log axis) on one plot, as the MemAgent paper
    sets the memory agent beside the same model reading directly; each point says how many items
    it holds and, for a run that cut its context, how much of it was cut."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    ticks: dict[float, str] = {}
    right_end = max((float(r["mean_context_tokens"]) for run in runs for r in run.lengths.values()), default=1.0)
    for index, (run, marker) in enumerate(zip(runs, "osD^v<>phx*", strict=False)):
        points = sorted(
            (max(float(r["mean_context_tokens"]), 1.0), float(r[metric]), k) for k, r in run.lengths.items()
        )
        lines = axes.plot([x for x, _, _ in points], [y for _, y, _ in points], marker=marker, label=run.name)
        for x, y, label in points:
            cut = cut_share(run.items.get(label, {}))
            note = f"n={run.lengths[label]['items']}" + (f", cut {cut_label(cut)}" if cut else "")
            rise = 5 + 9 * index  # each run's notes on their own line
            offset = (4, -rise - 6) if y > 90 else (4, rise)  # inside the frame at the top
            last = x >= right_end
            axes.annotate(
                note,
                (x, y),
                textcoords="offset points",
                xytext=(-offset[0], offset[1]) if last else offset,
                ha="right" if last else "left",
                fontsize=7,
                color=lines[0].get_color(),
            )
        ticks.update({x: f"{tokens_label(x)}\n{label} docs" for x, _, label in points})
    title = "Accuracy vs context length (n: items; cut: context the run cut)"
    finish_accuracy_axes(axes, ticks, ylabel=f"{metric} x 100", title=title, tick_size=8, legend_size=8)
    figure.tight_layout()
    write_figure_png(figure, path)
