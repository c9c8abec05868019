"""The scores a cell's mean is made of, and the intervals around such means: what compare's
paired bootstrap and the paper comparison both read, so the two agree on what an item scored.

A cell is one (suite, task, length) of a run (summary.json's `results`). An item's score is its
results line's value of the cell's metric, a share in [0, 1]; a RULER line written before
`string_match_all` had its own name held it under `sub_em`, so that is read in its place. The
cell's mean counts a failed or missing item as 0 and leaves out a completed item whose answer was
empty (MemAgent's aggregation), unless the cell counted it (`scored == items`: the
`--empty-as-wrong` option), when it is 0 as well.

Intervals: a 95% percentile bootstrap over items (numpy, seeded), stratified per cell for a mean of
cell means (the paper's RULER average over tasks), and Wilson's score interval for a published mean
of 0/1 items whose count is known.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mem_agent.evaluation.results import COMPLETED, is_empty
from mem_agent.evaluation.results import metric_value as item_score
from mem_agent.evaluation.suites import suite_rank, suite_title
from mem_agent.evaluation.suites.ruler_hqa import METRICS as HQA_METRICS  # what --metric may name

__all__ = ["HQA_METRICS", "is_empty", "item_score", "suite_rank", "suite_title"]
HEADLINE = "headline"  # each cell's own metric (summary.json's `metric`)


def cell_metric(cell: Mapping[str, Any], choice: str) -> str:
    """The metric a cell is compared by: a RULER-HQA metric named by --metric applies to RULER-HQA
    cells (the only suite that holds all four); every other cell, and every cell under `headline`,
    uses its own headline."""
    if choice in HQA_METRICS and cell.get("suite") == "ruler_hqa":
        return choice
    return str(cell.get("metric") or "sub_em")


def counted_scores(cell: Mapping[str, Any], lines: Iterable[Mapping[str, Any]], metric: str) -> np.ndarray:
    """The scores (x 100) the cell's mean counts, one per item: completed items by their score,
    failed ones and the missing (the cell's `missing`) as 0, empty answers left out unless the
    cell counted them (`scored` equal to `items`)."""
    empty_counts = int(cell.get("scored", -1)) == int(cell.get("items", 0))
    scores = []
    for line in lines:
        if line.get("status") != COMPLETED:
            scores.append(0.0)
        elif is_empty(line):
            if empty_counts:
                scores.append(0.0)
        else:
            scores.append(100.0 * item_score(line, metric))
    scores += [0.0] * int(cell.get("missing", 0))
    return np.array(scores, dtype=float)


def bootstrap_mean(values: np.ndarray, rng: np.random.Generator, resamples: int) -> tuple[float, float, float]:
    """Mean and 95% percentile interval; resampled in blocks so 1,000 items x 10,000 stay small."""
    if values.size == 0:
        return (float("nan"),) * 3
    means = []
    for start in range(0, resamples, 1000):
        picks = rng.integers(0, values.size, size=(min(1000, resamples - start), values.size))
        means.append(values[picks].mean(axis=1))
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return float(values.mean()), float(low), float(high)


def stratified_bootstrap(
    groups: Sequence[np.ndarray], rng: np.random.Generator, resamples: int
) -> tuple[float, float, float]:
    """The unweighted mean of the groups' means (RULER's average over tasks) and its 95% interval,
    each group resampled within itself, so every resample holds every task with its own count."""
    groups = [group for group in groups if group.size]
    if not groups:
        return (float("nan"),) * 3
    totals = np.zeros(resamples)
    for group in groups:
        for start in range(0, resamples, 1000):
            size = min(1000, resamples - start)
            picks = rng.integers(0, group.size, size=(size, group.size))
            totals[start : start + size] += group[picks].mean(axis=1)
    means = totals / len(groups)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(np.mean([group.mean() for group in groups])), float(low), float(high)


def wilson_interval(percent: float, count: int) -> tuple[float, float]:
    """Wilson's 95% score interval (x 100) of a mean of `count` items scored 0 or 1."""
    z = 1.959963984540054
    share = percent / 100.0
    centre = (share + z * z / (2 * count)) / (1 + z * z / count)
    half = z * math.sqrt(share * (1 - share) / count + z * z / (4 * count * count)) / (1 + z * z / count)
    return 100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half)
