"""What each section of an evaluation page is: its suite, task, length and headline metric, and
each question's score read by that metric from its results line.

One evaluation folder may hold RULER-HQA lengths (`results_50.jsonl`), RULER cells
(`results_niah_multivalue_8192.jsonl`) and LongBench tasks (`results_longbench_hotpotqa.jsonl`),
each scored by its own metric. A question is right, partly right or wrong by that metric as its
results line holds it: a trajectory record keeps HQA-style scores of the final answer (sub_em of a
niah_multivalue answer that found 1 of 4 values is 1.0 where string_match_all is 0.25), so it never
decides a score. Where a section comes from is, in order: its summary.json cell, the `suite` and
`task` of its results lines, the label's own shape (an older run's files).

Older summary.json files (RULER cells under a separate `"ruler"` key with the split's score in
`sub_em`, cells without `suite`) reach the page already in the suites' shape: summary.json has one
reader (evaluation/summary_file.py), which converts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.evaluation.ruler_report import length_label
from mem_agent.evaluation.suites import cell_of_label, headline_of, suite_rank, suite_title

RULER_MAIN = "string_match_all"  # RULER's metric for every split but qa_1, qa_2 (those: sub_em)
# Every per-item score a results line may hold, in the order a page lists them.
SCORE_FIELDS = (RULER_MAIN, "qa_f1", "sub_em", "em", "f1", "strict")


@dataclass(frozen=True)
class Section:
    """One results file of an evaluation: `length` None where the suite has none (LongBench)."""

    label: str
    suite: str
    task: str
    length: int | None
    metric: str

    @property
    def title(self) -> str:
        return suite_title(self.suite)

    @property
    def length_text(self) -> str:
        """The length as its suite counts it: 50 docs, 8K tokens; "" where it has none."""
        if self.length is None:
            return ""
        return f"{length_label(self.length)} tokens" if self.suite == "ruler" else f"{self.length} docs"


def cells_of(summary: Any) -> list[dict[str, Any]]:
    """summary.json's cells, as the one reader (evaluation/summary_file.py) gives them: already in
    the suites' shape, an older file's RULER cells and cells without `suite` included."""
    return list(summary.get("results") or []) if isinstance(summary, dict) else []


def sections_of(summary: Any, labels: list[str], first_lines: dict[str, dict[str, Any]]) -> dict[str, Section]:
    """Each label's section (see the module's docstring for where it comes from), in page order:
    suites in the registry's order, RULER's splits in RULER's, then lengths."""
    cells = {str(cell.get("label")): cell for cell in cells_of(summary)}
    found = [_section(label, cells.get(label), first_lines.get(label) or {}) for label in labels]
    return {section.label: section for section in sorted(found, key=_page_order)}


def _section(label: str, cell: dict[str, Any] | None, line: dict[str, Any]) -> Section:
    guessed = _from_label(label)
    source = cell or line
    suite = str(source.get("suite") or guessed.suite)
    task = str(source.get("task") or guessed.task)
    length = source.get("length") if cell is not None else guessed.length
    if not (isinstance(length, int) and not isinstance(length, bool)):
        length = guessed.length
    metric = cell["metric"] if cell is not None else headline_of(suite, task)
    return Section(label, suite, task, length, metric)


def _from_label(label: str) -> Section:
    cell = cell_of_label(label)
    return Section(label, cell.suite, cell.task, cell.length, headline_of(cell.suite, cell.task))


def _page_order(section: Section) -> tuple[int, int, str, int, str]:
    suite = suite_rank(section.suite)
    task = RULER_SPLITS.index(section.task) if section.task in RULER_SPLITS else len(RULER_SPLITS)
    length = section.length if section.length is not None else 1 << 62  # a length-less label last
    return (suite, task, section.task, length, section.label)


def result_scores(result: dict[str, Any], section: Section) -> dict[str, float]:
    """The scores of one results line, the headline first. A RULER line of a non-QA split written
    before `string_match_all` had its own field holds that share in `sub_em`: it is named for what
    it is, so no page calls it sub_em."""
    scores = {name: float(result[name]) for name in SCORE_FIELDS if _real(result.get(name))}
    if section.suite == "ruler" and section.metric == RULER_MAIN and RULER_MAIN not in scores and "sub_em" in scores:
        scores[RULER_MAIN] = scores.pop("sub_em")
    headline = {section.metric: scores.pop(section.metric)} if section.metric in scores else {}
    return headline | scores


def _real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
