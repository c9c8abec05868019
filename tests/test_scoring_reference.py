"""Our scorer against the references' rules restated from their specification (support/reference_scoring.py).

By default EM, F1 and normalisation must equal the official HotpotQA evaluator's on every string,
sub_em MemAgent's, and the box reader and strict reward MemAgent's; checked on a large set of
adversarial strings (support/adversarial_answers.py) and on generated ones.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem_agent.agent.scoring import (
    ReportingRules,
    exact_match,
    extract_boxed,
    normalize_answer,
    score_answer,
    strict_reward,
    substring_exact_match,
    token_f1,
)
from support.adversarial_answers import ANSWERS, DECORATIONS, GOLDS, adversarial_pairs
from support.reference_scoring import (
    memagent_box,
    memagent_prediction,
    memagent_reporting,
    memagent_strict,
    memagent_sub_em,
    official_em,
    official_f1,
    official_normalise,
)

PAIRS = adversarial_pairs()
STRINGS = sorted({text for _, prediction, gold in PAIRS for text in (prediction, gold)})
BOX_GOLDS = ("Dunmere", "Carrowick", "Orla Fenwick", "Canary Islands, Spain", "Zürich", "Apple", "yes", "", "東京")

# Characters model output is made of, weighted towards the ones the rules treat specially.
SPECIAL = [
    *"aAnNtThHeE _-.,'\"!?$()[]{}\\",
    *[" ", "\t", "\n", "\u00a0", "\u2009", "\u3000", "\u200b", "\u200d", "\u00ad", "\u2028", "\x1c"],
    *["\u201c", "\u201d", "\u2018", "\u2019", "\u00ab", "\u00bb", "\u2013", "\u2014", "\u2026", "\u3002", "\u060c"],
    *["\u0301", "\u0308", "\u00e9", "\u00fc", "\u0130", "\u00df", "\ufb01", "\u00b2", "\u216b", "\u0660"],
    *["\uff21", "\uff41", "\uff0c", "\u6771", "\u4eac", "\uc11c", "\u0416", "\u03c3", "\U0001f600", "\U0001f389"],
]
ADVERSARIAL_TEXT = st.one_of(
    st.text(),
    st.lists(st.sampled_from([*SPECIAL, "the", "an", "a", "yes", "no", "noanswer"]), max_size=12).map("".join),
)
BOX_TEXT = st.lists(
    st.sampled_from(["\\boxed", "\\boxed ", "\\boxed{", "{", "}", "$", "\\fbox{", "</think>", "Paris", " ", "\n", "x"]),
    max_size=10,
).map("".join)


def test_the_adversarial_set_is_large_and_covers_every_decoration():
    assert len(PAIRS) == len(GOLDS) * len(DECORATIONS) >= 1000
    assert len(STRINGS) > 500


@pytest.mark.parametrize("text", STRINGS)
def test_normalisation_equals_the_official_rules_on_every_adversarial_string(text):
    assert normalize_answer(text) == official_normalise(text)


def test_em_f1_and_sub_em_equal_the_references_on_every_adversarial_pair():
    mismatches = [
        (name, prediction, gold)
        for name, prediction, gold in PAIRS
        if exact_match(prediction, gold) != official_em(prediction, gold)
        or token_f1(prediction, gold) != pytest.approx(float(official_f1(prediction, gold)), abs=1e-12)
        or substring_exact_match(prediction, gold) != memagent_sub_em(prediction, gold)
    ]
    assert mismatches == []


@pytest.mark.parametrize("answer", ANSWERS)
def test_whole_answers_score_as_memagents_evaluator_and_reward_with_official_em_f1(answer):
    for gold in BOX_GOLDS:
        scores = score_answer(answer, [gold])
        em, sub_em, f1 = memagent_reporting(answer, gold)
        assert (scores.em, scores.sub_em) == (em, sub_em), gold
        assert scores.f1 == pytest.approx(float(f1), abs=1e-12), gold
        assert scores.strict == memagent_strict(answer, [gold]), gold
    assert score_answer(answer, ["x"]).extracted == memagent_prediction(answer)


def test_unicode_folding_is_the_only_thing_that_raises_scores_on_the_adversarial_pairs():
    """Folding changes scores (that is its job) and never lowers EM: what NFKC equates stays equal."""
    folded = ReportingRules(fold_unicode=True)
    raised = [pair for pair in PAIRS if exact_match(pair[1], pair[2], folded) > exact_match(pair[1], pair[2])]
    lowered = [pair for pair in PAIRS if exact_match(pair[1], pair[2], folded) < exact_match(pair[1], pair[2])]
    assert raised and not lowered
    assert ("curly double quotes", "\u201cCanary Islands, Spain\u201d", "Canary Islands, Spain") in raised


@settings(max_examples=500, deadline=None)
@given(ADVERSARIAL_TEXT)
def test_normalisation_equals_the_official_rules_on_generated_strings(text):
    assert normalize_answer(text) == official_normalise(text)


@settings(max_examples=500, deadline=None)
@given(ADVERSARIAL_TEXT, ADVERSARIAL_TEXT)
def test_em_f1_and_sub_em_equal_the_references_on_generated_pairs(prediction, gold):
    assert exact_match(prediction, gold) == official_em(prediction, gold)
    assert token_f1(prediction, gold) == pytest.approx(float(official_f1(prediction, gold)), abs=1e-12)
    assert substring_exact_match(prediction, gold) == memagent_sub_em(prediction, gold)


@settings(max_examples=500, deadline=None)
@given(BOX_TEXT)
def test_the_box_reader_equals_memagents_on_generated_answers(text):
    assert extract_boxed(text) == memagent_box(text)
    assert score_answer(text, ["Paris"]).extracted == memagent_prediction(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), BOX_TEXT, st.lists(ADVERSARIAL_TEXT, min_size=1, max_size=3))
def test_the_strict_reward_equals_memagents_on_generated_answers(prefix, box_text, golds):
    response = prefix + box_text
    assert strict_reward(response, golds) == memagent_strict(response, golds)
    assert strict_reward(f"\\boxed{{{golds[0]}}}", golds) == memagent_strict(f"\\boxed{{{golds[0]}}}", golds)
