"""summary.json read by one reader with a schema: every command that reads it (the evaluator's
reuse check, compare, the viewer) gets the same checked document, or one line naming the field.

Only what readers use is checked: each cell's label, its counts (non-negative integers) and its
metrics (finite numbers, x 100 in [0, 100]; tokens non-negative), and that the run facts are
objects. Fields a reader does not use pass as they are, so a newer writer's additions are kept.

Every suite's cells are one list, `results`, each naming its `suite`, `task`, `length` and headline
`metric` (docs/evaluation.md). A file written before that shape (RULER-HQA lengths in `results`
without a suite, RULER general cells under `ruler` with the split's string_match_all under
`sub_em`) is read as if written now (`_current_shape`), so no reader knows the old layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
import pydantic

from mem_agent.common.jsonl_lines import validated
from mem_agent.common.usage import UsageError

SUMMARY_NAME = "summary.json"

Percent = Annotated[float, pydantic.Field(ge=0.0, le=100.0, allow_inf_nan=False)]
Count = Annotated[int, pydantic.Field(ge=0)]
Tokens = Annotated[float, pydantic.Field(ge=0.0, allow_inf_nan=False)]
Label = Annotated[str, pydantic.BeforeValidator(lambda v: str(v) if type(v) is int else v)]


HQA_METRICS = ("sub_em", "em", "f1", "strict")


class LengthResult(pydantic.BaseModel):
    """One cell (suite, task, length) of a run; every metric it names in `metrics` is checked."""

    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)

    label: Label
    suite: str = "ruler_hqa"
    task: str = "hotpotqa"
    length: int | None = None
    metric: str = "sub_em"
    metrics: list[str] = list(HQA_METRICS)
    items: Count = 0
    completed: Count = 0
    failed: Count = 0
    missing: Count = 0
    sub_em: Percent | None = None
    em: Percent | None = None
    f1: Percent | None = None
    strict: Percent | None = None
    mean_context_tokens: Tokens = 0.0

    @pydantic.model_validator(mode="after")
    def _metrics_are_percentages(self) -> LengthResult:
        for name in {self.metric, *self.metrics}:
            value = getattr(self, name, None)
            if value is None and name in HQA_METRICS:
                continue  # an older HQA cell may lack one of them: shown as 0
            if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 <= value <= 100.0:
                raise ValueError(f"{name} must be a number x 100 in [0, 100], not {value!r}")
        return self


class RunFacts(pydantic.BaseModel):
    """The facts readers compare runs by; the rest of a run's facts pass as they are."""

    model_config = pydantic.ConfigDict(extra="allow")

    mode: str | None = None
    config: dict[str, Any] | None = None
    scoring: dict[str, Any] | None = None
    data_sha256: dict[str, str] | None = None


class SummaryDocument(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)

    results: list[LengthResult] = []
    run: RunFacts | None = None
    earlier_runs: list[dict[str, Any]] = []


class SummaryError(UsageError):
    """A summary.json that cannot be read or is not an evaluator's; the message names the file."""


def read_summary(path: Path) -> dict[str, Any]:
    """The checked document as plain data: the fields given, each length's counts and metrics whole.
    FileNotFoundError when there is none; SummaryError for one that cannot be read or checked."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as error:
        raise SummaryError(f"{path}: cannot be read: {error.strerror}") from None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise SummaryError(f"{path}: not JSON (cut by a crash, or edited by hand?)") from None
    document = validated(SummaryDocument, _current_shape(value), str(path))
    plain = {"run": None, "earlier_runs": [], **document.model_dump(exclude_unset=True)}
    plain["results"] = [_plain(result) for result in document.results]
    return plain


def _plain(result: LengthResult) -> dict[str, Any]:
    """A cell as plain data: a RULER-HQA cell with each of its metrics (0 where an older file lacks
    one); another suite's without the HQA metrics it does not hold."""
    plain = result.model_dump()
    for name in HQA_METRICS:
        if plain[name] is None:
            if result.suite == "ruler_hqa":
                plain[name] = 0.0
            else:
                del plain[name]
    return plain


def current_cells(results: list[Any], ruler: list[Any] | None = None) -> list[Any]:
    """Cells written in the older shape (RULER-HQA `results`, RULER general `ruler`) as one list in
    the current shape: what summary.json's readers get."""
    return _current_shape({"results": results, "ruler": ruler or []})["results"]


def _current_shape(value: Any) -> Any:
    """An older summary.json as the current shape: `ruler` entries moved into `results` (their
    split the task, their string_match_all, kept under `sub_em` then, under its own name), cells
    without a suite marked RULER-HQA. A current file passes unchanged."""
    if not isinstance(value, dict):
        return value
    old_ruler = value.get("ruler")
    results = value.get("results")
    if not isinstance(results, list) or not isinstance(old_ruler, list | type(None)):
        return value
    cells = [_hqa_cell(cell) for cell in results]
    cells += [_ruler_cell(cell) for cell in old_ruler or []]
    current = {key: item for key, item in value.items() if key != "ruler"}
    return current | {"results": cells}


def _hqa_cell(cell: Any) -> Any:
    if not isinstance(cell, dict) or "suite" in cell:
        return cell
    label = str(cell.get("label"))
    length = {"length": int(label)} if label.isdigit() else {}
    return {"suite": "ruler_hqa", "task": "hotpotqa", **length, "metric": "sub_em", "metrics": list(HQA_METRICS)} | cell


def _ruler_cell(cell: Any) -> Any:
    """An entry of the old `ruler` list: metric "qa" (qa_1, qa_2) is sub_em with em and f1; any
    other split's one score, string_match_all, was written as sub_em."""
    if not isinstance(cell, dict) or "suite" in cell:
        return cell
    if cell.get("metric") == "qa":
        shape = {"metric": "sub_em", "metrics": ["sub_em", "em", "f1"]}
    else:
        shape = {"metric": "string_match_all", "metrics": ["string_match_all"]}
        shape["string_match_all"] = cell.get("sub_em")
    return {"suite": "ruler", "task": cell.get("split")} | {k: v for k, v in cell.items() if k != "metric"} | shape
