"""The text tables of an evaluation's cells, as the console and the docs show them.

One layout for every suite without a grid of its own: a row per cell (RULER-HQA's lengths,
LongBench's tasks) with its items, failed, empty answers where any, mean context tokens, the share
of context cut where any was (the direct baseline's window, so a cut context never reads as read),
and each metric x 100, headline first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def cut_label(share: float) -> str:
    """The share of a context cut, as tables show it: 57%, <1% for a sliver, 0% for none."""
    if not share:
        return "0%"
    return "<1%" if share < 0.005 else f"{100 * share:.0f}%"


def aligned(rows: Sequence[Sequence[str]]) -> str:
    """Rows right-aligned in columns, a rule under the first."""
    widths = [max(len(cell) for cell in column) for column in zip(*rows, strict=True)]
    lines = [" | ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def cells_table(cells: Sequence[dict[str, Any]], first: str, metrics: Sequence[str]) -> str:
    """A row per cell: its label under `first` (docs, task), counts, tokens, then `metrics` x 100."""
    cutting = any(cell.get("cut_share") for cell in cells)
    emptying = any(cell.get("empty") for cell in cells)
    header = [first, "items", "failed", *(["empty"] if emptying else []), "ctx tokens", *(["cut"] if cutting else [])]
    rows = [[*header, *metrics]]
    for cell in cells:
        rows.append(
            [
                str(cell["task"] if first == "task" else cell["label"]),
                str(cell["items"]),
                str(cell["failed"] + cell["missing"]),
                *([str(cell.get("empty", 0))] if emptying else []),
                f"{cell['mean_context_tokens']:,.0f}",
                *([cut_label(cell.get("cut_share", 0.0))] if cutting else []),
                *(f"{cell.get(metric, 0.0):.1f}" for metric in metrics),
            ]
        )
    return aligned(rows)
