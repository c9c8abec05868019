"""LongBench QA scoring (agent/longbench_scoring.py) on cases worked by hand from LongBench's rules
(`LongBench/metrics.py` normalize_answer and qa_f1_score, `LongBench/eval.py` scorer), and the
bounds any F1 keeps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem_agent.agent.longbench_scoring import QA_F1, qa_f1, score_longbench_answer
from mem_agent.agent.scoring import ReportingRules, normalize_answer, token_f1


@pytest.mark.parametrize(
    ("prediction", "answers", "expected"),
    [
        ("the Eiffel Tower", ["Eiffel Tower"], 1.0),  # articles are removed as whole words
        ("an apple a day", ["apple day"], 1.0),
        ("Athens", ["thens"], 0.0),  # ...never inside a word
        ("PARIS", ["paris"], 1.0),
        ("U.S.A.", ["usa"], 1.0),  # punctuation is deleted, not replaced by a space
        ("New-York", ["New York"], 0.0),
        ("Paris\u2019", ["Paris"], 0.0),  # only the 32 ASCII punctuation characters are deleted
        ("the big red dog", ["red dog"], 0.8),  # P 2/3, R 1
        ("red dog barks loudly", ["big red dog"], 4 / 7),  # P 2/4, R 2/3
        ("dog dog", ["dog"], 2 / 3),  # repeats count by multiplicity: P 1/2, R 1
        ("Paris\nFrance", ["France"], 2 / 3),  # no cut at the first line for the QA tasks
        ("Paris France", ["London", "Paris"], 2 / 3),  # the best answer counts
        ("Paris France", ["London", "Paris", "Paris, France"], 1.0),
        ("", ["Paris"], 0.0),
        ("the", ["a"], 0.0),  # both normalise to nothing: no overlap, 0
        ("Paris", [], 0.0),
    ],
)
def test_qa_f1_follows_longbench_rules(prediction: str, answers: list[str], expected: float) -> None:
    assert qa_f1(prediction, answers) == pytest.approx(expected, abs=1e-12)


def test_yes_no_answers_earn_partial_credit_unlike_hotpotqa() -> None:
    """LongBench's F1 has no closed-class rule: "yes it is" overlaps "yes" (HotpotQA's gives 0)."""
    assert qa_f1("yes it is", ["yes"]) == pytest.approx(0.5)
    assert token_f1("yes it is", "yes") == 0.0


def test_a_bare_string_is_one_answer() -> None:
    assert qa_f1("Paris", "Paris") == 1.0


def test_unicode_folding_is_opt_in() -> None:
    assert qa_f1("Paris\u2019", ["Paris"], ReportingRules(fold_unicode=True)) == 1.0


def test_the_box_is_what_is_scored() -> None:
    scores = score_longbench_answer("It is \\boxed{the Eiffel Tower}.", ["Eiffel Tower"])
    assert (scores.qa_f1, scores.extracted) == (1.0, "the Eiffel Tower")
    assert scores.fields() == {QA_F1: 1.0, "strict": 0.0}


def test_an_answer_without_a_box_scores_zero() -> None:
    scores = score_longbench_answer("Eiffel Tower", ["Eiffel Tower"])
    assert (scores.qa_f1, scores.extracted) == (0.0, None)


def test_the_last_box_after_thinking_is_read() -> None:
    scores = score_longbench_answer("<think>\\boxed{London}</think>\n\\boxed{Paris}", ["Paris"])
    assert (scores.qa_f1, scores.extracted) == (1.0, "Paris")


def test_raw_scores_the_whole_visible_answer() -> None:
    """LongBench's own reading: the whole text after any `</think>`, box characters included."""
    plain = score_longbench_answer("<think>London</think> Paris, France", ["Paris"], raw=True)
    assert (plain.qa_f1, plain.extracted) == (pytest.approx(2 / 3), "Paris, France")
    assert score_longbench_answer("\\boxed{Paris}", ["Paris"], raw=True).qa_f1 == 0.0


def test_strict_is_the_training_reward_over_every_answer() -> None:
    assert score_longbench_answer("\\boxed{Lyon}", ["Paris", "Lyon"]).strict == 1.0


# Text without the characters that change how a box is read (braces, `$`, backslash, `</think>`).
_TEXT = st.text(st.characters(blacklist_characters="{}$\\<", blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(prediction=_TEXT, answers=st.lists(_TEXT, max_size=4))
def test_qa_f1_is_a_share(prediction: str, answers: list[str]) -> None:
    assert 0.0 <= qa_f1(prediction, answers) <= 1.0


@settings(max_examples=300, deadline=None)
@given(answer=_TEXT, others=st.lists(_TEXT, max_size=3))
def test_an_exact_answer_scores_one(answer: str, others: list[str]) -> None:
    """Any answer that keeps a word after normalisation scores 1 when given back, boxed or not."""
    if normalize_answer(answer).split():
        assert qa_f1(answer, [*others, answer]) == 1.0
        assert score_longbench_answer(f"\\boxed{{{answer}}}", [*others, answer]).qa_f1 == 1.0
