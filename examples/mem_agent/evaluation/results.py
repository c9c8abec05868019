"""Per-item evaluation results on disk: appended as each item finishes, resumable, never doubled.

One JSONL file per input file. Each finished item is one line, written and fsynced at once, so a
killed evaluator loses at most the items still in flight. On start the file is read back:
complete results are kept (their ids are skipped), failed results are dropped so those items
run again, a partial last line left by a crash is cut off, and of an item found more than once
(a file from an older version, two files joined by hand) the first completed line is kept. The
file is then rewritten atomically, and every repair is announced, so after any number of kills
and resumes there is exactly one line per item. Reports never trust that, either: `summarize`
counts each item id once, whatever the file holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pydantic

from mem_agent.common.guarded_files import append_bytes, atomic_output, read_regular_bytes
from mem_agent.common.jsonl_lines import read_json_lines, validated
from mem_agent.evaluation.suites.ruler_hqa import METRICS as HQA_METRICS

COMPLETED = "completed"


@dataclass
class ResumeReport:
    kept: int = 0
    dropped_failed: int = 0
    repaired_partial_line: bool = False
    dropped_duplicates: int = 0
    dropped_invalid: int = 0

    def repairs(self) -> list[str]:
        """What the read-back changed in the file, for the line that announces it (empty: nothing)."""
        done = []
        if self.repaired_partial_line:
            done.append("cut a partial last line (a crash mid-write)")
        if self.dropped_duplicates:
            done.append(f"dropped {self.dropped_duplicates} repeated line(s) of items already there")
        if self.dropped_invalid:
            done.append(f"dropped {self.dropped_invalid} unreadable line(s)")
        return done


@dataclass
class ResultStore:
    """Results of one input file; `done` holds the ids that need no more work."""

    path: Path
    done: set[str] = field(default_factory=set)
    report: ResumeReport = field(default_factory=ResumeReport)

    @classmethod
    def open(cls, path: Path, *, force: bool = False) -> ResultStore:
        store = cls(path=Path(path))
        if force or not store.path.exists():
            with atomic_output(store.path):
                pass
            return store
        records = store._read_back()
        with atomic_output(store.path) as handle:
            for record in records:
                handle.write(_line(record))
        store.done = {str(record["id"]) for record in records}
        return store

    def _read_back(self) -> list[dict[str, Any]]:
        raw = read_regular_bytes(self.path)
        if raw and not raw.endswith(b"\n"):
            raw = raw[: raw.rfind(b"\n") + 1]  # the last line was cut by a crash mid-write
            self.report.repaired_partial_line = True
        kept: dict[str, dict[str, Any]] = {}
        for line in raw.splitlines():
            record = _checked(line)
            if record is None:
                self.report.dropped_invalid += 1
                continue
            item_id = record["id"]
            if record.get("status") != COMPLETED:
                self.report.dropped_failed += 1
            elif item_id in kept:
                self.report.dropped_duplicates += 1
            else:
                kept[item_id] = record
        self.report.kept = len(kept)
        return list(kept.values())

    def append(self, record: dict[str, Any]) -> None:
        append_bytes(self.path, _line(record).encode("utf-8"), sync=True)
        if record.get("status") == COMPLETED:
            self.done.add(str(record["id"]))


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


Share = Annotated[float, pydantic.Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Count = Annotated[int, pydantic.Field(ge=0)]


class ResultLine(pydantic.BaseModel):
    """What a results line must hold to be read: an id and a status; every score a finite share in
    [0, 1], every token count a non-negative integer, every text a string. Other fields pass."""

    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)

    id: Annotated[str, pydantic.BeforeValidator(lambda v: str(v) if type(v) is int else v)]
    status: str
    question: str | None = None
    answer: str | None = None
    answers: list[str] | None = None
    prediction: str | None = None
    error: str | None = None
    sub_em: Share | None = None
    em: Share | None = None
    f1: Share | None = None
    strict: Share | None = None
    string_match_all: Share | None = None
    qa_f1: Share | None = None
    empty: bool | None = None
    recall_share: Share | None = None
    recall_hit_rate: Share | None = None
    context_tokens: Count | None = None
    dropped_tokens: Count | None = None


def read_results(path: Path, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Every line of a results file, each checked against ResultLine (LineError naming file:line
    and the field on a bad one); a line cut by a crash is skipped and named in `notes`."""
    lines = read_json_lines(path)
    records = []
    for number, value in lines.rows:
        checked = validated(ResultLine, value, f"{path}:{number}")
        records.append(value | {"id": checked.id})  # the line as written, its id as text
    if notes is not None:
        notes.extend(lines.notes())
    return records


def unique_items(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per item id, in first-seen order: its first completed line, else its last failed one
    (the store's own rule for what a rerun keeps, so a report and a resume agree). The one rule for
    which line of a repeated id counts: the report, compare and the viewer all read results by it."""
    chosen: dict[str, dict[str, Any]] = {}
    for record in records:
        item_id = str(record.get("id"))
        if chosen.get(item_id, {}).get("status") != COMPLETED:
            chosen[item_id] = record
    return list(chosen.values())


def is_empty(record: dict[str, Any]) -> bool:
    """A completed item whose final answer is the empty string (older lines hold no `empty` field)."""
    return record.get("status") == COMPLETED and (record.get("empty") is True or record.get("answer") == "")


def metric_value(record: dict[str, Any], metric: str) -> float:
    """One line's share of `metric` (0 where it has none): the one reading of an item's score, which
    the report, compare and the paper comparison share. RULER lines written before the suite had its
    own metric name held string_match_all under sub_em."""
    value = record.get(metric)
    if value is None and metric == "string_match_all":
        value = record.get("sub_em")
    return float(value or 0.0)


def summarize(
    records: Iterable[dict[str, Any]],
    expected: int | None = None,
    metrics: Iterable[str] = HQA_METRICS,  # RULER-HQA's; the evaluator passes each cell's suite's
    *,
    empty_as_wrong: bool = False,
) -> dict[str, Any]:
    """Mean metrics x 100 where failed and missing items count as 0: the denominator is every item,
    less, by default, the items answered with nothing (MemAgent's evaluator skips an empty response;
    `empty_as_wrong` counts them as 0 instead). `empty` and `scored` say how many each way.
    Each item id counts once, however often the file holds it."""
    records = unique_items(records)
    completed = [r for r in records if r.get("status") == COMPLETED]
    empty = sum(is_empty(r) for r in completed)
    total = max(expected or 0, len(records))
    scored = total if empty_as_wrong else total - empty
    counted = [r for r in completed if empty_as_wrong or not is_empty(r)]
    summary: dict[str, Any] = {
        "items": total,
        "completed": len(completed),
        "failed": len(records) - len(completed),
        "missing": total - len(records),
        "empty": empty,
        "scored": scored,
    }
    for metric in metrics:
        summary[metric] = 100.0 * sum(metric_value(r, metric) for r in counted) / scored if scored else 0.0
    for metric in ("recall_share", "recall_hit_rate"):  # ReMemR1 runs only
        values = [float(r[metric]) for r in completed if metric in r]
        if values:
            summary[metric] = sum(values) / len(values)
    tokens = [int(r["context_tokens"]) for r in records if "context_tokens" in r]
    summary["mean_context_tokens"] = sum(tokens) / len(tokens) if tokens else 0.0
    dropped = [int(r.get("dropped_tokens") or 0) for r in records if "context_tokens" in r]
    summary["mean_dropped_tokens"] = sum(dropped) / len(dropped) if dropped else 0.0
    summary["cut_share"] = sum(dropped) / sum(tokens) if sum(tokens) else 0.0  # the direct baseline's cut
    return summary


def question_key(question: Any, answers: Any) -> str:
    """What an item asks, in a few bytes: its question and answers, as a results line records them
    and as the eval file holds them. A result is reused only for the item whose key it carries."""
    text = json.dumps([question, answers], ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def completed_keys(path: Path) -> dict[str, str | None]:
    """The ids with a completed result in a results file, each with its question_key (None for a line
    that records no question), read without repairing anything (none for a file not there yet): what
    a run would skip."""
    try:
        raw = read_regular_bytes(path)
    except FileNotFoundError:
        return {}
    done: dict[str, str | None] = {}
    for line in raw.splitlines(keepends=True):
        record = _checked(line) if line.endswith(b"\n") else None
        if record is not None and record["status"] == COMPLETED and record["id"] not in done:
            asked = record.get("question") is not None
            done[record["id"]] = question_key(record["question"], record.get("answers")) if asked else None
    return done


def _checked(line: bytes) -> dict[str, Any] | None:
    """A results line as ResultLine reads it, or None for one it refuses (what a resume drops)."""
    try:
        checked = ResultLine.model_validate_json(line)
    except pydantic.ValidationError:
        return None
    return json.loads(line) | {"id": checked.id}  # the line as written (a rewrite keeps its bytes)
