"""The published numbers our runs are set beside, kept as data with where each came from.

`paper_tables.json` (beside this module) holds each table as the paper printed it: the paper, its
arXiv version and table, the place the numbers were read from, the metric, the protocol the
authors ran (sampling, chunking, the direct baselines' windows) and one row per model, each value
keyed by our length label (RULER-HQA's document count, RULER's token count), and what is known of
the items behind each number: how many per column (`items_per_column`, null where the paper does
not say, with `items_source`), whether each scored 0 or 1 (`item_scores`: "binary", so a Wilson
interval can be drawn around the published mean) and the sha256 of the published files
(`data_sha256`, per length label; empty where no stored copy gives one). A value the paper
prints as N/A is null. Numbers we could not find in a stored copy of a paper are not here
(docs/fidelity.md lists them); nothing is filled in by hand.

A choice is written TABLE or TABLE:ROW (`memagent-v1-ruler-hqa:RL-MemAgent-7B`), as compare's
--paper takes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.common.usage import UsageError

TABLES_PATH = Path(__file__).with_name("paper_tables.json")


@dataclass(frozen=True)
class PaperRow:
    model: str
    mode: str  # memagent, or direct: how the authors ran that model
    values: dict[str, float | None]  # length label -> the published number (x 100), None for N/A


@dataclass(frozen=True)
class PaperTable:
    name: str
    paper: str
    arxiv: str
    version: str
    table: str
    source: str
    metric: str
    protocol: dict[str, Any]
    columns: dict[str, str]  # length label -> the paper's column heading (7K, 3.5M, 512K)
    rows: tuple[PaperRow, ...]
    items_per_column: int | None = None  # None: the paper does not say
    items_source: str = ""
    binary_items: bool = False  # every item scored 0 or 1: a published mean has a Wilson interval
    data_sha256: dict[str, str] | None = None  # length label -> sha256 of the published file, where known

    @property
    def cited(self) -> str:
        return f"arXiv {self.arxiv}{self.version} {self.table}"


def load_tables(path: Path = TABLES_PATH) -> dict[str, PaperTable]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return {name: _table(name, entry) for name, entry in document.items()}


def _table(name: str, entry: dict[str, Any]) -> PaperTable:
    rows = tuple(PaperRow(model, row["mode"], dict(row["values"])) for model, row in entry["rows"].items())
    fields = ("paper", "arxiv", "version", "table", "source", "metric", "protocol", "columns")
    return PaperTable(
        name,
        **{key: entry[key] for key in fields},
        rows=rows,
        items_per_column=entry.get("items_per_column"),
        items_source=entry.get("items_source", ""),
        binary_items=entry.get("item_scores") == "binary",
        data_sha256=dict(entry.get("data_sha256") or {}),
    )


def choose(choice: str, tables: dict[str, PaperTable] | None = None) -> tuple[PaperTable, tuple[PaperRow, ...]]:
    """The table and rows a TABLE[:ROW] choice names; a UsageError lists what exists."""
    tables = load_tables() if tables is None else tables
    name, _, model = choice.partition(":")
    if name not in tables:
        raise UsageError(f"--paper {choice}: no table {name!r} (stored: {', '.join(sorted(tables))})")
    table = tables[name]
    if not model:
        return table, table.rows
    rows = tuple(row for row in table.rows if row.model == model)
    if not rows:
        raise UsageError(
            f"--paper {choice}: {name} has no row {model!r} (rows: {', '.join(r.model for r in table.rows)})"
        )
    return table, rows


def protocol_differences(table: PaperTable, facts: dict[str, Any]) -> list[str]:
    """How a run's recorded settings (summary.json's `run`) differ from the authors' protocol."""
    sampling, config = facts.get("sampling") or {}, facts.get("config") or {}
    ours = {
        "temperature": sampling.get("temperature"),
        "top_p": sampling.get("top_p"),
        "samples_per_question": 1,  # the evaluator runs each question once
        "chunk_tokens": config.get("chunk_tokens"),
        "max_memory_tokens": config.get("max_memory_tokens"),
        "max_chunks": config.get("max_chunks"),
    }
    differences = [
        f"{key}: paper {table.protocol[key]}, this run {value}"
        for key, value in ours.items()
        if key in table.protocol and value is not None and value != table.protocol[key]
    ]
    if facts.get("mode") == "direct":
        window = (facts.get("direct") or {}).get("context_window")
        differences.append(
            f"direct window: paper {table.protocol.get('direct_window', 'not stated')}; this run {window}"
        )
    return differences


Chosen = tuple[PaperTable, tuple[PaperRow, ...]]


def choose_all(choices: Sequence[str]) -> tuple[Chosen, ...]:
    """Every --paper choice, each problem named at once (a UsageError)."""
    tables = load_tables()
    chosen, problems = [], []
    for choice in choices:
        try:
            chosen.append(choose(choice, tables))
        except UsageError as error:
            problems.append(str(error))
    if problems:
        raise UsageError(problems)
    return tuple(chosen)
