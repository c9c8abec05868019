"""The accuracy-vs-length axes that every plot of runs shares (the evaluator's own, compare's and
compare --paper's), RULER-HQA's curve, and the bars of a suite without lengths.

Context length runs on a log axis of tokens, the score from -3 to 103 so that a run at 0 or 100
keeps its markers whole, and a paper's published rows are drawn dashed at the tokens a run
measured for each length (a paper gives lengths, not the tokens of our tokenizer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import write_figure_png

DEFAULT_X_LABEL = "context length (tokens, log scale)"


def tokens_label(tokens: float) -> str:
    """A token count as an axis label: 910, 9K, 1.2M."""
    if tokens >= 1e6:
        return f"{tokens / 1e6:.1f}M"
    return f"{tokens / 1e3:.0f}K" if tokens >= 1e3 else f"{tokens:.0f}"


def draw_published(
    axes: Any,
    rows: Iterable[tuple[str, Mapping[str, float | None]]],
    tokens: Mapping[str, float],
    *,
    first_colour: int | None = None,
) -> None:
    """Each (name, number per length label) dashed, a point wherever the paper has a number and
    `tokens` places the label; a row with no such point is not drawn. Colours follow the axes'
    cycle, or start at cycle colour `first_colour` (when a run took C0's place in a colour of its own)."""
    for index, (name, values) in enumerate(rows):
        points = sorted((tokens[label], y) for label, y in values.items() if y is not None and label in tokens)
        if not points:
            continue
        colour = {} if first_colour is None else {"color": f"C{(first_colour + index) % 10}"}
        axes.plot([x for x, _ in points], [y for _, y in points], linestyle="--", marker="x", label=name, **colour)


def finish_accuracy_axes(
    axes: Any,
    ticks: Mapping[float, str],
    *,
    ylabel: str,
    title: str,
    xlabel: str = DEFAULT_X_LABEL,
    tick_size: float | None = None,
    legend_size: float | None = None,
) -> None:
    """The log token axis with a tick (and its text) per length drawn, the score axis, the grid;
    a legend when `legend_size` is given."""
    axes.set_xscale("log")
    axes.set_xticks(list(ticks), list(ticks.values()), **({} if tick_size is None else {"fontsize": tick_size}))
    axes.minorticks_off()
    axes.set_ylim(-3, 103)  # a run at 0 or 100 keeps its markers whole
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    if legend_size is not None:
        axes.legend(fontsize=legend_size)


def plot_accuracy(cells: Sequence[dict[str, Any]], path: Path, paper: Sequence[dict[str, Any]] = ()) -> None:
    """RULER-HQA's curve: sub_em against mean context tokens on a log axis, each point labelled with
    its doc count and, where the run cut its contexts, the share cut; `paper` (beside_run's sub_em
    entries) dashed, each published number at this run's tokens for that document count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mem_agent.evaluation.cell_tables import cut_label

    points = sorted((float(c["mean_context_tokens"]), float(c["sub_em"]), str(c["label"])) for c in cells)
    cuts = {str(c["label"]): float(c.get("cut_share") or 0.0) for c in cells}
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


def plot_bars(cells: Sequence[dict[str, Any]], path: Path, title: str) -> None:
    """One bar per cell (a suite without lengths: LongBench's tasks), its headline metric x 100,
    written on the bar with the cell's item count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [str(cell["task"]) for cell in cells]
    values = [float(cell.get(cell["metric"], 0.0)) for cell in cells]
    figure, axes = plt.subplots(figsize=(6.4, 0.5 * len(cells) + 1.4), dpi=120)
    axes.barh(range(len(cells)), values, color="#1f6feb")
    for row, (value, cell) in enumerate(zip(values, cells, strict=True)):
        axes.text(min(value, 100.0) + 1, row, f"{value:.1f} (n={cell['items']})", va="center", fontsize=8)
    axes.set_yticks(range(len(cells)), names)
    axes.invert_yaxis()
    axes.set_xlim(0, 115)
    axes.set_xlabel(f"{cells[0]['metric']} x 100" if cells else "score x 100")
    axes.set_title(title)
    figure.tight_layout()
    write_figure_png(figure, path)
