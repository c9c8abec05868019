"""RULER general results as the MemAgent paper shows them: a heat map of splits by lengths.

Each cell is a split's score at one length, x 100: the mean of the items' string_match_all shares
(sub-EM for qa_*), failed and missing items counting 0, as for RULER-HQA. summary.json keeps the
cells under "ruler" (one entry per file, beside RULER-HQA's "results"); the same grid is printed as
a table and drawn as ruler_heatmap.png (rows: splits in RULER's order; columns: lengths).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mem_agent.agent.ruler_scoring import QA_METRIC, RULER_SPLITS, metric_of
from mem_agent.common.atomic_files import write_figure_png
from mem_agent.evaluation.ruler_items import ruler_name

HEATMAP_NAME = "ruler_heatmap.png"
_QA_ONLY = ("em", "f1")
_DROPPED = ("strict", "recall_share", "recall_hit_rate")  # not a RULER general score


def ruler_entry(label: str, path: Path, summary: dict[str, Any]) -> dict[str, Any] | None:
    """summary.json's entry of one RULER general file; None for a RULER-HQA file."""
    name = ruler_name(path)
    if name is None:
        return None
    metric = metric_of(name.split)
    kept = {key: value for key, value in summary.items() if key not in _DROPPED}
    if metric != QA_METRIC:
        kept = {key: value for key, value in kept.items() if key not in _QA_ONLY}
    return {"label": label, "split": name.split, "length": name.length, "metric": metric, "file": str(path)} | kept


def with_earlier_entries(entries: Sequence[dict[str, Any]], output_dir: Path, earlier: Any) -> list[dict[str, Any]]:
    """`entries` and the earlier summary's other RULER cells (`earlier`: its "ruler") whose results
    file is still there."""
    labels = {entry["label"] for entry in entries}
    merged = list(entries)
    for entry in earlier if isinstance(earlier, list) else []:
        if not isinstance(entry, dict) or entry.get("label") in labels or entry.get("split") not in RULER_SPLITS:
            continue
        if (Path(output_dir) / f"results_{entry.get('label')}.jsonl").is_file():
            # read_summary names a cell's headline (sub_em for qa_*); this list names the split's metric
            merged.append(entry | {"metric": metric_of(entry["split"])})
    return sorted(merged, key=lambda e: (RULER_SPLITS.index(e["split"]), int(e["length"])))


def _grid(
    entries: Iterable[dict[str, Any]], paper: Sequence[dict[str, Any]] = ()
) -> tuple[list[str], list[int], dict[tuple[str, int], float]]:
    """Rows (the splits run, in RULER's order; with `paper`, then this run's average over them and
    each published row), the lengths run, and the cells that hold a number."""
    cells = {(e["split"], int(e["length"])): float(e["sub_em"]) for e in entries}
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
                cells |= {(name, int(label)): value for label, value in values.items() if value is not None}
                rows.append(name)
    return rows, lengths, cells


def length_label(tokens: int) -> str:
    """A RULER length as the paper writes it: 8K, 128K, 1M (a length that is no multiple of 1024
    tokens as its number: 512, 1600)."""
    if tokens % 1048576 == 0:
        return f"{tokens // 1048576}M"
    return f"{tokens // 1024}K" if tokens % 1024 == 0 else str(tokens)


def format_heatmap_table(entries: Sequence[dict[str, Any]], paper: Sequence[dict[str, Any]] = ()) -> str:
    """The heat map as a text table: a row per split, a column per length, '-' where not run;
    `paper` (beside_run's ruler_average entries) adds this run's average and the published rows."""
    splits, lengths, cells = _grid(entries, paper)
    header = ["split", *(length_label(n) for n in lengths)]
    rows = [[split, *(f"{cells[(split, n)]:.1f}" if (split, n) in cells else "-" for n in lengths)] for split in splits]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [" | ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def plot_heatmap(entries: Sequence[dict[str, Any]], path: Path, paper: Sequence[dict[str, Any]] = ()) -> None:
    """The heat map as a PNG: splits by lengths, each cell coloured and written with its score
    (with `paper`, the rows format_heatmap_table adds, below the splits)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    splits, lengths, cells = _grid(entries, paper)
    values = np.full((len(splits), len(lengths)), np.nan)
    for row, split in enumerate(splits):
        for column, length in enumerate(lengths):
            values[row, column] = cells.get((split, length), np.nan)
    width = 1.2 * len(lengths) + 1.0 + 0.075 * max(len(name) for name in splits)  # the row names fit
    figure, axes = plt.subplots(figsize=(width, 0.45 * len(splits) + 1.4), dpi=120)
    axes.imshow(values, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    for row in range(len(splits)):
        for column in range(len(lengths)):
            if not np.isnan(values[row, column]):
                axes.text(column, row, f"{values[row, column]:.1f}", ha="center", va="center", fontsize=8)
    if paper:  # the splits above, the averages (this run's, the paper's) below
        axes.axhline(sum(split in RULER_SPLITS for split in splits) - 0.5, color="white", linewidth=3)
    axes.set_xticks(range(len(lengths)), [length_label(n) for n in lengths])
    axes.set_yticks(range(len(splits)), splits)
    axes.set_xlabel("context length (tokens)")
    axes.set_title("RULER general tasks (score x 100)")
    figure.tight_layout()
    write_figure_png(figure, path)
