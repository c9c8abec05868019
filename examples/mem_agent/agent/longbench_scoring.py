"""LongBench (v1) QA: its six English QA tasks, and how an answer to one of them is scored.

LongBench scores these tasks with one metric, `qa_f1_score` (THUDM/LongBench at 2e00731,
`LongBench/eval.py:18-25` maps narrativeqa, qasper, multifieldqa_en, hotpotqa, 2wikimqa and
musique to it). Its rules, restated here and reproduced by `qa_f1`:

- **Normalisation** (`LongBench/metrics.py:12-28`, `normalize_answer`): Python's `str.lower`, the 32
  ASCII punctuation characters deleted (not replaced by a space), the whole words a/an/the replaced
  by a space, whitespace runs collapsed. These are HotpotQA's rules, so `scoring.normalize_answer`
  is the one implementation (with MEM_FOLD_UNICODE it folds Unicode first, as for RULER-HQA).
- **Item F1** (`metrics.py:118-134`, `qa_f1_score` and `f1_score`): token F1 of the normalised,
  whitespace-split prediction against one answer, repeats counted by multiplicity, 0 when no token
  overlaps (two answers that both normalise to nothing included). Unlike HotpotQA's F1 there is no
  yes/no rule: "yes it is" earns 0.5 against "yes".
- **Several answers** (`eval.py:66-75`, `scorer`): the item scores the best F1 over all its answers,
  0 when it has none. The prediction is cut at its first line only for trec, triviaqa, samsum and
  lsht (`eval.py:70-71`), so never for these six tasks: the whole prediction is scored.
- **The task's figure** (`eval.py:75`): the mean over every prediction (an empty one scores 0 and
  counts), times 100, rounded to 2 decimals. That aggregation is the evaluator's, not this module's.

**What is read as the prediction.** LongBench scores the model's whole generated text. Our memory
agent gives its final answer in `\\boxed{}`, so by default the prediction is the box, read as for
every other suite (`scoring.answer_region` and `scoring.extract_boxed`: the last box after the
last `</think>`), and an answer without a box scores 0. `raw=True` (the evaluator's reserved
`--longbench-raw`) scores LongBench's way, the whole visible answer (`answer_region`): for an agent
whose final prompt asks for plain text. A boxed answer scored raw loses: the backslash and braces
are deleted as punctuation, so `\\boxed{Paris}` is the one token "boxedparis". docs/fidelity.md
lists the difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mem_agent.agent.scoring import (
    OFFICIAL,
    ReportingRules,
    answer_region,
    extract_boxed,
    normalize_answer,
    overlap_f1,
    strict_reward,
)

# LongBench v1's English single- and multi-document QA tasks, in the order of its pred.py and tables.
LONGBENCH_QA_TASKS = ("narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa", "musique")
QA_F1 = "qa_f1"


def qa_f1(prediction: str, answers: Sequence[str], rules: ReportingRules = OFFICIAL) -> float:
    """LongBench's score of one item: the best token F1 of `prediction` over `answers` (see the
    module docstring), in [0, 1]; 0.0 for no answers. A bare str is one answer."""
    golds = [answers] if isinstance(answers, str) else answers
    predicted = normalize_answer(prediction, rules).split()
    return max((overlap_f1(predicted, normalize_answer(gold, rules).split()) for gold in golds), default=0.0)


@dataclass(frozen=True)
class LongBenchScores:
    """One final answer's scores on a LongBench QA task: `qa_f1` is the headline; `strict` is the
    training reward (max over answers), as every suite records it; `extracted` is the text that
    was scored (the box, or the whole answer when raw), None when there was no box."""

    qa_f1: float
    strict: float
    extracted: str | None

    def fields(self) -> dict[str, float]:
        """The scores a result record holds."""
        return {QA_F1: self.qa_f1, "strict": self.strict}


def score_longbench_answer(
    response_text: str, answers: Sequence[str], *, raw: bool = False, rules: ReportingRules = OFFICIAL
) -> LongBenchScores:
    """Score one final answer on a LongBench QA task: the box by default (no box scores 0), the
    whole visible answer with `raw` (see the module docstring)."""
    strict = strict_reward(response_text, answers)
    scored = answer_region(response_text) if raw else extract_boxed(answer_region(response_text))
    if scored is None:
        return LongBenchScores(0.0, strict, None)
    return LongBenchScores(qa_f1(scored, answers, rules), strict, scored)
