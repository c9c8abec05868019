"""The two verifiers: the strict training reward and the lenient reporting metrics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem_agent.scoring import (
    STRICT_WINDOW_CHARS,
    exact_match,
    extract_boxed,
    normalize_answer,
    score_answer,
    strict_reward,
    substring_exact_match,
    token_f1,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no box here", None),
        ("\\boxed{Paris}", "Paris"),
        ("first \\boxed{A} then \\boxed{B}", "B"),
        ("\\boxed{\\text{a}{b}}", "\\text{a}{b}"),
        ("\\boxed {spaced}", "spaced"),
        ("\\boxed{closed} and \\boxed{never closed", "closed"),
        ("\\boxed{}", ""),
        ("\\boxed{Zürich – 東京}", "Zürich – 東京"),
    ],
)
def test_extract_boxed_takes_the_last_complete_box(text, expected):
    assert extract_boxed(text) == expected


def test_strict_reward_ignores_case_and_all_whitespace():
    assert strict_reward("so the answer is \\boxed{ New  York City }", ["new york city"]) == 1.0
    assert strict_reward("\\boxed{NewYork City}", ["new york city"]) == 1.0


def test_strict_reward_is_exact_otherwise():
    assert strict_reward("\\boxed{the Eiffel Tower}", ["Eiffel Tower"]) == 0.0
    assert strict_reward("\\boxed{Paris, France}", ["Paris"]) == 0.0


def test_strict_reward_takes_the_max_over_ground_truths():
    assert strict_reward("\\boxed{NYC}", ["New York City", "NYC"]) == 1.0


def test_strict_reward_counts_only_a_box_in_the_last_300_characters():
    early_box = "\\boxed{Paris}" + "x" * STRICT_WINDOW_CHARS
    assert strict_reward(early_box, ["Paris"]) == 0.0
    assert score_answer(early_box, ["Paris"]).sub_em == 1.0, "reporting looks at the whole answer"


def test_strict_reward_without_a_box_or_ground_truth_is_zero():
    assert strict_reward("Paris", ["Paris"]) == 0.0
    assert strict_reward("\\boxed{Paris}", []) == 0.0


def test_normalisation_drops_case_punctuation_articles_and_extra_spaces():
    assert normalize_answer("  The  Eiffel-Tower, an icon! ") == "eiffel tower icon"
    assert normalize_answer("“Quoted” — dash") == "quoted dash", "unicode punctuation counts as punctuation"
    assert normalize_answer("Théâtre") == "théâtre", "letters with accents are kept"


def test_exact_match_after_normalisation():
    assert exact_match("The Beatles", "beatles") == 1.0
    assert exact_match("Beatles band", "beatles") == 0.0


def test_substring_match_works_in_both_directions_but_never_on_empty():
    assert substring_exact_match("Paris, France", "Paris") == 1.0
    assert substring_exact_match("Paris", "Paris, France") == 1.0
    assert substring_exact_match("the", "Paris") == 0.0, "a prediction that normalises to nothing matches nothing"
    assert substring_exact_match("London", "Paris") == 0.0


def test_token_f1_by_hand():
    # "the big red dog" -> "big red dog" (3 tokens); "red dog" -> 2 tokens; overlap 2.
    # precision 2/3, recall 2/2, F1 = 2 * (2/3) * 1 / (2/3 + 1) = 0.8
    assert token_f1("the big red dog", "red dog") == pytest.approx(0.8)
    assert token_f1("red dog", "red dog") == 1.0
    assert token_f1("cat", "red dog") == 0.0


def test_yes_no_answers_get_no_partial_f1():
    assert token_f1("yes", "no") == 0.0
    assert token_f1("yes it is", "yes") == 0.0, "HotpotQA: a yes/no gold only matches exactly"
    assert token_f1("Yes.", "yes") == 1.0


def test_score_answer_reports_against_the_first_ground_truth_by_default():
    scores = score_answer("I think \\boxed{NYC}", ["New York City", "NYC"])
    assert (scores.em, scores.sub_em, scores.strict) == (0.0, 0.0, 1.0)
    assert scores.has_box and scores.extracted == "NYC"
    best = score_answer("I think \\boxed{NYC}", ["New York City", "NYC"], reporting="max")
    assert (best.em, best.sub_em) == (1.0, 1.0)


def test_score_answer_without_a_box_is_all_zero():
    scores = score_answer("Paris", ["Paris"])
    assert (scores.em, scores.sub_em, scores.f1, scores.strict, scores.has_box) == (0.0, 0.0, 0.0, 0.0, False)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.lists(st.text(), max_size=3))
def test_scores_never_raise_and_stay_in_range_on_any_unicode(text, golds):
    scores = score_answer(text, golds)
    for value in (scores.em, scores.sub_em, scores.f1, scores.strict):
        assert 0.0 <= value <= 1.0
    if golds:
        assert 0.0 <= token_f1(text, golds[0]) <= 1.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200).filter(lambda s: "{" not in s and "}" not in s and "\\" not in s))
def test_a_boxed_ground_truth_always_earns_the_strict_reward(gold):
    assert strict_reward(f"answer: \\boxed{{{gold}}}", [gold]) == 1.0


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_exact_match_is_reflexive_when_something_survives_normalisation(text):
    if normalize_answer(text):
        assert exact_match(text, text) == 1.0 and substring_exact_match(text, text) == 1.0
