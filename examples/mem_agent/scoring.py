"""Two answer verifiers, kept apart on purpose: the strict training reward and the reporting metrics.

**Strict reward (training, `strict_reward`).** MemAgent's RL signal. Cut the answer to its last
`STRICT_WINDOW_CHARS` (300) characters (code points, as a Python slice counts them), take the last
`\\boxed{...}` inside that cut, lower-case it and delete every whitespace character, and compare it
for equality with each ground truth treated the same way: 1.0 if any matches, else 0.0. The window
is applied before the search, so a box that opens before it does not count even when it closes
inside it; and when the last box in the window never closes (the answer ran out of tokens), the
reward is 0.0, as in MemAgent: the policy is taught to end its answer with one clean box. Nothing else is
normalised (punctuation and articles count), which keeps the signal binary and hard to game.

**Reporting metrics (evaluation, `score_answer`).** The numbers the paper quotes. The prediction is
the last complete box anywhere in the answer (no window); it and the gold answer are normalised the
SQuAD/HotpotQA way (lower case, punctuation deleted, the articles a/an/the removed, whitespace
collapsed), then scored by exact match (`em`), sub-string exact match (`sub_em`, MemAgent's
headline metric: either normalised string contains the other, compared character by character) and
token F1 (HotpotQA's rule: a yes/no/noanswer answer earns no partial credit). Like MemAgent's
evaluator they compare against the first ground truth (`answers[0]`); `reporting="max"` takes each
metric's best over all ground truths instead. No box means every reporting metric is 0.

**Why two, and why they disagree.** A reward must be cheap, deterministic and strict, or RL learns
to exploit its leniency (a sub-string reward pays for answers that list every candidate); a
benchmark figure must be comparable with published ones. The same answers therefore score
differently: "the Eiffel Tower" for "Eiffel Tower", "Paris, France" for "Paris" or a box followed
by 300 characters of explanation are 0 for the strict reward and 1 for sub_em. A model at about 50%
strict reward in its training curves can report about 80% sub_em on the benchmark; that gap is
expected, not a bug.

Decisions where the references are silent or fragile:
- Box syntax: `\\boxed{...}` with optional whitespace before the brace (`\\boxed {x}`); the
  brace-less `\\boxed x` and `\\fbox` are not answers. Braces are matched by counting, escaped ones
  (`\\{`) included. "Last" means the box that opens last, so `\\boxed{a \\boxed{b}}` gives `b`.
  `extract_boxed` (and so reporting) skips an unterminated box and returns an earlier complete one;
  the strict reward does not (see above), so a cut-off answer cannot earn it with an earlier box.
- Strict normalisation is only lower-case plus whitespace removal: MemAgent's reward reuses a
  LaTeX-math string normaliser whose other rewrites (`\\dfrac`, `^\\circ`, ...) mean nothing for
  HotpotQA answers.
- Unicode in the reporting metrics: text is NFKC-normalised first (composed and decomposed accents,
  full-width letters compare equal) and every character of Unicode category P* or S* counts as
  punctuation, so curly quotes, dashes and CJK full stops go the way ASCII punctuation does; on
  ASCII that is exactly `string.punctuation`. Accents stay ("zürich" is not "zurich"). Tokens are
  whitespace-separated, so an unspaced CJK answer is one token for F1.
- An empty normalised string is contained only in another empty one: a box holding nothing (or
  just "the") never sub-string-matches a real answer, and sub_em >= em still holds.
- No ground truths: every score is 0.0 (a reward must not raise mid-step; data loaders reject such
  rows). A bare string passed as ground truths is one answer, not a sequence of characters.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

STRICT_WINDOW_CHARS = 300

ReportingMode = Literal["first", "max"]

# The brace that opens a box; `\s*` accepts `\boxed {x}`, which LaTeX renders like `\boxed{x}`.
_BOX_OPENING = re.compile(r"\\boxed\s*\{")
_BRACE = re.compile(r"[{}]")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
# HotpotQA: these answers are all-or-nothing, "yes it is" must not earn partial credit for "yes".
_CLOSED_CLASS_ANSWERS = frozenset({"yes", "no", "noanswer"})


def _closing_braces(text: str, start: int) -> dict[int, int]:
    """Map each `{` at or after `start` to the `}` that closes it; unclosed ones are absent.

    One stack pass, so an answer full of unterminated boxes costs linear time rather than one scan
    to the end per box. Braces before `start` cannot change how a later `{` is closed.
    """
    closing: dict[int, int] = {}
    open_braces: list[int] = []
    for brace in _BRACE.finditer(text, start):
        if brace.group() == "{":
            open_braces.append(brace.start())
        elif open_braces:
            closing[open_braces.pop()] = brace.start()
    return closing


def _box_contents(text: str) -> list[str | None]:
    """Content of every box in the order they open; None for one that never closes.

    Both verifiers read boxes through this one function, so they agree on what a box is and
    differ only in the window, in how an unterminated last box is treated and in normalisation.
    """
    openings = [match.end() - 1 for match in _BOX_OPENING.finditer(text)]
    if not openings:
        return []
    closing = _closing_braces(text, openings[0])
    return [text[opening + 1 : closing[opening]] if opening in closing else None for opening in openings]


def extract_boxed(text: str) -> str | None:
    """Content of the last complete `\\boxed{...}` in `text`, nested braces kept; None if there is none.

    An unterminated box is skipped, so a reader still finds the answer given before a cut-off.
    """
    return next((content for content in reversed(_box_contents(text)) if content is not None), None)


def _as_answers(ground_truths: Sequence[str]) -> list[str]:
    """A list of answers; a bare str would otherwise iterate as one-character answers."""
    return [ground_truths] if isinstance(ground_truths, str) else list(ground_truths)


def _strict_normalise(text: str) -> str:
    return "".join(text.lower().split())


def strict_reward(response_text: str, ground_truths: Sequence[str]) -> float:
    """MemAgent's training reward, 1.0 or 0.0: the last box of the final 300 characters, compared
    after lower-casing and whitespace removal, max over ground truths.

    0.0 when the window holds no box, when its last box never closes, or when there are no truths.
    """
    boxes = _box_contents(response_text[-STRICT_WINDOW_CHARS:])
    boxed = boxes[-1] if boxes else None
    if boxed is None:
        return 0.0
    prediction = _strict_normalise(boxed)
    return float(any(prediction == _strict_normalise(truth) for truth in _as_answers(ground_truths)))


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"


def normalize_answer(text: str) -> str:
    """SQuAD/HotpotQA answer normalisation, Unicode-aware: NFKC, lower case, punctuation deleted
    (not replaced by a space: "U.S." is "us", "1,000" is "1000"), articles removed, spaces collapsed."""
    lowered = unicodedata.normalize("NFKC", text).lower()
    without_punctuation = "".join(char for char in lowered if not _is_punctuation(char))
    collapsed = " ".join(_ARTICLES.sub(" ", without_punctuation).split())
    # Deleting a mark can join a letter and an accent that now compose; NFC keeps this idempotent.
    return unicodedata.normalize("NFC", collapsed)


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when both normalise to the same string (two empty strings included), else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def substring_exact_match(prediction: str, gold: str) -> float:
    """MemAgent's sub_em: 1.0 when either normalised string contains the other.

    An empty normalised string is contained only in an empty one; otherwise a prediction such as
    "the" or "?" would match every answer.
    """
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    if not predicted or not expected:
        return float(predicted == expected)
    return float(predicted in expected or expected in predicted)


def token_f1(prediction: str, gold: str) -> float:
    """HotpotQA token F1 over normalised, whitespace-split tokens (repeats count by multiplicity).

    A yes/no/noanswer prediction or gold scores 0.0 unless both are equal; two empty answers score
    1.0 so that F1 >= EM always holds.
    """
    predicted, expected = normalize_answer(prediction), normalize_answer(gold)
    if predicted == expected:
        return 1.0
    if predicted in _CLOSED_CLASS_ANSWERS or expected in _CLOSED_CLASS_ANSWERS:
        return 0.0
    predicted_tokens, expected_tokens = predicted.split(), expected.split()
    overlap = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted_tokens)
    recall = overlap / len(expected_tokens)
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class AnswerScores:
    """Every score of one final answer: the reporting metrics, the strict reward and what was read."""

    em: float
    sub_em: float
    f1: float
    strict: float
    has_box: bool
    extracted: str | None  # content of the last box anywhere in the answer (no window)


def score_answer(
    response_text: str, ground_truths: Sequence[str], *, reporting: ReportingMode = "first"
) -> AnswerScores:
    """Score one final answer with both verifiers.

    The reporting metrics compare against `answers[0]` by default, as MemAgent's evaluator does;
    `reporting="max"` takes each metric's best over all ground truths (they may come from different
    ones). The strict reward is always the max over all ground truths, as in training.
    """
    if reporting not in get_args(ReportingMode):
        raise ValueError(f"reporting={reporting!r} must be one of {get_args(ReportingMode)}")
    answers = _as_answers(ground_truths)
    extracted = extract_boxed(response_text)
    strict = strict_reward(response_text, answers)
    golds = answers[:1] if reporting == "first" else answers
    if extracted is None or not golds:
        return AnswerScores(0.0, 0.0, 0.0, strict, has_box=extracted is not None, extracted=extracted)
    return AnswerScores(
        em=max(exact_match(extracted, gold) for gold in golds),
        sub_em=max(substring_exact_match(extracted, gold) for gold in golds),
        f1=max(token_f1(extracted, gold) for gold in golds),
        strict=strict,
        has_box=True,
        extracted=extracted,
    )
