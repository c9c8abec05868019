"""RULER's general tasks: which splits there are, and how an answer to each is scored.

MemAgent's `ruler_general.py` reads the answer the way its RULER-HQA evaluator does (the box after
the last `</think>`, `scoring.answer_region` and `scoring.extract_boxed`) and then scores it by the
split's kind:

- **string_match_all** (every split but `qa_*`, RULER's own metric for them): the share of the
  reference strings (`outputs`) that occur in the answer, both lower-cased with Python's
  `str.lower`, as a plain sub-string test (no normalisation, no word boundaries). MemAgent rounds
  each item's share to two decimals before averaging (`round(x, 2)`): reproduced, since its
  published figures are means of those rounded shares (1 of 3 words found is 0.33, not 0.333...).
- **qa** (`qa_1` SQuAD, `qa_2` HotpotQA): the RULER-HQA reporting metrics (sub_em, official EM and
  F1) against the first reference only, as for RULER-HQA (`scoring.score_answer`).

No answer (no box, or an empty one) scores 0 on every metric, as in MemAgent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mem_agent.agent.scoring import OFFICIAL, ReportingRules, answer_region, extract_boxed, score_answer, strict_reward

# RULER's thirteen general splits, in the order of MemAgent's argument list and of the paper's heat map.
RULER_SPLITS = (
    "niah_single_1",
    "niah_single_2",
    "niah_single_3",
    "niah_multikey_1",
    "niah_multikey_2",
    "niah_multikey_3",
    "niah_multivalue",
    "niah_multiquery",
    "vt",
    "cwe",
    "fwe",
    "qa_1",
    "qa_2",
)
QA_SPLITS = frozenset({"qa_1", "qa_2"})
# The splits and lengths MemAgent's run.py evaluates (qa_1 only up to 262144 tokens).
MEMAGENT_SPLITS = tuple(split for split in RULER_SPLITS if split not in ("cwe", "qa_2"))
RULER_LENGTHS = (8192, 16384, 32768, 65536, 131072, 262144, 524288)
QA_1_LONGEST = 262144
STRING_MATCH_ALL = "string_match_all"
QA_METRIC = "qa"


def metric_of(split: str) -> str:
    """The metric a split is scored with: string_match_all, or the QA metrics for qa_*."""
    return QA_METRIC if split in QA_SPLITS else STRING_MATCH_ALL


def string_match_all(prediction: str, references: Sequence[str]) -> float:
    """RULER's string_match_all for one item: the share of references found in the prediction,
    case-insensitively (0.0 for no references)."""
    if not references:
        return 0.0
    lowered = prediction.lower()
    return sum(1.0 if reference.lower() in lowered else 0.0 for reference in references) / len(references)


@dataclass(frozen=True)
class RulerScores:
    """One answer's scores on a RULER general split. `sub_em` is the split's headline score: the
    rounded string_match_all share, or sub-EM for qa_*; `em` and `f1` exist only for qa_*."""

    sub_em: float
    em: float | None
    f1: float | None
    strict: float
    extracted: str | None

    def fields(self) -> dict[str, float]:
        """The scores a result record holds."""
        values = {"sub_em": self.sub_em, "strict": self.strict}
        if self.em is not None and self.f1 is not None:
            values |= {"em": self.em, "f1": self.f1}
        return values


def score_ruler_answer(
    response_text: str, outputs: Sequence[str], split: str, *, rules: ReportingRules = OFFICIAL
) -> RulerScores:
    """Score one final answer on `split` as MemAgent's ruler_general.py does (see the module docstring)."""
    if split in QA_SPLITS:
        scores = score_answer(response_text, outputs, rules=rules)
        return RulerScores(scores.sub_em, scores.em, scores.f1, scores.strict, scores.extracted)
    extracted = extract_boxed(answer_region(response_text))
    share = round(string_match_all(extracted, outputs), 2) if extracted else 0.0
    return RulerScores(share, None, None, strict_reward(response_text, outputs), extracted)
