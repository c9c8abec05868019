"""summary.json read by one reader with a schema: every command that reads it (the evaluator's
reuse check, compare, the viewer) gets the same checked document, or one line naming the field.

Only what readers use is checked: each cell's suite, label, counts (non-negative integers) and
metrics (finite numbers, x 100 in [0, 100]; tokens non-negative), and that the run facts are
objects. Fields a reader does not use pass as they are, so a newer writer's additions are kept.
Files of the layout before suites are read into the one shape: a cell without `suite` is
RULER-HQA's, and the old separate `ruler` list's cells become RULER cells.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import orjson
import pydantic

from mem_agent.common.guarded_files import read_regular_bytes
from mem_agent.common.jsonl_lines import validated
from mem_agent.common.usage import UsageError

SUMMARY_NAME = "summary.json"

Percent = Annotated[float, pydantic.Field(ge=0.0, le=100.0, allow_inf_nan=False)]
Count = Annotated[int, pydantic.Field(ge=0)]
Tokens = Annotated[float, pydantic.Field(ge=0.0, allow_inf_nan=False)]
Label = Annotated[str, pydantic.BeforeValidator(lambda v: str(v) if type(v) is int else v)]


class CellResult(pydantic.BaseModel):
    """One cell of any suite. Every metric it holds is a finite number x 100 in [0, 100]."""

    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)

    suite: str = "ruler_hqa"  # files written before suites were named held RULER-HQA cells here
    task: str | None = None
    length: int | None = None
    label: Label
    metric: str = "sub_em"
    metrics: list[str] = ["sub_em", "em", "f1", "strict"]
    items: Count = 0
    completed: Count = 0
    failed: Count = 0
    missing: Count = 0
    empty: Count = 0
    sub_em: Percent | None = None
    em: Percent | None = None
    f1: Percent | None = None
    strict: Percent | None = None
    string_match_all: Percent | None = None
    qa_f1: Percent | None = None
    mean_context_tokens: Tokens = 0.0


class RunFacts(pydantic.BaseModel):
    """The facts readers compare runs by; the rest of a run's facts pass as they are."""

    model_config = pydantic.ConfigDict(extra="allow")

    mode: str | None = None
    config: dict[str, Any] | None = None
    scoring: dict[str, Any] | None = None
    data_sha256: dict[str, str] | None = None


class SummaryDocument(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)

    results: list[CellResult] = []
    run: RunFacts | None = None
    earlier_runs: list[dict[str, Any]] = []


class SummaryError(UsageError):
    """A summary.json that cannot be read or is not an evaluator's; the message names the file."""


def read_summary(path: Path) -> dict[str, Any]:
    """The checked document as plain data: the fields given, each length's counts and metrics whole.
    FileNotFoundError when there is none; SummaryError for one that cannot be read or checked."""
    document = read_document(Path(path), SummaryDocument, _one_layout)
    plain = {"run": None, "earlier_runs": [], **document.model_dump(exclude_unset=True, exclude={"ruler"})}
    plain["results"] = [_cell(result) for result in document.results]
    return plain


def read_document(path: Path, model: type[pydantic.BaseModel], layout: Callable[[Any], Any] = lambda v: v) -> Any:
    """A run folder's JSON document (summary.json, run.json) checked against `model` once `layout`
    has read an older layout into the current one. FileNotFoundError when there is none; a
    SummaryError naming the file (and the field) for one that cannot be read or checked."""
    try:
        raw = read_regular_bytes(path)  # a FIFO is Refused at once, never waited on
    except FileNotFoundError:
        raise
    except OSError as error:
        raise SummaryError(f"{path}: cannot be read: {error.strerror}") from None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise SummaryError(f"{path}: not JSON (cut by a crash, or edited by hand?)") from None
    return validated(model, layout(value), str(path))


def _one_layout(value: Any) -> Any:
    """The layout before suites: its separate `ruler` list's cells become RULER cells of `results`."""
    if isinstance(value, dict) and isinstance(value.get("ruler"), list):
        return value | {"results": [*(value.get("results") or []), *map(_old_ruler_cell, value["ruler"])]}
    return value


def _cell(result: CellResult) -> dict[str, Any]:
    """A cell as plain data: every field given, and each metric it names (0 where missing)."""
    cell = result.model_dump(exclude_none=True)
    if result.task is None and result.suite == "ruler_hqa":
        cell["task"] = "hotpotqa"
    if result.length is None and result.suite == "ruler_hqa" and result.label.isdigit():
        cell["length"] = int(result.label)
    cell.setdefault("length", None)
    for name in result.metrics:
        cell.setdefault(name, 0.0)
    return cell


def _old_ruler_cell(entry: Any) -> Any:
    """A RULER cell of the layout before suites (summary.json's separate `ruler` list): its split is the
    task and, for every split but qa_*, its `sub_em` held string_match_all."""
    if not isinstance(entry, dict):
        return entry
    split = entry.get("split")
    qa = isinstance(split, str) and split.startswith("qa_")
    moved = {} if qa else {"string_match_all": entry.get("sub_em", 0.0)}
    metrics = ["sub_em", "em", "f1", "strict"] if qa else ["string_match_all", "strict"]
    return entry | moved | {"suite": "ruler", "task": split, "metric": metrics[0], "metrics": metrics}
