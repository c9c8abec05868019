"""RULER's general tasks as a suite: thirteen splits at lengths in tokens, read from the files the
tools people use write.

Three layouts are read, streamed, one item at a time:
- **MemAgent's** `eval_<split>_<length>.json`: a JSON array of RULER's records with the haystack in
  `context` (text, or for `qa_*` a list of document indices into the dataset's corpus,
  data/ruler_corpus.py) and the question in `input`; `index` restarts at 0 in every chunk its
  `ruler_data_prepare.sh` merges, so it repeats.
- the same records one per line (`eval_<split>_<length>.jsonl`), as our builder's JSONL option and
  RULER's own writer lay them out;
- **RULER's own** `<length>/data/<split>/validation.jsonl` (its `scripts/run.sh` layout), whose
  records have no `context`: `input` is the task's whole prompt, split into document and question
  by the task's template (data/ruler_records.py). niah's `index` is the needle's position, so it repeats.

Scoring: string_match_all for every split but `qa_*` (agent/ruler_scoring.py), the QA metrics for
`qa_*`; the split's metric is the cell's headline, and the suite's table is the heat map
(evaluation/ruler_report.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from mem_agent.agent.ruler_scoring import QA_SPLITS, RULER_SPLITS, STRING_MATCH_ALL, score_ruler_answer
from mem_agent.agent.scoring import ReportingRules
from mem_agent.common.jsonstream import DataFormatError, iter_json_array, open_data
from mem_agent.common.usage import UsageError
from mem_agent.data.ruler_corpus import corpus_documents, corpus_path, render_indexed
from mem_agent.data.ruler_records import split_ruler_input
from mem_agent.evaluation.ruler_report import HEATMAP_NAME, format_heatmap_table, plot_heatmap
from mem_agent.evaluation.suites.base import Cell, EvalFile, EvalItem, Scored

if TYPE_CHECKING:
    from mem_agent.evaluation.request import EvalRequest

_NAME = re.compile(rf"eval_({'|'.join(RULER_SPLITS)})_([1-9][0-9]*)")
RULER_OWN_FILE = "validation.jsonl"
QA_METRICS = ("sub_em", "em", "f1", "strict")
MATCH_METRICS = (STRING_MATCH_ALL, "strict")


def ruler_file_name(split: str, length: int) -> str:
    return f"eval_{split}_{length}.json"


class Ruler:
    name = "ruler"
    title = "RULER"
    length_unit = "tokens"
    empty_left_out = True
    metric_names = (*QA_METRICS, STRING_MATCH_ALL)

    def cell_of(self, path: Path) -> Cell | None:
        path = Path(path)
        if path.suffix in (".json", ".jsonl") and (match := _NAME.fullmatch(path.stem)):
            return self._cell(match.group(1), int(match.group(2)))
        if path.name != RULER_OWN_FILE or path.parent.name not in RULER_SPLITS:
            return None
        for folder in list(path.parents)[1:4]:
            if folder.name.isdigit() and int(folder.name) > 0:
                return self._cell(path.parent.name, int(folder.name))
        raise UsageError(
            f"{path}: RULER's {RULER_OWN_FILE} needs its length in a folder above it"
            f" (<length>/data/{path.parent.name}/{RULER_OWN_FILE}, as RULER's scripts/run.sh lays it out)"
        )

    def cell_of_label(self, label: str) -> Cell | None:
        return self.cell_of(Path(f"eval_{label}.json"))

    def _cell(self, split: str, length: int) -> Cell:
        return Cell(self.name, split, length, f"{split}_{length}")

    def find(self, request: EvalRequest, *, allow_missing: bool) -> list[Path]:
        """--ruler-root's files: every split x length asked for, or without either list every file
        the folder holds (splits in RULER's order, then lengths)."""
        root = request.ruler_root
        if root is None:
            return []
        if not root.is_dir():
            if allow_missing and request.ruler_splits and request.ruler_lengths and not root.exists():
                return [root / ruler_file_name(s, n) for s in request.ruler_splits for n in request.ruler_lengths]
            raise UsageError(f"--ruler-root {root} is not a folder")
        present: dict[tuple[str, int], Path] = {}
        candidates = [*root.glob("eval_*.json"), *root.glob("eval_*.jsonl"), *root.glob(f"**/{RULER_OWN_FILE}")]
        for path in sorted(candidates):
            cell = self.cell_of(path)
            if cell is None or cell.length is None:
                continue
            if (cell.task, cell.length) in present:
                other = present[(cell.task, cell.length)]
                raise UsageError(f"--ruler-root {root}: {other} and {path} both hold {cell.label}; keep one")
            present[(cell.task, cell.length)] = path
        order = sorted(present, key=lambda key: (RULER_SPLITS.index(key[0]), key[1]))
        splits = request.ruler_splits or list(dict.fromkeys(split for split, _ in order))
        lengths = request.ruler_lengths or sorted({length for _, length in order})
        return [present.get((s, n), root / ruler_file_name(s, n)) for s in splits for n in lengths]

    def read(self, file: EvalFile) -> Iterator[EvalItem]:
        split = file.cell.task
        for position, raw in enumerate(_records(file.path)):
            where = f"{file.path}: item {position}"
            if not isinstance(raw, dict):
                raise DataFormatError(f"{where}: expected an object, got {type(raw).__name__}")
            if not isinstance(raw.get("input"), str) or not raw["input"].strip():
                raise DataFormatError(f"{where}: field 'input' must be a non-empty string")
            outputs = raw.get("outputs")
            if not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) and o for o in outputs):
                raise DataFormatError(f"{where}: field 'outputs' must be a non-empty list of non-empty strings")
            own = raw.get("index")
            if "context" in raw:
                question, context = raw["input"], _context(raw["context"], file, where)
            else:  # RULER's own record: the prompt is one text
                try:
                    context, question = split_ruler_input(split, raw["input"])
                except DataFormatError as error:
                    raise DataFormatError(f"{where}: {error}") from None
            yield EvalItem(file, None if own is None else str(own), question, list(outputs), context)

    def metrics(self, task: str) -> tuple[str, ...]:
        return QA_METRICS if task in QA_SPLITS else MATCH_METRICS

    def score(self, answer: str, item: EvalItem, rules: ReportingRules) -> Scored:
        split = item.file.cell.task
        scores = score_ruler_answer(answer, item.answers, split, rules=rules)
        if split in QA_SPLITS:
            return Scored(scores.extracted, scores.fields())
        return Scored(scores.extracted, {STRING_MATCH_ALL: scores.sub_em, "strict": scores.strict})

    def order(self, cell: Cell) -> tuple[Any, ...]:
        return (RULER_SPLITS.index(cell.task), cell.length or 0)

    plot_name = HEATMAP_NAME
    paper_metric = "ruler_average"

    def table(self, cells: Sequence[dict[str, Any]], paper: Sequence[dict[str, Any]]) -> str:
        return format_heatmap_table(cells, paper)

    def plot(self, cells: Sequence[dict[str, Any]], path: Path, paper: Sequence[dict[str, Any]]) -> None:
        plot_heatmap(cells, path, paper)


def _records(path: Path) -> Iterator[Any]:
    """A JSON array, or JSON Lines (a file whose first character is `{`), one record at a time."""
    with open_data(path) as handle:
        first = handle.read(64).lstrip()[:1]
    if first != b"{":
        yield from iter_json_array(path)
        return
    with open_data(path) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield orjson.loads(line)
                except orjson.JSONDecodeError as error:
                    raise DataFormatError(f"{path}: line {number} is not JSON ({error})") from None


def _context(context: Any, file: EvalFile, where: str) -> str:
    split = file.cell.task
    if isinstance(context, str):
        if not context.strip():
            raise DataFormatError(f"{where}: field 'context' is empty")
        return context
    indices = isinstance(context, list) and context and all(type(i) is int and i >= 0 for i in context)
    if not indices:
        raise DataFormatError(f"{where}: field 'context' must be text, or (qa_1, qa_2) a list of document indices")
    if split not in QA_SPLITS:
        raise DataFormatError(f"{where}: field 'context' is a list of indices, which only qa_1 and qa_2 files hold")
    return render_indexed(corpus_documents(corpus_path(file.path, split), split), context, where)


RULER = Ruler()
