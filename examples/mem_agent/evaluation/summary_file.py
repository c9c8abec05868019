"""summary.json read by one reader with a schema: every command that reads it (the evaluator's
reuse check, compare, the viewer) gets the same checked document, or one line naming the field.

Only what readers use is checked: each length's label, its counts (non-negative integers) and its
metrics (finite numbers, x 100 in [0, 100]; tokens non-negative), and that the run facts are
objects. Fields a reader does not use pass as they are, so a newer writer's additions are kept.
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


class LengthResult(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)

    label: Label
    items: Count = 0
    completed: Count = 0
    failed: Count = 0
    missing: Count = 0
    sub_em: Percent = 0.0
    em: Percent = 0.0
    f1: Percent = 0.0
    strict: Percent = 0.0
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
    document = validated(SummaryDocument, value, str(path))
    plain = {"run": None, "earlier_runs": [], **document.model_dump(exclude_unset=True)}
    plain["results"] = [result.model_dump() for result in document.results]  # every metric, 0 where missing
    return plain
