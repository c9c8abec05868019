"""Trajectory records: one JSON line per trajectory, the same in training and evaluation, read back
exactly as written; a writer killed mid-line costs only that line, and anything else malformed is
an error that names the file and line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mem_agent.agent.records import Completion, FinishReason, Trajectory, TrajectoryStatus, Turn, TurnKind
from mem_agent.agent.scoring import score_answer
from mem_agent.common.jsonl_lines import LineError
from mem_agent.observability.trajectory_records import (
    SCHEMA,
    RecordFormatError,
    TrajectoryRecord,
    append_records,
    read_records,
    record_of,
)


def _turn(kind: TurnKind, step: int, memory: list[int], response: list[int], reason: FinishReason, **extras) -> Turn:
    completion = Completion.build(response, [-0.5] * len(response), reason)
    return Turn(kind, step, np.arange(7, dtype=np.int32), completion, np.asarray(memory, dtype=np.int32), dict(extras))


def _trajectory() -> Trajectory:
    turns = [
        _turn(TurnKind.MEMORY, 0, [1, 2], [1, 2], FinishReason.STOP),
        _turn(TurnKind.MEMORY, 1, [1, 2, 3], [1, 2, 3], FinishReason.LENGTH, recall_query="who", recalled="12"),
        _turn(TurnKind.FINAL, 2, [1, 2, 3], [9, 9], FinishReason.STOP),
    ]
    return Trajectory(turns, TrajectoryStatus.COMPLETED, answer=r"\boxed{Paris}", context_tokens=123, num_chunks=2)


def _decode(ids) -> str:
    return "".join(str(int(i)) for i in ids)


def test_a_record_keeps_each_memory_its_cut_and_the_answer_scores():
    scores = score_answer(r"\boxed{Paris}", ["Paris"])
    record = record_of(
        _trajectory(),
        _decode,
        source="eval",
        item_id=4,
        question="q?",
        ground_truths=["Paris"],
        mode="rememr1",
        scores=scores,
        eval_set="eval_50.json",
    )
    assert [turn.text for turn in record.turns] == ["12", "123", "99"]
    assert [turn.cut for turn in record.turns] == [False, True, False]
    assert [turn.memory_tokens for turn in record.turns] == [2, 3, 3]
    assert record.turns[1].recall_query == "who" and record.turns[1].recalled == "12"
    assert record.turns[0].recall_query is None
    assert record.scores == {"strict": 1.0, "sub_em": 1.0, "em": 1.0, "f1": 1.0} and record.has_box
    assert record.item_id == "4" and record.eval_set == "eval_50.json" and record.schema == SCHEMA


def test_records_read_back_as_written_and_a_cut_last_line_is_skipped(tmp_path: Path):
    record = record_of(
        _trajectory(),
        _decode,
        source="train",
        item_id=0,
        question="q",
        ground_truths=["a"],
        mode="memagent",
        scores=None,
    )
    path = tmp_path / "t.jsonl"
    assert append_records(path, [record, record]) == 2
    with path.open("ab") as handle:
        handle.write(b'{"schema": "mem_agent.traj')  # a writer killed mid-line
    assert list(read_records(path)) == [record, record]


def test_a_broken_line_inside_the_file_names_file_and_line(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"{not json\n\n")
    with pytest.raises(LineError, match=r"t\.jsonl:1\b"):
        list(read_records(path))


def test_an_append_after_a_cut_line_starts_on_a_new_line_and_the_cut_line_is_named(tmp_path: Path):
    """A resumed writer appends after the line its killed predecessor cut: both complete records read
    back, and the reader names the cut line it skipped."""
    record = record_of(
        _trajectory(),
        _decode,
        source="eval",
        item_id="0",
        question="q",
        ground_truths=["a"],
        mode="memagent",
        scores=None,
    )
    path = tmp_path / "t.jsonl"
    append_records(path, [record])
    with path.open("ab") as handle:
        handle.write(b'{"schema": "mem_agent.traj')  # a writer killed mid-line
    append_records(path, [record])
    notes: list[str] = []
    assert list(read_records(path, notes)) == [record, record]
    assert len(notes) == 1 and f"{path}:2" in notes[0]


def test_an_unknown_schema_is_refused_rather_than_guessed():
    with pytest.raises(RecordFormatError, match="schema 'other/9'"):
        TrajectoryRecord.from_json({"schema": "other/9"}, "x")
    with pytest.raises(RecordFormatError, match="x: "):
        TrajectoryRecord.from_json({"schema": SCHEMA, "turns": []}, "x")
