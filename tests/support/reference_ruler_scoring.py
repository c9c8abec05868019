"""MemAgent's scoring of RULER's general tasks, restated from its specification for the tests.

Written from the rules below, not from mem_agent.agent.ruler_scoring, and in another style
(character scans, exact fractions); nothing here is imported by the package.

MemAgent (`taskutils/memory_eval/ruler_general.py`, `utils/__init__.py`), client `recurrent-boxed`:
- the prediction is read from the response as for RULER-HQA (`reference_scoring.memagent_prediction`);
- a split whose name holds "qa": with a prediction, EM, sub-EM and F1 (official rules) against the
  first reference (`outputs[0]`); none: 0 on all three;
- any other split: with a prediction, RULER's string_match_all over every reference (the count of
  references whose lower-cased text occurs in the lower-cased prediction, over the count of
  references), rounded to two decimals (Python's round, half to even on the exact value); none: 0.
"""

from __future__ import annotations

from fractions import Fraction

from support.reference_scoring import memagent_prediction, memagent_reporting


def _occurs(needle: str, haystack: str) -> bool:
    width = len(needle)
    return any(haystack[start : start + width] == needle for start in range(len(haystack) - width + 1))


def ruler_string_match_all(prediction: str, references: list[str]) -> Fraction:
    found = sum(1 for reference in references if _occurs(reference.lower(), prediction.lower()))
    return Fraction(found, len(references))


def memagent_ruler_judge(response: str, references: list[str], split: str) -> dict[str, float]:
    """MemAgent's judge_* values of one item: {"sub_em"} or, for qa splits, {"sub_em", "em", "f1"}."""
    if "qa" in split:
        em, sub_em, f1 = memagent_reporting(response, references[0])
        return {"sub_em": float(sub_em), "em": float(em), "f1": float(f1)}
    prediction = memagent_prediction(response)
    if not prediction:
        return {"sub_em": 0.0}
    return {"sub_em": float(round(ruler_string_match_all(prediction, references), 2))}
