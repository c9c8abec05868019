"""RULER general results as the MemAgent paper shows them: a heat map of splits by lengths.

Each cell is a split's headline score at one length, x 100 (string_match_all, sub-EM for qa_*),
aggregated as every suite's cells are. The grid is printed as a table and drawn as
ruler_heatmap.png (rows: splits in RULER's order; columns: lengths); each drawn cell also names its
item count and, where any, its failed items, so a score over a few items or a flaky server reads as
such. With `--paper`, this run's average over its splits and each published row follow, at the
lengths the run has: a published row with no number at those lengths is not drawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.guarded_files import write_figure_png
from mem_agent.evaluation.cell_tables import aligned

HEATMAP_NAME = "ruler_heatmap.png"


def _grid(
    entries: Iterable[dict[str, Any]], paper: Sequence[dict[str, Any]] = ()
) -> tuple[list[str], list[int], dict[tuple[str, int], float], dict[tuple[str, int], str]]:
    """Rows (the splits run, in RULER's order; with `paper`, then this run's average over them and
    each published row with a number here), the lengths run, the cells that hold a number, and the
    counts under each of this run's cells."""
    entries = list(entries)
    cells = {(e["task"], int(e["length"])): float(e.get(e["metric"], 0.0)) for e in entries}
    counts = {
        (e["task"], int(e["length"])): f"n={e['items']}"
        + (f", {e['failed'] + e['missing']} failed" if e["failed"] + e["missing"] else "")
        for e in entries
    }
    rows = [split for split in RULER_SPLITS if any(s == split for s, _ in cells)]
    lengths = sorted({length for _, length in cells})
    if paper:
        average = f"average of {len(rows)} splits"
        for length in lengths:
            held = [cells[(split, length)] for split in rows if (split, length) in cells]
            cells[(average, length)] = sum(held) / len(held)
        rows.append(average)
        for entry in paper:
            for model, values in entry["rows"].items():
                name = f"{model} ({entry['version']})"
                found = {(name, int(label)): value for label, value in values.items() if value is not None}
                if any(length in lengths for _, length in found):
                    cells |= found
                    rows.append(name)
    return rows, lengths, cells, counts


def length_label(tokens: int) -> str:
    """A RULER length as the paper writes it: 8K, 128K, 1M (a length that is no multiple of 1024
    tokens as its number: 512, 1600)."""
    if tokens % 1048576 == 0:
        return f"{tokens // 1048576}M"
    return f"{tokens // 1024}K" if tokens % 1024 == 0 else str(tokens)


def format_heatmap_table(entries: Sequence[dict[str, Any]], paper: Sequence[dict[str, Any]] = ()) -> str:
    """The heat map as a text table: a row per split, a column per length, '-' where not run;
    `paper` (beside_run's ruler_average entries) adds this run's average and the published rows."""
    splits, lengths, cells, _ = _grid(entries, paper)
    header = ["split", *(length_label(n) for n in lengths)]
    rows = [[split, *(f"{cells[(split, n)]:.1f}" if (split, n) in cells else "-" for n in lengths)] for split in splits]
    return aligned([header, *rows])


def plot_heatmap(entries: Sequence[dict[str, Any]], path: Path, paper: Sequence[dict[str, Any]] = ()) -> None:
    """The heat map as a PNG: splits by lengths, each cell coloured and written with its score and
    counts (with `paper`, the rows format_heatmap_table adds, below the splits)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    splits, lengths, cells, counts = _grid(entries, paper)
    values = np.full((len(splits), len(lengths)), np.nan)
    for row, split in enumerate(splits):
        for column, length in enumerate(lengths):
            values[row, column] = cells.get((split, length), np.nan)
    width = max(1.3 * len(lengths) + 1.0 + 0.075 * max(len(name) for name in splits), 5.2)  # title and names fit
    figure, axes = plt.subplots(figsize=(width, 0.5 * len(splits) + 1.4), dpi=120)
    axes.imshow(values, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    for row, split in enumerate(splits):
        for column, length in enumerate(lengths):
            if not np.isnan(values[row, column]):
                count = counts.get((split, length))
                text = f"{values[row, column]:.1f}" + (f"\n{count}" if count else "")
                axes.text(column, row, text, ha="center", va="center", fontsize=7 if count else 8)
    if paper:  # the splits above, the averages (this run's, the paper's) below
        axes.axhline(sum(split in RULER_SPLITS for split in splits) - 0.5, color="white", linewidth=3)
    axes.set_xticks(range(len(lengths)), [length_label(n) for n in lengths])
    axes.set_yticks(range(len(splits)), splits)
    axes.set_xlabel("context length (tokens)")
    axes.set_title("RULER general tasks (score x 100)", wrap=True)
    figure.tight_layout()
    write_figure_png(figure, path)
