"""What each section of an evaluation page is: its suite, task, length and headline metric, and
each question's score read by that metric from its results line.

One evaluation folder may hold RULER-HQA lengths (`results_50.jsonl`), RULER cells
(`results_niah_multivalue_8192.jsonl`) and LongBench tasks (`results_longbench_hotpotqa.jsonl`),
each scored by its own metric. A question is right, partly right or wrong by that metric as its
results line holds it: a trajectory record keeps HQA-style scores of the final answer (sub_em of a
niah_multivalue answer that found 1 of 4 values is 1.0 where string_match_all is 0.25), so it never
decides a score. Where a section comes from is, in order: its summary.json cell, the `suite` and
`task` of its results lines, the label's own shape (an older run's files).

Older summary.json files keep RULER cells under a separate `"ruler"` key with the split's score in
`sub_em`, and cells without `suite` (RULER-HQA's); `cells_of` reads both as the one list of cells
the suite contract names, and passes a file already in that shape through unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.ruler_scoring import QA_SPLITS, RULER_SPLITS
from mem_agent.evaluation.ruler_items import ruler_name
from mem_agent.evaluation.ruler_report import length_label

# Suites in the registry's order, with the title a page shows and each one's headline metric.
# TODO(suites): read these from the suite registry (evaluation/suites/) once it lands.
SUITE_TITLES = {"ruler_hqa": "RULER-HQA", "ruler": "RULER", "longbench": "LongBench QA"}
_HEADLINE = {"ruler_hqa": "sub_em", "longbench": "qa_f1"}
RULER_MAIN = "string_match_all"  # RULER's metric for every split but qa_1, qa_2 (those: sub_em)
HQA_SUITE = "ruler_hqa"  # what a cell or line without `suite` is: the only suite older runs knew
# Every per-item score a results line may hold, in the order a page lists them.
SCORE_FIELDS = (RULER_MAIN, "qa_f1", "sub_em", "em", "f1", "strict")
_LONGBENCH_PREFIX = "longbench_"


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
        return SUITE_TITLES.get(self.suite, self.suite)

    @property
    def length_text(self) -> str:
        """The length as its suite counts it: 50 docs, 8K tokens; "" where it has none."""
        if self.length is None:
            return ""
        return f"{length_label(self.length)} tokens" if self.suite == "ruler" else f"{self.length} docs"


def headline_metric(suite: str, task: str) -> str:
    if suite == "ruler":
        return "sub_em" if task in QA_SPLITS else RULER_MAIN
    return _HEADLINE.get(suite, "sub_em")


def cells_of(summary: Any) -> list[dict[str, Any]]:
    """summary.json's cells in the suite contract's shape: every `results` entry with its suite
    (none: RULER-HQA) and its headline metric named, then an older file's `"ruler"` entries."""
    if not isinstance(summary, dict):
        return []
    results = summary.get("results") if isinstance(summary.get("results"), list) else []
    cells = [_named(cell) for cell in results if isinstance(cell, dict)]
    labels = {cell.get("label") for cell in cells}
    older = summary.get("ruler") if isinstance(summary.get("ruler"), list) else []
    for entry in older:
        if isinstance(entry, dict) and entry.get("label") not in labels:
            cells.append(_named({"suite": "ruler", "task": entry.get("split")} | entry))
    return cells


def _named(cell: dict[str, Any]) -> dict[str, Any]:
    suite = cell.get("suite") or HQA_SUITE
    task = str(cell.get("task") or cell.get("split") or "hotpotqa")
    metric = cell.get("metric")
    if not isinstance(metric, str) or metric == "qa":  # "qa": an older RULER cell's QA metrics
        metric = headline_metric(suite, task)
    named = cell | {"suite": suite, "task": task, "metric": metric}
    if metric not in cell and isinstance(cell.get("sub_em"), int | float):
        named[metric] = cell["sub_em"]  # an older RULER cell held its split's score in sub_em
    return named


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
    metric = cell["metric"] if cell is not None else headline_metric(suite, task)
    return Section(label, suite, task, length, metric)


def _from_label(label: str) -> Section:
    if label.isdigit():
        return Section(label, HQA_SUITE, "hotpotqa", int(label), "sub_em")
    ruler = ruler_name(Path(f"eval_{label}.json"))
    if ruler is not None:
        return Section(label, "ruler", ruler.split, ruler.length, headline_metric("ruler", ruler.split))
    if label.startswith(_LONGBENCH_PREFIX):
        return Section(label, "longbench", label.removeprefix(_LONGBENCH_PREFIX), None, "qa_f1")
    return Section(label, HQA_SUITE, "hotpotqa", None, "sub_em")


def _page_order(section: Section) -> tuple[int, int, str, int, str]:
    suites = list(SUITE_TITLES)
    suite = suites.index(section.suite) if section.suite in suites else len(suites)
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
