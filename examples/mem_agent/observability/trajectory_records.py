"""Trajectory records: what a memory agent wrote into memory, turn by turn, kept as JSON Lines.

One line per trajectory, the same layout in training (`SAVE_PATH/trajectories/`) and evaluation
(`--save-trajectories`), so one viewer and one set of tools read both. A record holds text, not
token ids: it answers "what did it remember at chunk 5?", and stays small enough to keep (ids and
logprobs are the trainer's business and go to the trainer). The layout is versioned by `schema`;
readers refuse a schema they do not know rather than guess, and check every record read against
the dataclasses below (pydantic: types, token counts non-negative, numbers finite), so a page or a
table is only ever made from values of the declared types.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import orjson
import pydantic

from mem_agent.agent.gold_marks import gold_span
from mem_agent.agent.records import Trajectory, TurnKind
from mem_agent.agent.scoring import AnswerScores
from mem_agent.common.guarded_files import append_bytes
from mem_agent.common.jsonl_lines import LineError, field_problem, read_json_lines

SCHEMA = "mem_agent.trajectory/1"
EXCERPT_CHARS = 600  # of a chunk's text per memory turn: a 1,000-question run of 20 chunks keeps 12 MB
Count = Annotated[int, pydantic.Field(ge=0)]
_CHECKED = pydantic.ConfigDict(allow_inf_nan=False)


class RecordFormatError(LineError):
    """A line that is not a trajectory record of a known schema; the message names file:line and field."""


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn: for a memory turn `text` is the memory it wrote (the whole visible response in
    MemAgent mode), for the final turn the answer; `cut` is True when max_tokens ended it."""

    kind: str  # "memory" | "final"
    step: int  # chunk index for a memory turn; the number of chunks for the final turn
    text: str
    cut: bool
    finish_reason: str
    prompt_tokens: Count
    response_tokens: Count
    memory_tokens: Count  # tokens of the memory after this turn (the one the final turn answered from)
    recall_query: str | None = None  # ReMemR1: what this turn asked to recall
    recalled: str | None = None  # ReMemR1: the earlier memory the recall returned
    state_reward: float | None = None  # ReMemR1: this turn's state reward, where computed
    advantage: float | None = None  # training: the advantage this turn was trained with
    chunk_start: int | None = None  # memory turn: where its chunk lies in the document (tokens,
    chunk_end: int | None = None  # end exclusive); None where the run did not say (training rows)
    gold_in_chunk: bool | None = None  # a gold answer is in the chunk (gold_marks); None: chunk text unknown
    chunk_excerpt: str | None = None  # up to EXCERPT_CHARS of the chunk: around the gold, else its start

    __pydantic_config__ = _CHECKED


@dataclass(frozen=True, slots=True)
class TrajectoryRecord:
    source: str  # "train" | "eval"
    item_id: str  # the question's id: the sample index in training, the eval item index in evaluation
    question: str
    ground_truths: list[str]
    mode: str  # "memagent" | "rememr1" | "direct" (the long-context baseline)
    status: str  # completed | aborted | failed
    answer: str
    scores: dict[str, float]  # strict, sub_em, em, f1 (empty for a trajectory that did not finish)
    has_box: bool
    context_tokens: Count
    dropped_tokens: Count
    turns: list[TurnRecord]
    rollout_id: int | None = None  # training: the rollout (step) it came from
    group_index: int | None = None  # training: the GRPO group (question) it belongs to
    reward: float | None = None  # training: the reward the trainer saw
    advantage: float | None = None  # training: the advantage every turn of it was trained with
    eval_set: str | None = None  # evaluation: the file it came from (e.g. "eval_50.json")
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    schema: str = SCHEMA
    __pydantic_config__ = _CHECKED

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "record") -> TrajectoryRecord:
        if not isinstance(data, Mapping):
            raise RecordFormatError(f"{where}: expected an object, got {type(data).__name__}")
        if data.get("schema") != SCHEMA:
            raise RecordFormatError(f"{where}: schema {data.get('schema')!r} is not {SCHEMA!r}")
        try:
            return _record_adapter().validate_python(data)
        except pydantic.ValidationError as error:
            raise RecordFormatError(f"{where}: {field_problem(error)}") from None


@functools.cache
def _record_adapter() -> pydantic.TypeAdapter[TrajectoryRecord]:
    return pydantic.TypeAdapter(TrajectoryRecord)


def record_of(
    trajectory: Trajectory,
    decode: Callable[[Any], str],
    *,
    source: str,
    item_id: str,
    question: str,
    ground_truths: Iterable[str],
    mode: str,
    scores: AnswerScores | None,
    document: Sequence[int] | None = None,
    **context: Any,
) -> TrajectoryRecord:
    """The record of one finished (or failed) trajectory; `decode` turns token ids into text with the
    policy's tokenizer. With the `document`'s token ids (the evaluator has them), each memory turn
    also keeps whether its chunk holds a gold answer's words and a bounded excerpt of it. `context`
    fills the source-specific fields (rollout_id, eval_set, ...)."""
    golds = [str(gold) for gold in ground_truths]
    turns = []
    for turn in trajectory.turns:
        extras = turn.extras
        start, end = _int_or_none(extras.get("chunk_start")), _int_or_none(extras.get("chunk_end"))
        seen = _chunk_facts(decode(document[start:end]), golds) if document is not None and end else (None, None)
        turns.append(
            TurnRecord(
                kind=turn.kind.value,
                step=turn.step,
                text=decode(turn.memory_ids if turn.kind is TurnKind.MEMORY else turn.response_ids),
                cut=turn.truncated,
                finish_reason=turn.finish_reason.value,
                prompt_tokens=len(turn.prompt_ids) or _int(extras.get("prompt_tokens")),
                response_tokens=len(turn.completion),
                memory_tokens=len(turn.memory_ids),
                recall_query=_text_or_none(extras.get("recall_query")),
                recalled=_text_or_none(extras.get("recalled")),
                chunk_start=start,
                chunk_end=end,
                gold_in_chunk=seen[0],
                chunk_excerpt=seen[1],
            )
        )
    score_map = {} if scores is None else {name: getattr(scores, name) for name in ("strict", "sub_em", "em", "f1")}
    return TrajectoryRecord(
        source=source,
        item_id=str(item_id),
        question=question,
        ground_truths=golds,
        mode=mode,
        status=trajectory.status.value,
        answer=trajectory.answer,
        scores=score_map,
        has_box=bool(scores and scores.has_box),
        context_tokens=trajectory.context_tokens,
        dropped_tokens=trajectory.dropped_tokens,
        turns=turns,
        error=trajectory.error,
        **context,
    )


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _chunk_facts(text: str, golds: list[str]) -> tuple[bool, str]:
    """Whether the chunk holds a gold answer (`gold_marks.gold_span`: the scorer's normalisation,
    whole words), and EXCERPT_CHARS of it centred on the first one (or its start): enough to see
    the supporting fact, bounded whatever the chunk size."""
    span = gold_span(text, golds)
    if span is None:
        return False, text[:EXCERPT_CHARS]
    middle = (span[0] + span[1]) // 2
    begin = max(0, min(middle - EXCERPT_CHARS // 2, len(text) - EXCERPT_CHARS))
    return True, text[begin : begin + EXCERPT_CHARS]


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def append_records(path: Path, records: Iterable[TrajectoryRecord]) -> int:
    """Append records, one flushed line each: a crash loses at most the line being written, which
    read_records reports by file and line rather than misreading."""
    lines = [orjson.dumps(record.to_json()) + b"\n" for record in records]
    append_bytes(path, b"".join(lines))
    return len(lines)


def read_records(path: Path, notes: list[str] | None = None) -> Iterator[TrajectoryRecord]:
    """Records of a JSON Lines file, each checked; a bad line is a RecordFormatError naming file:line
    and the field. A line cut by a crash is skipped and named in `notes`."""
    lines = read_json_lines(path)
    if notes is not None:
        notes.extend(lines.notes())
    for number, data in lines.rows:
        yield TrajectoryRecord.from_json(data, f"{path}:{number}")
