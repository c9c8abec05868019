"""Two answer verifiers, kept apart on purpose: the strict training reward and the reporting metrics.

**Strict reward (training).** MemAgent's RL signal: take the text's last 300 characters, find the
last complete `\\boxed{...}` in them, lower-case it and delete all whitespace, and compare it for
exact equality with each ground truth treated the same way; 1.0 on any match, else 0.0. A box
that starts before the window does not count, so an answer must end with its box. Strict and
binary on purpose: the policy learns to put one clean answer at the end.

**Reporting metrics (evaluation).** The numbers papers quote: the content of the last box anywhere
in the answer, normalised the SQuAD/HotpotQA way (lower case, punctuation removed, the articles
a/an/the removed, whitespace collapsed), then exact match (em), sub-string exact match (sub_em:
either string contains the other, MemAgent's headline metric) and token F1. Like MemAgent's
evaluation they compare against the first ground truth (`answers[0]`); `reporting="max"` takes the
best over all of them.

Why the two disagree (a common surprise): "the Eiffel Tower" vs "Eiffel Tower", or
"Paris, France" vs "Paris", are wrong for the strict reward but right for sub_em. A model that
scores about 50% strict can score about 80% sub_em on the same answers.

Punctuation is any Unicode punctuation or symbol character (category P* or S*), so curly quotes
and dashes normalise like ASCII ones. An empty normalised prediction never counts as contained in
a ground truth: `sub_em("", gold)` is 0.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

STRICT_WINDOW_CHARS = 300
_BOX_OPEN = re.compile(r"\\boxed\s*\{")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CLOSED_CLASS = {"yes", "no", "noanswer"}


def _boxed_spans(text: str) -> list[tuple[int, str]]:
    """(start, content) of every complete \\boxed{...}, braces matched by counting."""
    spans = []
    for match in _BOX_OPEN.finditer(text):
        depth, position = 1, match.end()
        while position < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            position += 1
        if depth == 0:
            spans.append((match.start(), text[match.end() : position - 1]))
    return spans


def extract_boxed(text: str) -> str | None:
    """Content of the last complete \\boxed{...} in `text` (nested braces kept), or None."""
    spans = _boxed_spans(text)
    return spans[-1][1] if spans else None


def _strict_normalise(text: str) -> str:
    return "".join(text.lower().split())


def strict_reward(response_text: str, ground_truths: Sequence[str]) -> float:
    """MemAgent's training reward: last box in the final 300 characters, exact after lower-case
    and whitespace removal, max over ground truths. No ground truths: 0.0."""
    boxed = extract_boxed(response_text[-STRICT_WINDOW_CHARS:])
    if boxed is None:
        return 0.0
    prediction = _strict_normalise(boxed)
    return 1.0 if any(prediction == _strict_normalise(truth) for truth in ground_truths) else 0.0


def normalize_answer(text: str) -> str:
    lowered = text.lower()
    no_punctuation = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in lowered)
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def substring_exact_match(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    if not predicted or not expected:
        return float(predicted == expected and bool(predicted))
    return float(predicted in expected or expected in predicted)


def token_f1(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    if (predicted in _CLOSED_CLASS or expected in _CLOSED_CLASS) and predicted != expected:
        return 0.0
    common = Counter(predicted.split()) & Counter(expected.split())
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted.split())
    recall = overlap / len(expected.split())
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class AnswerScores:
    em: float
    sub_em: float
    f1: float
    strict: float
    has_box: bool
    extracted: str | None


def score_answer(
    response_text: str, ground_truths: Sequence[str], *, reporting: Literal["first", "max"] = "first"
) -> AnswerScores:
    """Every metric of one answer. Without a box, the reporting metrics are 0."""
    extracted = extract_boxed(response_text)
    strict = strict_reward(response_text, ground_truths)
    golds = list(ground_truths[:1] if reporting == "first" else ground_truths)
    if extracted is None or not golds:
        return AnswerScores(0.0, 0.0, 0.0, strict, extracted is not None, extracted)
    return AnswerScores(
        em=max(exact_match(extracted, gold) for gold in golds),
        sub_em=max(substring_exact_match(extracted, gold) for gold in golds),
        f1=max(token_f1(extracted, gold) for gold in golds),
        strict=strict,
        has_box=True,
        extracted=extracted,
    )
