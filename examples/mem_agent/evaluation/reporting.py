"""What an evaluation shows people: a per-length table, summary.json, and the accuracy curve.

The table and the plot read like the MemAgent paper's: sub_em x 100 per context length, with
EM, F1 and the strict training reward beside it, and the count of failed items (which are scored
as wrong) so that a flaky server can never pass for a weak model or the reverse.

A rerun into the same folder reuses finished results. summary.json therefore keeps the facts of
every run that produced results (`run`: the latest, `earlier_runs`: the ones before, oldest
first), and a run that reused everything adds none: its zero requests never replace the facts of
the run that did the work. Results are reused only when the settings that shape an answer are
those of the earlier runs (`reuse_problems`); otherwise the evaluator refuses before it starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.direct_reading import DIRECT_MODE
from mem_agent.agent.prompt_sets import prompt_facts
from mem_agent.agent.records import SamplingParams
from mem_agent.agent.scoring import ReportingRules
from mem_agent.common.atomic_files import write_figure_png, write_text_atomic
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.accuracy_plot import draw_published, finish_accuracy_axes, tokens_label
from mem_agent.evaluation.paper_beside import beside_run
from mem_agent.evaluation.paper_tables import Chosen
from mem_agent.evaluation.results import read_results, unique_items
from mem_agent.evaluation.ruler_items import ruler_name
from mem_agent.evaluation.ruler_report import (
    HEATMAP_NAME,
    format_heatmap_table,
    plot_heatmap,
    ruler_entry,
    with_earlier_entries,
)
from mem_agent.evaluation.summary_file import SUMMARY_NAME, current_cells, read_summary
from mem_agent.settings.config import ANSWER_SHAPING_FIELDS, MemAgentConfig
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3

PLOT_NAME = "accuracy_vs_length.png"


@dataclass(frozen=True)
class EvalFileReport:
    label: str
    path: Path
    summary: dict[str, Any]


def format_table(reports: Sequence[EvalFileReport]) -> str:
    """The per-length table; a run that cut its contexts (the direct baseline's window) gets a
    column with the share of the context's tokens it cut, so a cut context never reads as read."""
    cutting = any(report.summary.get("cut_share") for report in reports)
    header = ["docs", "items", "failed", "ctx tokens", *(["cut"] if cutting else []), "sub_em", "em", "f1", "strict"]
    rows = [
        [
            report.label,
            str(report.summary["items"]),
            str(report.summary["failed"] + report.summary["missing"]),
            f"{report.summary['mean_context_tokens']:,.0f}",
            *([cut_label(report.summary.get("cut_share", 0.0))] if cutting else []),
            *(f"{report.summary[metric]:.1f}" for metric in ("sub_em", "em", "f1", "strict")),
        ]
        for report in reports
    ]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [" | ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def cut_label(share: float) -> str:
    """The share of a context cut, as tables show it: 57%, <1% for a sliver, 0% for none."""
    if not share:
        return "0%"
    return "<1%" if share < 0.005 else f"{100 * share:.0f}%"


# Facts that decide what an answer is: results made under other values cannot be mixed with new ones.
ANSWER_SHAPING = (
    "config", "sampling", "tokenizer", "data", "data_sha256", "corpus_sha256", "prompts", "mode", "direct"
)  # fmt: skip
# Of a fact that holds many values, only these are compared: summary.json records every setting
# under "config", but a timeout, the retries or the wire protocol never change a finished result
# (config.Setting.shapes_answers), so raising them to rerun failed items must not be refused.
COMPARED_VALUES: dict[str, frozenset[str]] = {"config": ANSWER_SHAPING_FIELDS}


class ReuseError(ValueError):
    """Earlier results that cannot be reused; the message names the folder and the way out."""


def read_earlier_runs(output_dir: Path) -> list[dict[str, Any]] | None:
    """Facts of the runs whose results `output_dir` holds, oldest first; None without a summary.json.

    Also reads the older layout, whose single `run` held every config value as a string.
    """
    path = Path(output_dir) / SUMMARY_NAME
    try:
        document = read_summary(path)
    except FileNotFoundError:
        return None
    except UsageError as error:
        raise ReuseError(f"{error}: move it aside, or pass --force to start over") from None
    runs = [*document["earlier_runs"], document["run"]]
    return [run for run in runs if isinstance(run, dict)]


# The answer-shaping settings the long-context baseline reads (agent/direct_reading.py: the answer's
# token limit and thinking; scoring: the reporting rules); the memory agent's others are not used.
DIRECT_SETTINGS = frozenset({"max_final_tokens", "thinking", "fold_unicode", "sub_em_guard"})


def recorded_settings(config: MemAgentConfig, mode: str) -> dict[str, Any]:
    """The settings a run of `mode` used: every one for the memory agent; for `direct`, of the
    answer-shaping ones only DIRECT_SETTINGS (a chunk size or a memory limit it never read would
    read as if used)."""
    recorded = config.recorded()
    if mode != DIRECT_MODE:
        return recorded
    return {k: v for k, v in recorded.items() if k in DIRECT_SETTINGS or k not in ANSWER_SHAPING_FIELDS}


def settings_facts(
    tokenizer: str, config: MemAgentConfig, sampling: SamplingParams, prompts: dict[str, Any], mode: str = ""
) -> dict[str, Any]:
    """What shapes the answers, as typed JSON values (enums by the names the settings use); every
    setting the mode used is recorded, and `reuse_problems` compares those that shape answers.
    `prompts` are the facts of the prompts the run uses (built-in, or the template file's path,
    sha256 and source, from the read that built them)."""
    return {
        "config": recorded_settings(config, mode),
        "scoring": asdict(ReportingRules.of(config)),  # official HotpotQA unless opted out
        "sampling": asdict(sampling),
        "tokenizer": _tokenizer_fact(tokenizer),
        "prompts": prompts,
    }


def _tokenizer_fact(tokenizer: str) -> str:
    """The tokenizer as summary.json names it: a folder by its absolute path, whether or not it exists yet."""
    return tokenizer if tokenizer == BUNDLED_QWEN3 else str(Path(tokenizer).expanduser().resolve())


def facts_known_without_a_server(
    tokenizer: str, config: MemAgentConfig, sampling: SamplingParams, mode: str = ""
) -> dict[str, Any]:
    """The answer-shaping facts the evaluator's `--check` knows before the data, the model and the
    server exist: all but the data's item counts. The tokenizer is left out when it is the bundled
    fallback, since the local stack sets MEM_MODEL_PATH (the real run's --tokenizer) only when it starts."""
    facts = settings_facts(tokenizer, config, sampling, prompt_facts(config), mode)
    if tokenizer == BUNDLED_QWEN3:
        del facts["tokenizer"]
    return facts


def reuse_problems(earlier: dict[str, Any], now: dict[str, Any], keys: Sequence[str] = ANSWER_SHAPING) -> list[str]:
    """`config.chunk_tokens 5000 -> 4000` for each answer-shaping fact that changed (one level deep;
    of "config" only the answer-shaping settings). Values are compared as text, so the older
    all-strings layout compares equal to typed values; a fact missing on either side is not compared."""
    changes = []
    for key in keys:
        old, new = earlier.get(key), now.get(key)
        if old is None or new is None:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            names = old.keys() & new.keys()
            for name in sorted(names & COMPARED_VALUES[key] if key in COMPARED_VALUES else names):
                if _shown(old[name]) != _shown(new[name]):
                    changes.append(f"{key}.{name} {_shown(old[name])} -> {_shown(new[name])}")
        elif _shown(old) != _shown(new):
            changes.append(f"{key} {_shown(old)} -> {_shown(new)}")
    return changes


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value)


def check_reuse(output_dir: Path, facts: dict[str, Any], keys: Sequence[str] = ANSWER_SHAPING) -> list[dict[str, Any]]:
    """The facts of the earlier runs whose results `output_dir` holds, once they are known to have
    made their answers the way this run will (`facts`); a ReuseError naming every change otherwise."""
    if not any(path.stat().st_size for path in Path(output_dir).glob("results_*.jsonl")):
        return []
    earlier = read_earlier_runs(output_dir)
    if earlier is None:
        print(f"note: {output_dir} holds results but no summary.json (an interrupted run?): their settings are unknown")
        return []
    changes = reuse_problems(earlier[-1], facts, keys) if earlier else []
    if changes:
        raise ReuseError(
            f"{output_dir} holds results made with other settings ({'; '.join(changes)}):"
            " pass --force to redo them, or choose another --output-dir"
        )
    return earlier


def write_reports(
    reports: Sequence[EvalFileReport],
    output_dir: Path,
    runs: Sequence[dict[str, Any]],
    *,
    plot: bool = True,
    keep_other_labels: bool = False,
    papers: Sequence[Chosen] = (),
) -> None:
    """The table on stdout, then summary.json and the plot; `runs` are the facts of every run that
    produced these results, oldest first (the last is the latest). With `keep_other_labels` the
    lengths an earlier run evaluated into this folder and this one did not stay in both (their
    results files are still there, made with the settings `runs` records). `papers` (--paper) are
    set beside the run: in summary.json's 'paper', on the accuracy plot (sub_em tables) and under
    the heat map (RULER averages)."""
    ruler = [entry for r in reports if (entry := ruler_entry(r.label, r.path, r.summary)) is not None]
    reports = [r for r in reports if ruler_name(r.path) is None]
    if keep_other_labels:
        cells = _earlier_summary(output_dir).get("results") or []  # every suite's, read_summary's shape
        reports = _with_other_labels(reports, output_dir, [c for c in cells if c.get("suite") == "ruler_hqa"])
        ruler = with_earlier_entries(ruler, output_dir, [c for c in cells if c.get("suite") == "ruler"])
    if reports:
        print(format_table(reports), flush=True)
    hqa_cells = [{"label": r.label, "file": str(r.path), **r.summary} for r in reports]
    beside = beside_run(papers, current_cells(hqa_cells, ruler), _lines_in(output_dir), runs[-1] if runs else None)
    hqa_paper = [entry for entry in beside if entry["metric"] == "sub_em"]
    ruler_paper = [entry for entry in beside if entry["metric"] == "ruler_average"]
    if ruler:
        print(format_heatmap_table(ruler, ruler_paper), flush=True)
    for entry in beside:
        if not entry["columns"]:
            print(f"--paper {entry['table']}: none of its lengths is in this run, so it is not drawn")
    document = {
        "suites": [suite for suite, held in (("hqa", reports), ("ruler", ruler)) if held],
        "results": [{"label": r.label, "file": str(r.path), **r.summary} for r in reports],
        "ruler": ruler,
        "paper": beside,
        "run": runs[-1] if runs else None,
        "earlier_runs": list(runs[:-1]),
    }
    write_text_atomic(output_dir / SUMMARY_NAME, json.dumps(document, indent=2) + "\n")
    plots = [name for name, held in ((PLOT_NAME, reports), (HEATMAP_NAME, ruler)) if plot and held]
    if plot and reports:
        plot_accuracy(reports, output_dir / PLOT_NAME, hqa_paper)
    if plot and ruler:
        plot_heatmap(ruler, output_dir / HEATMAP_NAME, ruler_paper)
    print(f"summary: {output_dir / SUMMARY_NAME}" + "".join(f"  plot: {output_dir / name}" for name in plots))


def _lines_in(output_dir: Path) -> Callable[[str], list[dict[str, Any]]]:
    """A cell label -> its results lines as the report counts them (none for a file not there)."""

    def lines(label: str) -> list[dict[str, Any]]:
        path = Path(output_dir) / f"results_{label}.jsonl"
        return unique_items(read_results(path)) if path.is_file() else []

    return lines


def _earlier_summary(output_dir: Path) -> dict[str, Any]:
    """The folder's summary.json as the one reader checks it; empty when there is none to build on."""
    try:
        return read_summary(Path(output_dir) / SUMMARY_NAME)
    except (OSError, UsageError):
        return {}


def _with_other_labels(reports: Sequence[EvalFileReport], output_dir: Path, earlier: Any) -> list[EvalFileReport]:
    """`reports` and those of the earlier summary's other lengths (`earlier`: its "results") whose
    results file is still there, ordered by document count."""
    labels = {report.label for report in reports}
    merged = list(reports)
    for entry in earlier if isinstance(earlier, list) else []:
        if not isinstance(entry, dict) or entry.get("label") in labels:
            continue
        label = str(entry.get("label"))
        if (Path(output_dir) / f"results_{label}.jsonl").is_file():
            summary = {key: value for key, value in entry.items() if key not in ("label", "file")}
            merged.append(EvalFileReport(label, Path(str(entry.get("file", ""))), summary))
    return sorted(merged, key=lambda r: (0, int(r.label), "") if r.label.isdigit() else (1, 0, r.label))


def plot_accuracy(reports: Sequence[EvalFileReport], path: Path, paper: Sequence[dict[str, Any]] = ()) -> None:
    """sub_em against mean context tokens on a log axis, each point labelled with its doc count and,
    where the run cut its contexts, the share cut; `paper` (beside_run's sub_em entries) dashed, each
    published number at this run's tokens for that document count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = sorted((r.summary["mean_context_tokens"], r.summary["sub_em"], r.label) for r in reports)
    cuts = {r.label: float(r.summary.get("cut_share") or 0.0) for r in reports}
    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    xs = [max(x, 1.0) for x, _, _ in points]
    axes.plot(xs, [y for _, y, _ in points], marker="o", color="#1f6feb", label="this run")
    for x, (_, y, label) in zip(xs, points, strict=True):
        note = f"{label} docs" + (f", {cut_label(cuts[label])} cut" if cuts[label] else "")
        axes.annotate(note, (x, y), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    at = {label: x for x, (_, _, label) in zip(xs, points, strict=True)}
    published = [(f"{model} ({entry['version']})", row) for entry in paper for model, row in entry["rows"].items()]
    draw_published(axes, published, at, first_colour=1)  # C0 is like this run's blue
    finish_accuracy_axes(
        axes,
        {x: tokens_label(x) for x in xs},
        ylabel="sub_em x 100",
        title="Accuracy vs context length (RULER-HQA protocol)",
        legend_size=7 if paper else None,
    )
    figure.tight_layout()
    write_figure_png(figure, path)
