"""RULER-HQA (MemAgent's headline benchmark) as a suite: `eval_<N>.json`, N documents per context.

An eval file is a JSON array of items with `context`, `input` (the question), `answers` and an
optional `index` (MemAgent's `eval_<N>.json`). A 6400-document file is about 450 MB, so it is never
loaded whole: items are read one at a time, and a malformed one stops the run with its file,
position and field (exit 2) instead of being scored as wrong.

Beyond 10,000 documents (MemAgent's eval_12800/25600.json) `context` is a list of positions in the
HotpotQA dev corpus (data/hotpot_corpus.py), read from `--corpus` (default: hotpotqa_dev.json beside
the eval file); the item keeps the positions and its text is rebuilt only when it is tokenised.
Every position must lie in the corpus; an item that names its corpus (`corpus_documents`,
`corpus_sha256`, as our builder writes) must be given that corpus, and one that does not (MemAgent's
own files) a corpus of the dev file's 66,635 documents. Both layouts are this one suite: the same
questions, the same scorer (sub-EM headline, EM, F1, the strict reward), one table and one curve.

Any file whose name no other suite claims is read as this suite's (`--data my_set.json`), under its
file name's stem as label.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mem_agent.agent.scoring import ReportingRules, score_answer
from mem_agent.common.jsonstream import DataFormatError, iter_json_array
from mem_agent.common.usage import UsageError
from mem_agent.data.hotpot_corpus import CORPUS_NAME, HOTPOTQA_DEV_DOCUMENTS, Corpus, read_corpus
from mem_agent.evaluation.accuracy_plot import plot_accuracy
from mem_agent.evaluation.cell_tables import cells_table
from mem_agent.evaluation.suites.base import Cell, EvalFile, EvalItem, Scored

if TYPE_CHECKING:
    from mem_agent.evaluation.request import EvalRequest

RULER_HQA_LENGTHS = (50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600)
METRICS = ("sub_em", "em", "f1", "strict")
_NAME = re.compile(r"eval_([1-9][0-9]*)")


class RulerHqa:
    name = "ruler_hqa"
    title = "RULER-HQA"
    length_unit = "docs"
    empty_left_out = True
    metric_names = METRICS

    def cell_of(self, path: Path) -> Cell:
        match = _NAME.fullmatch(Path(path).stem)
        if match:
            return Cell(self.name, "hotpotqa", int(match.group(1)), match.group(1))
        return Cell(self.name, "hotpotqa", None, Path(path).stem)

    def cell_of_label(self, label: str) -> Cell:
        return self.cell_of(Path(f"eval_{label}.json")) if label.isdigit() else Cell(self.name, "hotpotqa", None, label)

    def find(self, request: EvalRequest, *, allow_missing: bool) -> list[Path]:
        root = request.data_root
        if root is None:
            return []
        if not root.is_dir() and not (allow_missing and request.lengths and not root.exists()):
            raise UsageError(f"--data-root {root} is not a folder")
        lengths = request.lengths or [n for n in RULER_HQA_LENGTHS if (root / f"eval_{n}.json").is_file()]
        return [root / f"eval_{n}.json" for n in lengths]

    def read(self, file: EvalFile) -> Iterator[EvalItem]:
        for position, raw in enumerate(iter_json_array(file.path)):
            where = f"{file.path}: item {position}"
            if not isinstance(raw, dict):
                raise DataFormatError(f"{where}: expected an object, got {type(raw).__name__}")
            if not isinstance(raw.get("input"), str):
                raise DataFormatError(f"{where}: field 'input' must be a string")
            answers = raw.get("answers")
            if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
                raise DataFormatError(f"{where}: field 'answers' must be a non-empty list of strings")
            own = raw.get("index")
            item = EvalItem(file, None if own is None else str(own), raw["input"], list(answers), "")
            context = raw.get("context")
            if isinstance(context, list):
                item.corpus = load_corpus(corpus_path(file))
                item.positions = _positions(raw, item.corpus, where)
            elif not isinstance(context, str):
                raise DataFormatError(f"{where}: field 'context' must be a string or a list of document positions")
            elif not context.strip():
                raise DataFormatError(f"{where}: field 'context' is empty")
            else:
                item.context = context
            yield item

    def metrics(self, task: str) -> tuple[str, ...]:
        return METRICS

    def score(self, answer: str, item: EvalItem, rules: ReportingRules) -> Scored:
        scores = score_answer(answer, item.answers, rules=rules)
        return Scored(
            scores.extracted, {"sub_em": scores.sub_em, "em": scores.em, "f1": scores.f1, "strict": scores.strict}
        )

    def order(self, cell: Cell) -> tuple[Any, ...]:
        return (0, cell.length, "") if cell.length is not None else (1, 0, cell.label)

    plot_name = "accuracy_vs_length.png"
    paper_metric = "sub_em"

    def table(self, cells: Sequence[dict[str, Any]], paper: Sequence[dict[str, Any]]) -> str:
        return cells_table(cells, "docs", METRICS)

    def plot(self, cells: Sequence[dict[str, Any]], path: Path, paper: Sequence[dict[str, Any]]) -> None:
        plot_accuracy(cells, path, paper)


def corpus_path(file: EvalFile) -> Path:
    return file.corpus if file.corpus is not None else file.path.parent / CORPUS_NAME


def load_corpus(path: Path) -> Corpus:
    """The corpus, read once per process while the file is unchanged (the check before a run and
    the run share it)."""
    try:
        stat = path.stat()
    except OSError:
        raise DataFormatError(
            f"{path}: not found: index-layout eval files need the HotpotQA dev corpus (--corpus FILE,"
            f" by default {CORPUS_NAME} beside the eval file; prepare-eval-data.sh fetches it)"
        ) from None
    return _read_corpus_once(path.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=2)
def _read_corpus_once(path: Path, mtime_ns: int, size: int) -> Corpus:
    return read_corpus(path)


def _positions(raw: dict[str, Any], corpus: Corpus, where: str) -> np.ndarray:
    """An index item's positions, each checked to lie in `corpus`, and the corpus checked to be its own."""
    context = raw["context"]
    if not context or not all(type(p) is int for p in context):
        raise DataFormatError(f"{where}: field 'context' must be a non-empty list of integer document positions")
    size, named = len(corpus), raw.get("corpus_documents", HOTPOTQA_DEV_DOCUMENTS)
    if named != size:
        raise DataFormatError(f"{where}: points into a corpus of {named} documents; {corpus.path} holds {size}")
    sha = raw.get("corpus_sha256")
    if sha is not None and sha != corpus.sha256:
        raise DataFormatError(f"{where}: points into a corpus of sha256 {sha}; {corpus.path} has {corpus.sha256}")
    try:
        positions = np.asarray(context, dtype=np.int64)
        outside = positions[(positions < 0) | (positions >= size)]
        bad = int(outside[0]) if len(outside) else None
    except OverflowError:  # a position past 64 bits (10**30) is outside any corpus
        bad = next(p for p in context if not -(2**63) <= p < 2**63)
    if bad is not None:
        raise DataFormatError(
            f"{where}: field 'context' holds position {bad}, outside {corpus.path} ({size} documents)"
        )
    return positions


RULER_HQA = RulerHqa()
