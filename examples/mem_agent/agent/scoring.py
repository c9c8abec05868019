"""Two answer verifiers, kept apart on purpose: the strict training reward and the reporting metrics.

Both reproduce their references by default. docs/fidelity.md's scoring table lists every place
we differ and why; the tests compare us with the references' rules restated from their specification.

**Reading the box (`extract_boxed`, both verifiers): MemAgent's rule.** If the text holds `\\boxed `
(one space) anywhere, the answer is what follows its last occurrence, up to the first `$` (the
brace-less form LaTeX also accepts, `$\\boxed 5$`). Otherwise the last `\\boxed` of the text is the
answer's box: it must open with `{` at once, and its content runs to the matching `}` (every brace
counts, escaped ones too). When that last box never closes, or `\\boxed` is followed by anything
but `{`, there is no answer: an earlier box is never used instead, so an answer cut off by the
token limit inside its box scores 0. `\\fbox{}` is not an answer (MemAgent's reward scores it 0
and its evaluator stops with an assertion error).

**Strict reward (training, `strict_reward`): MemAgent's RL signal.** Cut the answer to its last
`STRICT_WINDOW_CHARS` (300) characters (code points), lower-case the cut, read its box as above,
and compare it for equality with each lower-cased ground truth after both go through the same
rewrites (MemAgent's reward reuses a LaTeX-answer normaliser: newlines and spaces deleted, `\\!`,
`\\left`, `\\right`, `^\\circ`, `\\$`, `\\%` deleted, `tfrac`/`dfrac` to `frac`, `\\\\` to `\\`,
` .`/`{.` to ` 0.`/`{0.`). 1.0 if any ground truth matches, else 0.0. Only `\\n` and ` ` count as
whitespace here: a tab or a no-break space in the box makes it wrong, as in MemAgent. Punctuation
and articles count, which keeps the signal binary and hard to game.

**Reporting metrics (evaluation, `score_answer`): the official HotpotQA EM and F1, MemAgent's
sub_em.** The box is read from the text after the last `</think>` (the whole answer when there is
none or nothing follows it), as MemAgent's evaluator does; a missing or empty box scores 0 on every
metric. Normalisation (`normalize_answer`) is `hotpot_evaluate_v1.py`'s: Python's `str.lower`,
the 32 ASCII punctuation characters deleted (not replaced by a space: "U.S." is "us"), the whole
words a/an/the replaced by a space, whitespace runs collapsed. EM compares normalised strings; F1
is token F1 over whitespace-split normalised tokens, 0 when nothing overlaps (two answers that both
normalise to nothing score EM 1, F1 0), and a yes/no/noanswer answer earns F1 only by equality.
sub_em (MemAgent's headline metric) is 1 when either normalised string contains the other,
character by character ("art" is inside "stuttgart"). Like MemAgent's evaluator they compare
against the first ground truth; `reporting="max"` takes each metric's best over all of them.

`ReportingRules` holds the two opt-in deviations (MEM_FOLD_UNICODE, MEM_SUB_EM_GUARD):
- `fold_unicode`: NFKC first (composed and decomposed accents, full-width forms compare equal),
  every Unicode punctuation or symbol character (categories P*, S*) deleted like ASCII punctuation,
  NFC at the end so that normalising twice changes nothing. The official rules keep curly quotes,
  dashes and decomposed accents as characters of the answer.
- `empty_guard`: an answer that normalises to nothing (`\\boxed{the}`, `\\boxed{?}`) sub-string-
  matches only another empty one. MemAgent's sub_em finds the empty string inside every answer.

**Why two verifiers, and why they disagree.** A reward must be cheap, deterministic and strict,
or RL learns to exploit its leniency (a sub-string reward pays for answers that list every
candidate); a benchmark figure must be comparable with published ones. "the Eiffel Tower" for
"Eiffel Tower", "Paris, France" for "Paris" or a box followed by 300 characters of explanation are 0
for the strict reward and 1 for sub_em: a model at about 50% strict reward in training can report
about 80% sub_em. That gap is expected, not a bug.

No ground truths score 0.0 everywhere (a reward must not raise mid-step), and a bare string
passed as ground truths is one answer, not a sequence of characters.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

STRICT_WINDOW_CHARS = 300
THINK_END = "</think>"

ReportingMode = Literal["first", "max"]

_BOXED = "\\boxed"
_BOXED_SPACED = "\\boxed "  # MemAgent's brace-less form; the answer ends at the next `$`
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
# HotpotQA: these answers are all-or-nothing, "yes it is" must not earn partial credit for "yes".
_CLOSED_CLASS_ANSWERS = frozenset({"yes", "no", "noanswer"})
# MemAgent's strict comparison, in its order: rewrites of a LaTeX-answer normaliser (a MATH
# evaluation harness's), then every ASCII space deleted.
_STRICT_REWRITES = (
    ("\n", ""),
    ("\\!", ""),
    ("\\\\", "\\"),
    ("tfrac", "frac"),
    ("dfrac", "frac"),
    ("\\left", ""),
    ("\\right", ""),
    ("^{\\circ}", ""),
    ("^\\circ", ""),
    ("\\$", ""),
    ("\\%", ""),
    (" .", " 0."),
    ("{.", "{0."),
    (" ", ""),
)


@dataclass(frozen=True)
class ReportingRules:
    """How the reporting metrics read text; the defaults are the official evaluator's and MemAgent's."""

    fold_unicode: bool = False
    empty_guard: bool = False

    @classmethod
    def of(cls, settings: _ScoringSettings) -> ReportingRules:
        """The rules a MemAgentConfig (MEM_FOLD_UNICODE, MEM_SUB_EM_GUARD) asks for."""
        return cls(fold_unicode=settings.fold_unicode, empty_guard=settings.sub_em_guard)


class _ScoringSettings(Protocol):
    @property
    def fold_unicode(self) -> bool: ...
    @property
    def sub_em_guard(self) -> bool: ...


OFFICIAL = ReportingRules()


def matching_brace(text: str, opening: int) -> int | None:
    """Index of the `}` that closes the `{` at `opening`, or None when the text ends first."""
    depth = 0
    for index in range(opening, len(text)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def extract_boxed(text: str) -> str | None:
    """The answer of MemAgent's last box (see the module docstring); None when there is none."""
    spaced = text.rfind(_BOXED_SPACED)
    if spaced >= 0:
        return text[spaced + len(_BOXED_SPACED) :].split("$", 1)[0]
    start = text.rfind(_BOXED)
    opening = start + len(_BOXED)
    if start < 0 or not text.startswith("{", opening):
        return None
    closing = matching_brace(text, opening)
    return None if closing is None else text[opening + 1 : closing]


def after_think(text: str) -> str:
    """MemAgent's evaluation client (`extract_solution`): the text after the last `</think>`,
    stripped (empty when nothing follows it), else the text unchanged."""
    return text.rsplit(THINK_END, 1)[1].strip() if THINK_END in text else text


def answer_region(response_text: str) -> str:
    """The text MemAgent's evaluator reads the box from: after the last `</think>`, stripped, or
    the whole (stripped) answer when it has no `</think>` or nothing follows it."""
    whole = response_text.strip()
    return after_think(whole) or whole


def _as_answers(ground_truths: Sequence[str]) -> list[str]:
    """A list of answers; a bare str would otherwise iterate as one-character answers."""
    return [ground_truths] if isinstance(ground_truths, str) else list(ground_truths)


def _strict_normalise(text: str) -> str:
    for old, new in _STRICT_REWRITES:
        text = text.replace(old, new)
    return text


def strict_reward(response_text: str, ground_truths: Sequence[str]) -> float:
    """MemAgent's training reward, 1.0 or 0.0: the box of the lower-cased final 300 characters,
    compared after MemAgent's rewrites, max over ground truths.

    0.0 when the window holds no readable box, when its last box never closes, or when there are no truths.
    """
    boxed = extract_boxed(response_text[-STRICT_WINDOW_CHARS:].lower())
    if boxed is None:
        return 0.0
    prediction = _strict_normalise(boxed)
    return float(any(prediction == _strict_normalise(truth.lower()) for truth in _as_answers(ground_truths)))


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _is_punctuation(char: str, rules: ReportingRules) -> bool:
    if rules.fold_unicode:
        return unicodedata.category(char)[0] in "PS"
    return char in _ASCII_PUNCTUATION


def normalize_answer(text: str, rules: ReportingRules = OFFICIAL) -> str:
    """HotpotQA's answer normalisation: lower case, punctuation deleted, articles removed, spaces
    collapsed; with `rules.fold_unicode`, Unicode-aware (see the module docstring)."""
    lowered = (_fold(text) if rules.fold_unicode else text).lower()
    without_punctuation = "".join(char for char in lowered if not _is_punctuation(char, rules))
    collapsed = " ".join(_ARTICLES.sub(" ", without_punctuation).split())
    # Deleting a mark can join a letter and an accent that now compose; NFC keeps folding idempotent.
    return unicodedata.normalize("NFC", collapsed) if rules.fold_unicode else collapsed


def exact_match(prediction: str, gold: str, rules: ReportingRules = OFFICIAL) -> float:
    """1.0 when both normalise to the same string (two empty strings included), else 0.0."""
    return float(normalize_answer(prediction, rules) == normalize_answer(gold, rules))


def substring_exact_match(prediction: str, gold: str, rules: ReportingRules = OFFICIAL) -> float:
    """MemAgent's sub_em: 1.0 when either normalised string contains the other.

    The empty string is inside every string, so an answer that normalises to nothing matches
    everything, as in MemAgent; `rules.empty_guard` makes it match only another empty one.
    """
    predicted, expected = normalize_answer(prediction, rules), normalize_answer(gold, rules)
    if rules.empty_guard and not (predicted and expected):
        return float(predicted == expected)
    return float(expected in predicted or predicted in expected)


def token_f1(prediction: str, gold: str, rules: ReportingRules = OFFICIAL) -> float:
    """HotpotQA token F1 over normalised, whitespace-split tokens (repeats count by multiplicity).

    0.0 when no token overlaps (two empty answers included), and a yes/no/noanswer prediction or
    gold scores 0.0 unless both are equal.
    """
    predicted, expected = normalize_answer(prediction, rules), normalize_answer(gold, rules)
    if predicted != expected and (predicted in _CLOSED_CLASS_ANSWERS or expected in _CLOSED_CLASS_ANSWERS):
        return 0.0
    return overlap_f1(predicted.split(), expected.split())


def overlap_f1(predicted_tokens: Sequence[str], expected_tokens: Sequence[str]) -> float:
    """F1 of two token lists' overlap, repeats counted by multiplicity; 0.0 when none overlaps.

    The one token F1 of the package: HotpotQA's (`token_f1`) and LongBench's (`longbench_scoring`)
    differ only in what they do before it.
    """
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
    extracted: str | None  # the box's content, read from `answer_region` (no window)


def score_answer(
    response_text: str,
    ground_truths: Sequence[str],
    *,
    reporting: ReportingMode = "first",
    rules: ReportingRules = OFFICIAL,
) -> AnswerScores:
    """Score one final answer with both verifiers.

    The reporting metrics compare against `answers[0]` by default, as MemAgent's evaluator does;
    `reporting="max"` takes each metric's best over all ground truths (they may come from different
    ones). A missing or empty box scores 0 on every reporting metric, as in MemAgent's evaluator.
    The strict reward is always the max over all ground truths, as in training.
    """
    if reporting not in get_args(ReportingMode):
        raise ValueError(f"reporting={reporting!r} must be one of {get_args(ReportingMode)}")
    answers = _as_answers(ground_truths)
    extracted = extract_boxed(answer_region(response_text))
    strict = strict_reward(response_text, answers)
    golds = answers[:1] if reporting == "first" else answers
    if not extracted or not golds:
        return AnswerScores(0.0, 0.0, 0.0, strict, has_box=extracted is not None, extracted=extracted)
    return AnswerScores(
        em=max(exact_match(extracted, gold, rules) for gold in golds),
        sub_em=max(substring_exact_match(extracted, gold, rules) for gold in golds),
        f1=max(token_f1(extracted, gold, rules) for gold in golds),
        strict=strict,
        has_box=True,
        extracted=extracted,
    )
