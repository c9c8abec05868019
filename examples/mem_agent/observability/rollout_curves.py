"""A training run's curves over rollouts, from its trajectory records, drawn by matplotlib as SVG.

The package draws every plot with matplotlib (the evaluator's accuracy plot, compare, the training
summary); the viewer's curves are one figure saved as SVG and put inside the page, so the page
still needs no script library, no network and no image file. Text stays text in the SVG
(`svg.fonttype: none`), and the figure carries no date, so the same run draws the same page.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from statistics import fmean
from typing import Any

from mem_agent.observability.trajectory_records import TrajectoryRecord

CURVES = (
    "reward (mean)",
    "accuracy (strict)",
    "turns per trajectory",
    "memory tokens (mean)",
    "memory turns cut (share)",
)
SHARES = {"accuracy (strict)", "memory turns cut (share)"}  # drawn on a fixed 0..1 axis
COLUMNS = 3
_COLOUR = "#0969da"


def _real(value: Any) -> float | None:
    """A number read back from a record, or None for anything else (a hand-edited file)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mean(values: Iterable[Any]) -> float:
    numbers = [number for number in map(_real, values) if number is not None]
    return fmean(numbers) if numbers else 0.0


def rollout_curves(records: Iterable[TrajectoryRecord]) -> dict[str, tuple[list[float], list[float]]]:
    """Per rollout, over the records kept from it: mean reward, strict accuracy, turns per
    trajectory, memory tokens per memory turn, and the share of memory turns cut by max_tokens."""
    by_rollout: dict[int, list[TrajectoryRecord]] = {}
    for record in records:
        if isinstance(record.rollout_id, int) and not isinstance(record.rollout_id, bool):
            by_rollout.setdefault(record.rollout_id, []).append(record)
    curves: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in CURVES}
    for rollout, group in sorted(by_rollout.items()):
        memories = [turn for record in group for turn in record.turns if turn.kind == "memory"]
        values = (
            _mean(r.reward if r.reward is not None else r.scores.get("strict", 0.0) for r in group),
            _mean(r.scores.get("strict", 0.0) for r in group),
            fmean(len(r.turns) for r in group),
            _mean(t.memory_tokens for t in memories),
            _mean(float(t.cut) for t in memories if isinstance(t.cut, bool)),
        )
        for name, value in zip(CURVES, values, strict=True):
            curves[name][0].append(float(rollout))
            curves[name][1].append(float(value))
    return curves


def curves_svg(curves: dict[str, tuple[list[float], list[float]]]) -> str:
    """The curves as one SVG element, a small panel each (a dot per rollout: one point is still seen)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    rows = -(-len(curves) // COLUMNS)
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mem-agent", "font.size": 8}):
        figure, axes_grid = plt.subplots(rows, COLUMNS, figsize=(10.5, 1.85 * rows), squeeze=False)
        panels = list(axes_grid.flat)
        for axes, (name, (xs, ys)) in zip(panels, curves.items(), strict=False):
            axes.plot(xs, ys, marker="o", markersize=3, linewidth=1.5, color=_COLOUR)
            axes.set_title(name, loc="left", fontsize=9, fontweight="bold")
            axes.set_xlabel("rollout")
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            if name in SHARES:
                axes.set_ylim(0.0, 1.0)
            else:
                axes.set_ylim(bottom=min(0.0, *ys) if ys else 0.0)
            axes.grid(alpha=0.3)
            axes.spines[["top", "right"]].set_visible(False)
        for axes in panels[len(curves) :]:
            axes.set_visible(False)
        figure.tight_layout()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
        plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # the element alone: no XML declaration or doctype inside HTML
