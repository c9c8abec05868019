"""Evaluation suites, each one registration (base.Suite): RULER-HQA, RULER's general tasks and
LongBench QA. The evaluator, summary.json and every view (viewer, compare, the paper comparison)
read suites from `SUITES` alone, so a new suite is a module here and a line below.

A file belongs to the first suite, in `SUITES` order after RULER-HQA, whose naming it matches;
any other name is RULER-HQA's (MemAgent's layout is the default one).
"""

from __future__ import annotations

from pathlib import Path

from mem_agent.evaluation.suites.base import Cell, EvalFile, EvalItem, Scored, Suite, headline
from mem_agent.evaluation.suites.longbench import LONGBENCH
from mem_agent.evaluation.suites.ruler import RULER
from mem_agent.evaluation.suites.ruler_hqa import RULER_HQA

SUITES: tuple[Suite, ...] = (RULER_HQA, RULER, LONGBENCH)
_BY_NAME = {suite.name: suite for suite in SUITES}

__all__ = ["SUITES", "Cell", "EvalFile", "EvalItem", "Scored", "Suite", "cell_of", "headline", "suite_named"]


def suite_named(name: str) -> Suite:
    """The registered suite of that name; KeyError for one not registered (an older or newer writer's)."""
    return _BY_NAME[name]


def cell_of(path: Path) -> Cell:
    """The suite, task, length and label of an eval file, from its name."""
    for suite in SUITES[1:]:
        if (cell := suite.cell_of(path)) is not None:
            return cell
    return RULER_HQA.cell_of(path)
