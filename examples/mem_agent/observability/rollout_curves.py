"""A training run's curves over rollouts, from its per-rollout metrics, drawn by matplotlib as SVG.

The numbers are the run's own: `trajectories/metrics.jsonl`, which the rollout log hook appends
once per rollout, counting every trajectory (observability/metrics.py). The trajectory records are
never used for them: they are a sample picked half right and half wrong on purpose, so a run at
5% or 90% accuracy would draw as 50% from them.

The package draws every plot with matplotlib (the evaluator's accuracy plot, compare, the training
summary); the viewer's curves are one figure saved as SVG and put inside the page, so the page
still needs no script library, no network and no image file. Text stays text in the SVG
(`svg.fonttype: none`), and the figure carries no date, so the same run draws the same page.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any

# Panel title -> the metric of metrics.jsonl it draws.
CURVES = {
    "reward (mean)": "reward/mean",
    "accuracy (strict)": "accuracy/strict",
    "turns per trajectory": "turns/mean",
    "memory tokens (mean)": "memory_tokens/mean",
    "memory turns cut (share)": "memory/cut_share",
    "groups without reward contrast (share)": "zero_contrast/group_share",
}
SHARES = {"accuracy (strict)", "memory turns cut (share)", "groups without reward contrast (share)"}  # 0..1 axis
COLUMNS = 3
_COLOUR = "#0969da"


def _real(value: Any) -> float | None:
    """A number read back from a file, or None for anything else (a hand-edited file)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def rollout_curves(entries: Iterable[Mapping[str, Any]]) -> dict[str, tuple[list[float], list[float]]]:
    """Per rollout (metrics.jsonl's rollout lines, in rollout order), each curve's value; a rollout
    that did not log a metric (an older line, no memory turn) leaves a gap in that curve only."""
    curves: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in CURVES}
    for entry in entries:
        rollout = _real(entry.get("rollout_id"))
        if rollout is None:
            continue
        for name, key in CURVES.items():
            value = _real(entry.get(key))
            if value is not None:
                curves[name][0].append(rollout)
                curves[name][1].append(value)
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
                axes.set_ylim(-0.03, 1.03)
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
