"""Our RULER general scoring against MemAgent's, restated (support/reference_ruler_scoring.py), on
many generated predictions for every split: 0 disagreements."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem_agent.agent.ruler_scoring import QA_SPLITS, RULER_SPLITS, score_ruler_answer, string_match_all
from support.reference_ruler_scoring import memagent_ruler_judge, ruler_string_match_all

# Reference strings of the kinds RULER's splits have: numbers, uuids, words, names, answers with odd case.
REFERENCES = (
    "4821937",
    "0",
    "3f2a9c1e-77b0-4d2e-9a41-0c5e2b7d9f10",
    "VAR QXKZL",
    "lantern",
    "Straße",
    "İstanbul",
    "ǅemal",
    "Orla Fenwick",
    "Canary Islands, Spain",
    "the",
    "yes",
    "1,000",
    "東京",
    "ΣΊΣΥΦΟΣ",
    "{x}",
)
FILLERS = ("", " ", ", ", " and ", "\n", "the answer: ", "{", "}", "$", "\\boxed", "</think>", "zz")


def _case(rng: random.Random, text: str) -> str:
    return rng.choice([text, text.upper(), text.lower(), text.title(), text.swapcase()])


def _response(rng: random.Random, references: list[str]) -> str:
    """A model answer: some references (re-cased, among fillers) in a box of one of the forms
    the box reader knows, sometimes after thinking, sometimes unboxed or cut."""
    found = rng.sample(references, rng.randint(0, len(references)))
    pieces = [piece for ref in found for piece in (_case(rng, ref), rng.choice(FILLERS))]
    content = "".join(pieces)
    form = rng.randrange(7)
    body = {
        0: f"\\boxed{{{content}}}",
        1: f"$\\boxed {content}$",
        2: f"\\boxed{{{content}",  # cut off inside its box
        3: content,  # no box
        4: f"\\boxed{{a}} then \\boxed{{{content}}}",
        5: f"\\fbox{{{content}}}",
        6: "\\boxed{}",
    }[form]
    thinking = rng.choice(["", "<think>\\boxed{4821937}</think>", "</think>", "<think>lantern</think>\n"])
    return thinking + body + rng.choice(["", " ", "\n\n"])


def _generated_cases(count: int, seed: int) -> list[tuple[str, list[str], str]]:
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        split = RULER_SPLITS[index % len(RULER_SPLITS)]
        references = rng.sample(REFERENCES, rng.choice([1, 1, 2, 3, 4, 5, 10]))
        cases.append((split, references, _response(rng, references)))
    return cases


CASES = _generated_cases(6500, seed=30)


def _ours(response: str, references: list[str], split: str) -> dict[str, float]:
    scores = score_ruler_answer(response, references, split)
    return {key: value for key, value in scores.fields().items() if key != "strict"}


def test_every_split_scores_as_memagent_on_thousands_of_generated_answers():
    assert {split for split, _, _ in CASES} == set(RULER_SPLITS)
    shares = {_ours(r, refs, s)["sub_em"] for s, refs, r in CASES if s not in QA_SPLITS}
    assert {0.0, 0.33, 0.5, 0.67, 1.0} <= shares  # partial matches are among the cases, not only 0 and 1
    disagreements = [
        (split, references, response)
        for split, references, response in CASES
        if _ours(response, references, split) != pytest.approx(memagent_ruler_judge(response, references, split))
    ]
    assert disagreements == []


def test_qa_splits_have_em_and_f1_and_the_others_only_the_share():
    response = "\\boxed{Orla Fenwick}"
    assert set(score_ruler_answer(response, ["Orla Fenwick"], "qa_2").fields()) == {"sub_em", "em", "f1", "strict"}
    assert set(score_ruler_answer(response, ["Orla Fenwick"], "niah_single_1").fields()) == {"sub_em", "strict"}


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=30), st.lists(st.text(min_size=0, max_size=6), min_size=1, max_size=5))
def test_string_match_all_equals_rulers_on_any_text(prediction, references):
    expected = ruler_string_match_all(prediction, references)
    assert string_match_all(prediction, references) == pytest.approx(float(expected))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(RULER_SPLITS),
    st.lists(st.sampled_from(REFERENCES), min_size=1, max_size=4),
    st.lists(st.sampled_from([*REFERENCES, *FILLERS, "\\boxed{", "\\boxed ", "}"]), max_size=8).map("".join),
)
def test_any_assembled_answer_scores_as_memagent(split, references, response):
    assert _ours(response, references, split) == pytest.approx(memagent_ruler_judge(response, references, split))
