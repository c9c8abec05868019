"""An evaluation page's tables from summary.json's cells: one table per suite, each in its own
shape and naming its own metric.

- RULER-HQA: a row per length (documents), its items, failures, context tokens and every metric;
- RULER: a split by length grid, each cell the split's headline score (string_match_all; sub_em
  for qa_1, qa_2) with its items and failures, and a column naming each row's metric;
- LongBench QA: a row per task with its qa_f1;
- a suite this page does not know: a row per cell with the headline its cell names.

Every value is text here (a field that should hold a number but does not is shown as what it
holds); the template writes the markup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.evaluation.reporting import cut_label
from mem_agent.evaluation.ruler_report import length_label
from mem_agent.evaluation.suites import SUITES, suite_title
from mem_agent.evaluation.suites.ruler_hqa import METRICS as HQA_METRICS
from mem_agent.observability.eval_sections import cells_of
from mem_agent.observability.page_parts import number


@dataclass(frozen=True)
class TableCell:
    text: str
    note: str = ""  # smaller, under the text: a grid cell's items and failures


@dataclass(frozen=True)
class SuiteTable:
    suite: str
    title: str
    header: list[str]
    rows: list[list[TableCell]] = field(default_factory=list)


def suite_tables(summary: Any) -> list[SuiteTable]:
    """One table per suite summary.json holds, in the registry's order (suites it does not know last)."""
    by_suite: dict[str, list[dict[str, Any]]] = {}
    for cell in cells_of(summary):
        by_suite.setdefault(str(cell["suite"]), []).append(cell)
    known = [suite.name for suite in SUITES]
    order = [*(suite for suite in known if suite in by_suite), *(s for s in by_suite if s not in known)]
    return [_BUILDERS.get(suite, _other_table)(suite, by_suite[suite]) for suite in order]


def _failed(cell: dict[str, Any]) -> str:
    """Failed and missing items together (both count 0 in the mean), as the evaluator's table."""
    counts = [cell.get("failed", 0), cell.get("missing", 0)]
    return str(sum(counts)) if all(type(n) is int for n in counts) else " + ".join(map(str, counts))


def _cut(value: Any) -> str:
    return cut_label(value) if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def _cuts(cells: list[dict[str, Any]]) -> bool:
    """Whether a cell cut its context (the direct baseline): then the table has a cut column."""
    return any(isinstance(c.get("cut_share"), int | float) and c["cut_share"] for c in cells)


def _empties(cells: list[dict[str, Any]]) -> bool:
    return any(isinstance(c.get("empty"), int) and c["empty"] for c in cells)


def _counted(
    cells: list[dict[str, Any]], first: str, name: Callable[[dict[str, Any]], str], scores: list[str]
) -> tuple[list[str], list[list[TableCell]]]:
    """The header and rows every per-row table shares: name, items, failed, [empty], tokens, [cut],
    then `scores` (a metric's name; "" for each cell's own headline)."""
    cutting, empties = _cuts(cells), _empties(cells)
    header = [first, "items", "failed", *(["empty"] if empties else []), "ctx tokens", *(["cut"] if cutting else [])]
    rows = [
        [
            TableCell(name(cell)),
            TableCell(str(cell.get("items", ""))),
            TableCell(_failed(cell)),
            *([TableCell(str(cell.get("empty", 0)))] if empties else []),
            TableCell(number(cell.get("mean_context_tokens", 0), ",.0f")),
            *([TableCell(_cut(cell.get("cut_share", 0)))] if cutting else []),
            *(TableCell(number(cell.get(metric or str(cell["metric"]), 0), ".1f")) for metric in scores),
        ]
        for cell in cells
    ]
    return header, rows


def _hqa_table(suite: str, cells: list[dict[str, Any]]) -> SuiteTable:
    header, rows = _counted(cells, "docs", lambda cell: str(cell.get("label", "")), list(HQA_METRICS))
    title = f"{suite_title(suite)} · Accuracy by length (sub_em x 100)"
    return SuiteTable(suite, title, [*header, *HQA_METRICS], rows)


def _per_task_table(suite: str, cells: list[dict[str, Any]]) -> SuiteTable:
    metric = str(cells[0]["metric"])
    header, rows = _counted(cells, "task", lambda cell: str(cell["task"]), [""])
    title = f"{suite_title(suite)} · {metric} x 100 per task"
    return SuiteTable(suite, title, [*header, metric], rows)


def _ruler_table(suite: str, cells: list[dict[str, Any]]) -> SuiteTable:
    grid = {(str(cell["task"]), _length(cell)): cell for cell in cells}
    lengths = sorted({length for _, length in grid})
    splits = sorted({split for split, _ in grid}, key=lambda s: (RULER_SPLITS.index(s) if s in RULER_SPLITS else 99, s))
    rows = []
    for split in splits:
        metric = next(str(grid[(s, n)]["metric"]) for s, n in grid if s == split)
        row = [TableCell(split), TableCell(metric)]
        for length in lengths:
            cell = grid.get((split, length))
            row.append(TableCell("-") if cell is None else _grid_cell(cell))
        rows.append(row)
    header = ["split", "metric", *(length_label(n) if n >= 0 else "?" for n in lengths)]
    title = f"{suite_title(suite)} · score x 100 by split and length (tokens)"
    return SuiteTable(suite, title, header, rows)


def _length(cell: dict[str, Any]) -> int:
    length = cell.get("length")
    return length if isinstance(length, int) and not isinstance(length, bool) else -1


def _grid_cell(cell: dict[str, Any]) -> TableCell:
    empty = cell.get("empty")
    items = cell.get("items", "?")
    note = f"{items} item{'' if items == 1 else 's'} · {_failed(cell)} failed"
    note += f" · {empty} empty" if isinstance(empty, int) and empty else ""
    return TableCell(number(cell.get(str(cell["metric"]), 0), ".1f"), note)


def _other_table(suite: str, cells: list[dict[str, Any]]) -> SuiteTable:
    """A suite this page does not know: each cell's label, counts and the headline it names."""
    header, rows = _counted(cells, "label", lambda cell: f"{cell.get('label', '')} ({cell['metric']})", [""])
    return SuiteTable(suite, f"{suite} · headline score x 100 per cell", [*header, "score"], rows)


_BUILDERS = {"ruler_hqa": _hqa_table, "ruler": _ruler_table, "longbench": _per_task_table}
