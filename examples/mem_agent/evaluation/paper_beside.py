"""A run set beside a published table: per column the run's number with its items and 95% interval,
the paper's number with its items and interval where they can be known, the difference, and
whether the run read the paper's files. The evaluator's `--paper` (summary.json's `paper`) and
`compare --paper` both write this one entry, so the two never disagree.

The run's side of a column: a RULER-HQA table's at the run's cell of that document count (the
cell's sub_em; the interval a 95% percentile bootstrap over the items that mean counts); a RULER
average table's at that token length, the unweighted mean of the run's RULER splits there, as the
paper averages its tasks, with the interval of a bootstrap that resamples each split within itself.
The paper's side: its items per column (paper_tables.json, null where the paper does not say) and,
for a mean of items scored 0 or 1 of known count, Wilson's 95% interval; otherwise none ("n/a").
Files: the run's recorded `data_sha256` for the column against the published file's, where a
stored copy gives it ("same" / "different"), else "unknown" ("unrecorded": the run kept none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mem_agent.evaluation.cell_scores import bootstrap_mean, counted_scores, stratified_bootstrap, wilson_interval
from mem_agent.evaluation.paper_tables import Chosen, PaperTable
from mem_agent.evaluation.suites import SUITES

LinesOf = Callable[[str], Iterable[Mapping[str, Any]]]  # a cell label -> its results lines (unique_items)
SEED, RESAMPLES = 0, 10_000
INTERVAL = "95% percentile bootstrap over the run's items (seed {seed}, {resamples} resamples)"


def beside_run(
    chosen: Sequence[Chosen],
    cells: Sequence[Mapping[str, Any]],
    lines_of: LinesOf,
    facts: Mapping[str, Any] | None,
    *,
    seed: int = SEED,
    resamples: int = RESAMPLES,
) -> list[dict[str, Any]]:
    """summary.json's 'paper': each chosen table at the columns this run has (`cells`: summary.json's
    results, every suite), its rows' numbers, and beside them the run's and the paper's items and
    intervals, the differences and the files' check."""
    rng = np.random.default_rng(seed)
    entries = []
    for table, rows in chosen:
        run = _run_columns(table, cells, lines_of, facts or {}, rng, resamples)
        labels = [label for label in table.columns if label in run]
        entries.append(
            {
                "table": table.name,
                "cited": table.cited,
                "version": f"arXiv {table.arxiv}{table.version}",
                "source": table.source,
                "metric": table.metric,
                "columns": {label: table.columns[label] for label in labels},
                "rows": {row.model: {label: row.values.get(label) for label in labels} for row in rows},
                "run": {label: run[label] for label in labels},
                "interval": INTERVAL.format(seed=seed, resamples=resamples),
                "paper_items": table.items_per_column,
                "paper_items_source": table.items_source,
                "paper_intervals": {
                    row.model: {x: _paper_interval(table, row.values.get(x)) for x in labels} for row in rows
                },
                "differences": {
                    row.model: {x: _difference(run[x]["value"], row.values.get(x)) for x in labels} for row in rows
                },
            }
        )
    return entries


def _run_columns(
    table: PaperTable,
    cells: Sequence[Mapping[str, Any]],
    lines_of: LinesOf,
    facts: Mapping[str, Any],
    rng: np.random.Generator,
    resamples: int,
) -> dict[str, dict[str, Any]]:
    """Column label -> the run's value, items, interval, tasks averaged, x (tokens) and files."""
    suite = next((s.name for s in SUITES if s.paper_metric == table.metric), None)
    by_column: dict[str, list[Mapping[str, Any]]] = {}
    for cell in cells:
        if cell.get("suite") == suite and str(cell.get("length")) in table.columns:
            by_column.setdefault(str(cell["length"]), []).append(cell)
    columns = {}
    for label, held in by_column.items():
        metric = "sub_em" if suite == "ruler_hqa" else None
        groups = [counted_scores(c, lines_of(str(c["label"])), metric or str(c["metric"])) for c in held]
        if suite == "ruler_hqa":
            value = float(held[0].get("sub_em") or 0.0)
            _, low, high = bootstrap_mean(groups[0], rng, resamples)
            tokens = float(held[0].get("mean_context_tokens") or 0.0)
        else:
            value = sum(float(c.get(str(c["metric"])) or 0.0) for c in held) / len(held)
            _, low, high = stratified_bootstrap(groups, rng, resamples)
            tokens = float(label)
        columns[label] = {
            "value": value,
            "items": int(sum(group.size for group in groups)),
            "low": None if np.isnan(low) else low,
            "high": None if np.isnan(high) else high,
            "tasks": len(held),
            "tokens": tokens,
            "files": _files(table, facts, [str(c["label"]) for c in held], label),
        }
    return columns


def _files(table: PaperTable, facts: Mapping[str, Any], labels: Sequence[str], column: str) -> str:
    """Whether the run read the paper's files for a column: same, different, unknown, unrecorded."""
    published = (table.data_sha256 or {}).get(column)
    if not published or len(labels) != 1:
        return "unknown"
    recorded = (facts.get("data_sha256") or {}).get(labels[0])
    if not recorded:
        return "unrecorded"
    return "same" if recorded == published else "different"


def _paper_interval(table: PaperTable, value: float | None) -> list[float] | None:
    if value is None or not table.binary_items or not table.items_per_column:
        return None
    return list(wilson_interval(value, table.items_per_column))


def _difference(ours: float, published: float | None) -> float | None:
    return None if published is None else round(ours - published, 4)
