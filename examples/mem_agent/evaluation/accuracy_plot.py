"""The accuracy-vs-length axes that every plot of runs shares: the evaluator's own, compare's and
compare --paper's.

Context length runs on a log axis of tokens, the score from -3 to 103 so that a run at 0 or 100
keeps its markers whole, and a paper's published rows are drawn dashed at the tokens a run
measured for each length (a paper gives lengths, not the tokens of our tokenizer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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
