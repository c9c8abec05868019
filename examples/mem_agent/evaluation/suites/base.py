"""What a suite is: the one shape every evaluation suite fills, and the records it reads into.

A suite (RULER-HQA, RULER's general tasks, LongBench QA) says how its files are found and named,
how each file's items are read, how an answer is scored and under which metric names, and how its
cells are shown. Everything else (scheduling, results files, resume, the item-identity rule, the
aggregation, summary.json) is the evaluator's and the same for every suite, so a suite never learns
it and a view never learns a suite's file layout: views read the cells of summary.json, each of
which names its suite, task, length and headline metric.

A **cell** is one file's worth of items: RULER-HQA one length (documents per context), RULER one
split at one length (tokens), LongBench one task. Its label names its results file
(`results_<label>.jsonl`) and is unique across suites.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mem_agent.agent.scoring import ReportingRules

if TYPE_CHECKING:
    from mem_agent.data.hotpot_corpus import Corpus
    from mem_agent.evaluation.request import EvalRequest


@dataclass(frozen=True)
class Cell:
    """Which suite, task and length one eval file holds, and the label its results go under."""

    suite: str
    task: str
    length: int | None  # documents (RULER-HQA), tokens (RULER); None where a suite has no lengths
    label: str

    def facts(self) -> dict[str, Any]:
        return {"suite": self.suite, "task": self.task, "length": self.length, "label": self.label}


@dataclass(frozen=True)
class EvalFile:
    """One eval file of a run: its path, its cell, and how its items are read."""

    path: Path
    cell: Cell
    limit: int | None = None  # only the first `limit` items
    corpus: Path | None = None  # for index contexts (default: the suite's corpus beside the file)
    by_position: bool = False  # the file's own ids repeat: items are named by their position

    @property
    def label(self) -> str:
        return self.cell.label

    @property
    def results_name(self) -> str:
        return f"results_{self.label}.jsonl"


@dataclass
class EvalItem:
    """One question as a suite reads it. `own_id` is the file's id for it (None: the file has none);
    `item_id` the name its result goes under, set by the evaluator's identity rule."""

    file: EvalFile
    own_id: str | None
    question: str
    answers: list[str]
    context: str  # the text; empty once tokenised, or for an index item until `text()` builds it
    positions: np.ndarray | None = None  # an index item's documents in the corpus
    corpus: Corpus | None = None
    item_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # what the suite's scorer needs beyond answers

    def text(self) -> str:
        """The context as the agent reads it: an index item's documents rendered here, on demand."""
        if self.positions is None or self.corpus is None:
            return self.context
        return self.corpus.render(self.positions.tolist())

    def identity(self) -> tuple[Any, ...]:
        """What makes two items the same question: question, answers and document."""
        document = tuple(self.positions.tolist()) if self.positions is not None else self.context
        return (self.question, tuple(self.answers), document)


@dataclass(frozen=True)
class Scored:
    """One answer scored by its suite: the text read as the answer, and each metric as a share in [0, 1]."""

    extracted: str | None
    metrics: dict[str, float]


class Suite(Protocol):
    """One evaluation suite. `metrics(task)[0]` is the task's headline metric."""

    name: str  # summary.json's and the views' key: ruler_hqa, ruler, longbench
    title: str  # how people name it: RULER-HQA, RULER, LongBench QA
    length_unit: str  # docs, tokens, or "" for a suite without lengths
    # The suite's own evaluator leaves an item answered with nothing out of the mean (MemAgent's) or
    # scores it 0 (LongBench's); `--empty-as-wrong` scores it 0 in every suite.
    empty_left_out: bool
    metric_names: tuple[str, ...]  # every metric a result of any of its tasks may hold

    def cell_of(self, path: Path) -> Cell | None:
        """The cell a file of this suite's naming holds; None for a file of another suite."""
        ...

    def cell_of_label(self, label: str) -> Cell | None:
        """The cell a results label of this suite's naming names (results_<label>.jsonl); None otherwise."""
        ...

    def find(self, request: EvalRequest, *, allow_missing: bool) -> list[Path]:
        """The files the request's flags for this suite name, in the order they are run."""
        ...

    def read(self, file: EvalFile) -> Iterator[EvalItem]:
        """The file's items, validated as they stream past (a DataFormatError names file, item and field)."""
        ...

    def metrics(self, task: str) -> tuple[str, ...]:
        """The metric fields a result of `task` holds, headline first."""
        ...

    def score(self, answer: str, item: EvalItem, rules: ReportingRules) -> Scored:
        """One final answer scored by the suite's own rules."""
        ...

    def order(self, cell: Cell) -> tuple[Any, ...]:
        """Where a cell sits in the suite's tables (tasks, then lengths, in the suite's order)."""
        ...

    # How the suite's cells are shown: summary.json's cells of this suite, in `order`, and the
    # published tables (summary.json's 'paper' entries) of the suite's `paper_metric` beside them.
    plot_name: str
    paper_metric: str | None  # the stored tables' metric this suite's runs are set beside; None: none

    def table(self, cells: Sequence[dict[str, Any]], paper: Sequence[dict[str, Any]]) -> str:
        """The console's table of the suite's cells."""
        ...

    def plot(self, cells: Sequence[dict[str, Any]], path: Path, paper: Sequence[dict[str, Any]]) -> None:
        """The suite's figure (matplotlib, the `eval` extra)."""
        ...


def headline(suite: Suite, task: str) -> str:
    return suite.metrics(task)[0]


def repeated(values: Sequence[str | None]) -> bool:
    """Whether a file's own ids cannot name its items: missing on any item, or repeated."""
    return any(value is None for value in values) or len(set(values)) != len(values)
