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

__all__ = [
    "SUITES",
    "Cell",
    "EvalFile",
    "EvalItem",
    "Scored",
    "Suite",
    "cell_of",
    "cell_of_label",
    "headline",
    "headline_of",
    "suite_named",
    "suite_rank",
    "suite_title",
]


def suite_title(name: str) -> str:
    """How people name a suite (its registered title; the name itself for one not registered)."""
    return _BY_NAME[name].title if name in _BY_NAME else name


def suite_rank(name: str) -> int:
    """A suite's place in the registry's order; one not registered after every registered one."""
    return SUITES.index(_BY_NAME[name]) if name in _BY_NAME else len(SUITES)


def suite_named(name: str) -> Suite:
    """The registered suite of that name; KeyError for one not registered (an older or newer writer's)."""
    return _BY_NAME[name]


def cell_of_label(label: str) -> Cell:
    """The cell a results file's label names, by the same precedence as `cell_of`."""
    for suite in SUITES[1:]:
        if (cell := suite.cell_of_label(label)) is not None:
            return cell
    return RULER_HQA.cell_of_label(label)


def headline_of(suite: str, task: str) -> str:
    """A registered suite's headline metric for `task`; sub_em for a suite this version does not know."""
    return suite_named(suite).metrics(task)[0] if suite in _BY_NAME else "sub_em"


def cell_of(path: Path) -> Cell:
    """The suite, task, length and label of an eval file, from its name."""
    for suite in SUITES[1:]:
        if (cell := suite.cell_of(path)) is not None:
            return cell
    return RULER_HQA.cell_of(path)
