"""compare.png: every run on one panel per suite, as the MemAgent paper sets the memory agent
beside the same model reading directly.

A suite whose cells have lengths (RULER-HQA: documents, RULER: tokens) is drawn against context
length on a log axis; RULER's splits at one length are averaged without weights, as the paper's RULER
average is, and the point says over how many splits. A suite of tasks without lengths (LongBench)
is drawn as bars per task. Every point or bar says how many items it holds, and for a run that cut
its context, how much of it was cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import write_figure_png
from mem_agent.evaluation.accuracy_plot import finish_accuracy_axes, tokens_label
from mem_agent.evaluation.cell_scores import cell_metric, suite_title
from mem_agent.evaluation.cell_tables import cut_label
from mem_agent.evaluation.ruler_report import length_label
from mem_agent.observability.comparison_report import cut_share, run_suites, suite_cells

MARKERS = "osD^v<>phx*"


def plot_runs(runs: Sequence[Any], choice: str, path: Path) -> None:
    """One panel per suite any run holds, side by side, every run on each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    suites = list(dict.fromkeys(suite for run in runs for suite in run_suites(run)))
    figure, panels = plt.subplots(1, len(suites), figsize=(6.4 * len(suites), 4.2), dpi=120, squeeze=False)
    for axes, suite in zip(panels[0], suites, strict=True):
        cells = [(run, suite_cells(run, suite)) for run in runs]
        metrics = sorted({cell_metric(c, choice) for _, held in cells for c in held})
        ylabel = f"{' / '.join(metrics)} x 100"
        if any(c.get("length") is None for _, held in cells for c in held):
            _bars(axes, cells, choice, ylabel, suite_title(suite))
        else:
            _lines(axes, cells, choice, ylabel, suite)
    figure.tight_layout()
    write_figure_png(figure, path)


def _points(run: Any, cells: list[dict[str, Any]], choice: str, suite: str) -> list[tuple[float, float, str, int]]:
    """(x, score, note, length) per length: RULER-HQA at its mean context tokens, RULER at its length in
    tokens with the unweighted mean over the splits run there."""
    by_length: dict[int, list[dict[str, Any]]] = {}
    for cell in cells:
        by_length.setdefault(int(cell["length"]), []).append(cell)
    points = []
    for length, held in sorted(by_length.items()):
        score = sum(float(c.get(cell_metric(c, choice)) or 0.0) for c in held) / len(held)
        items = sum(int(c["items"]) for c in held)
        cut = cut_share({i: line for c in held for i, line in run.items.get(c["label"], {}).items()})
        note = f"n={items}" + (f", {len(held)} splits" if suite == "ruler" else "")
        note += f", cut {cut_label(cut)}" if cut else ""
        x = float(length) if suite == "ruler" else max(float(held[0].get("mean_context_tokens") or 0.0), 1.0)
        points.append((x, score, note, length))
    return points


def _lines(axes: Any, cells: Sequence[tuple[Any, list[dict[str, Any]]]], choice: str, ylabel: str, suite: str) -> None:
    ticks: dict[float, str] = {}
    right_end = max((p[0] for run, held in cells for p in _points(run, held, choice, suite)), default=1.0)
    for index, ((run, held), marker) in enumerate(zip(cells, MARKERS, strict=False)):
        points = _points(run, held, choice, suite)
        if not points:
            continue
        lines = axes.plot([p[0] for p in points], [p[1] for p in points], marker=marker, label=run.name)
        for x, y, note, length in points:
            rise = 5 + 9 * index  # each run's notes on their own line
            offset = (4, -rise - 6) if y > 90 else (4, rise)  # inside the frame at the top
            last = x >= right_end
            xytext = (-offset[0], offset[1]) if last else offset
            axes.annotate(
                note, (x, y), textcoords="offset points", xytext=xytext, ha="right" if last else "left",
                fontsize=7, color=lines[0].get_color(),
            )  # fmt: skip
            ticks[x] = length_label(length) if suite == "ruler" else f"{tokens_label(x)}\n{length} docs"
    title = suite_title(suite) + (" (mean over splits per length)" if suite == "ruler" else "")
    xlabel = "context length (tokens, log scale)"
    finish_accuracy_axes(axes, ticks, ylabel=ylabel, title=title, xlabel=xlabel, tick_size=8, legend_size=8)


def _bars(axes: Any, cells: Sequence[tuple[Any, list[dict[str, Any]]]], choice: str, ylabel: str, title: str) -> None:
    """A group of bars per task, a bar per run, each marked with its item count."""
    tasks = list(dict.fromkeys(str(c["task"]) for _, held in cells for c in held))
    width = 0.8 / max(len(cells), 1)
    for index, (run, held) in enumerate(cells):
        by_task = {str(c["task"]): c for c in held}
        shown = [(t, by_task[task]) for t, task in enumerate(tasks) if task in by_task]
        xs = [t + (index - (len(cells) - 1) / 2) * width for t, _ in shown]
        values = [float(cell.get(cell_metric(cell, choice)) or 0.0) for _, cell in shown]
        bars = axes.bar(xs, values, width, label=run.name)
        notes = [f"n={cell['items']}" for _, cell in shown]
        axes.bar_label(bars, notes, fontsize=7, padding=2)
    axes.set_xticks(range(len(tasks)), tasks, fontsize=8, rotation=20)
    axes.set_ylim(0, 110)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend(fontsize=8)
