"""Small line charts as inline SVG, so a page that shows training curves needs no script library,
no network and no image files: the numbers are drawn where the page is written."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

WIDTH, HEIGHT = 320, 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 46, 10, 24, 30


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value / 1000:.3g}K"
    return f"{value:.3g}"


def line_chart(
    title: str, xs: Sequence[float], ys: Sequence[float], *, y_range: tuple[float, float] | None = None
) -> str:
    """One series as an SVG line with dots (a dot per point: a rollout with one sample is still seen);
    `y_range` fixes the axis (shares in [0, 1]), else it spans the data."""
    escaped = html.escape(title)
    if not xs:
        return f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escaped}"></svg>'
    low, high = y_range if y_range else (min(0.0, min(ys)), max(ys))
    if high <= low:
        high = low + 1.0
    x_low, x_high = min(xs), max(xs)
    x_span = (x_high - x_low) or 1.0
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + (x - x_low) / x_span * plot_w if x_high > x_low else _LEFT + plot_w / 2

    def py(y: float) -> float:
        return _TOP + plot_h - (y - low) / (high - low) * plot_h

    out = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escaped}">',
        f'<text x="{_LEFT}" y="15" class="title">{escaped}</text>',
    ]
    for tick in _ticks(low, high):
        y = py(tick)
        out.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{_LEFT - 4}" y="{y + 3:.1f}" class="tick" text-anchor="end">{_label(tick)}</text>')
    for tick in _ticks(x_low, x_high) if x_high > x_low else [x_low]:
        if tick == int(tick):
            out.append(
                f'<text x="{px(tick):.1f}" y="{HEIGHT - 14}" class="tick" text-anchor="middle">{int(tick)}</text>'
            )
    out.append(f'<text x="{_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 2}" class="axis" text-anchor="middle">rollout</text>')
    points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
    out.append(f'<polyline points="{points}" class="series"/>')
    for x, y in zip(xs, ys, strict=True):
        out.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" class="dot"><title>{int(x)}: {y:.3g}</title></circle>'
        )
    out.append("</svg>")
    return "".join(out)
