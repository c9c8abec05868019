"""Gold marks read a text as the reporting scorer reads an answer (HotpotQA's normalisation) and
count a gold as present only as a run of whole normalised words: the marks then agree with what
sub_em could credit, and a short gold ("no", "yes") is not found inside every longer word."""

from __future__ import annotations

import numpy as np
import pytest

from mem_agent.agent.gold_marks import gold_span, holds_gold
from mem_agent.agent.records import Completion, FinishReason, Trajectory, TrajectoryStatus, Turn, TurnKind
from mem_agent.agent.scoring import score_answer
from mem_agent.observability.page_parts import item_view
from mem_agent.observability.trajectory_records import TrajectoryRecord, TurnRecord, record_of


@pytest.mark.parametrize(
    ("text", "gold", "present"),
    [
        ("In November it snowed.", "no", False),
        ("Yesterday it rained.", "yes", False),
        ("The answer is no.", "no", True),
        ("YES, it was.", "yes", True),
        ("About 1000 people came.", "1,000", True),  # the scorer deletes the comma: one number
        ("About 1,000 people came.", "1000", True),
        ("About 10000 people came.", "1000", False),
        ("Version 3.5 shipped.", "35", True),  # so does "3.5" become "35": read as the scorer reads
        ("He served the U.S. Army.", "US army", True),
        ("She is using it.", "US", False),
        ("Paris, France.", "paris", True),
        ("the Eiffel\n  tower stands", "Eiffel Tower", True),
        ("the Eiffel tower stands", "Tower Eiffel", False),
        ("anything at all", "the", False),  # normalises to nothing: never present, else always
        ("anything at all", "?", False),
        ("qwzx vlorp", "Barlin", False),
    ],
)
def test_a_gold_is_present_only_as_whole_normalised_words(text, gold, present):
    assert holds_gold(text, [gold]) is present


def test_the_span_is_of_the_original_text_and_the_first_gold_wins():
    text = "In November, the answer was: NO. Later, yes."
    start, end = gold_span(text, ["yes", "no"])
    assert text[start:end] == "NO."
    assert gold_span(text, ["maybe"]) is None and gold_span(text, []) is None


def test_of_two_golds_starting_at_one_word_the_longer_is_marked():
    text = "It was New York City, then."
    start, end = gold_span(text, ["New York", "new york city"])
    assert text[start:end] == "New York City,"


def _turn(kind: TurnKind, step: int, memory: str, **extras) -> Turn:
    ids = np.asarray([ord(c) for c in memory], dtype=np.int32)
    completion = Completion.build(ids.tolist(), [-0.1] * len(ids), FinishReason.STOP)
    return Turn(kind, step, np.zeros(3, dtype=np.int32), completion, ids, dict(extras))


def _text(ids) -> str:
    return "".join(chr(int(i)) for i in ids)


def _record() -> TrajectoryRecord:
    """Two chunks: the first says "November" and "Yesterday", the second holds the gold "no"; the
    first memory holds gibberish, the second the answer."""
    chunks = ["In November and Yesterday nothing happened. ", "Asked whether it snowed, she said no."]
    document = [ord(c) for c in "".join(chunks)]
    cut = len(chunks[0])
    turns = [
        _turn(TurnKind.MEMORY, 0, "qwzx Novemberish yesyes", chunk_start=0, chunk_end=cut),
        _turn(TurnKind.MEMORY, 1, "She said no.", chunk_start=cut, chunk_end=len(document)),
        _turn(TurnKind.FINAL, 2, r"\boxed{no}"),
    ]
    answer = r"\boxed{no}"
    trajectory = Trajectory(turns, TrajectoryStatus.COMPLETED, answer=answer, context_tokens=len(document))
    return record_of(
        trajectory,
        _text,
        source="eval",
        item_id="0",
        question="Did it snow?",
        ground_truths=["no"],
        mode="memagent",
        scores=score_answer(answer, ["no"]),
        document=document,
    )


def test_a_record_marks_only_the_chunk_holding_the_gold_as_a_word():
    memories = [turn for turn in _record().turns if turn.kind == "memory"]
    assert [turn.gold_in_chunk for turn in memories] == [False, True]


def test_the_viewer_marks_the_gold_where_it_is_and_not_inside_other_words():
    """Gibberish and "Novemberish" in the first memory are no gold: it entered with the second,
    whose chunk is marked, and the excerpt highlights the word itself."""
    view = item_view(_record(), "eval_50.json", "sub_em", max_turns=10)
    memories = [turn for turn in view.turns if turn.kind == "memory"]
    assert [turn.gold for turn in memories] == [[], ["chunk", "memory", "entered"]]
    assert [text for kind, text in memories[1].excerpt if kind == "gold"] == ["no."]
    assert memories[0].excerpt == []


def test_a_record_marked_by_the_old_substring_rule_is_not_believed_by_the_viewer():
    """Records written before whole-word marks say "November" holds gold "no"; their excerpt,
    cut around what they found, shows no gold by today's rule, so no chunk is marked."""
    record = _record()
    old = TurnRecord(
        kind="memory",
        step=0,
        text="nothing yet",
        cut=False,
        finish_reason="stop",
        prompt_tokens=3,
        response_tokens=3,
        memory_tokens=3,
        gold_in_chunk=True,
        chunk_excerpt="In November and Yesterday nothing happened.",
    )
    record = TrajectoryRecord(**{**record.to_json(), "turns": [old]})
    view = item_view(record, "eval_50.json", "sub_em", max_turns=10)
    assert view.turns[0].gold == [] and view.turns[0].excerpt == []
