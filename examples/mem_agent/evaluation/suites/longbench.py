"""LongBench (v1) QA as a suite: its six English and single-/multi-document QA tasks, read from the
user's downloaded data, run through the same memory agent, scored with LongBench's QA F1.

LongBench ships one JSON Lines file per task (`<task>.jsonl` in its `data/` folder), each record
`{input, context, answers, length, dataset, language, all_classes, _id}`: `input` is the question,
`context` the long document, `answers` the references. The agent reads `context` in chunks and is
asked `input`; its boxed answer is scored against every reference with LongBench's `qa_f1_score`
and the best kept (agent/longbench_scoring.py). A task is one cell (LongBench v1 has no lengths);
the label is `longbench_<task>`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from mem_agent.agent.longbench_scoring import LONGBENCH_QA_TASKS, score_longbench_answer
from mem_agent.agent.scoring import ReportingRules
from mem_agent.common.jsonstream import DataFormatError, open_data
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.accuracy_plot import plot_bars
from mem_agent.evaluation.cell_tables import cells_table
from mem_agent.evaluation.suites.base import Cell, EvalFile, EvalItem, Scored

if TYPE_CHECKING:
    from mem_agent.evaluation.request import EvalRequest

METRICS = ("qa_f1", "strict")


class LongBench:
    name = "longbench"
    title = "LongBench QA"
    length_unit = ""
    empty_left_out = False
    metric_names = METRICS

    def cell_of(self, path: Path) -> Cell | None:
        path = Path(path)
        if path.suffix != ".jsonl" or path.stem not in LONGBENCH_QA_TASKS:
            return None
        return Cell(self.name, path.stem, None, f"longbench_{path.stem}")

    def cell_of_label(self, label: str) -> Cell | None:
        return (
            self.cell_of(Path(f"{label.removeprefix('longbench_')}.jsonl")) if label.startswith("longbench_") else None
        )

    def find(self, request: EvalRequest, *, allow_missing: bool) -> list[Path]:
        root = request.longbench_root
        if root is None:
            return []
        if not root.is_dir() and not (allow_missing and request.longbench_tasks and not root.exists()):
            raise UsageError(f"--longbench-root {root} is not a folder")
        tasks = request.longbench_tasks or [t for t in LONGBENCH_QA_TASKS if (root / f"{t}.jsonl").is_file()]
        return [root / f"{task}.jsonl" for task in tasks]

    def read(self, file: EvalFile) -> Iterator[EvalItem]:
        with open_data(file.path) as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield _item(file, _record(line, f"{file.path}: line {number}"), f"{file.path}: line {number}")

    def metrics(self, task: str) -> tuple[str, ...]:
        return METRICS

    def score(self, answer: str, item: EvalItem, rules: ReportingRules) -> Scored:
        scores = score_longbench_answer(answer, item.answers)
        return Scored(scores.extracted, {"qa_f1": scores.qa_f1, "strict": scores.strict})

    def order(self, cell: Cell) -> tuple[Any, ...]:
        return (LONGBENCH_QA_TASKS.index(cell.task),)

    plot_name = "longbench.png"
    paper_metric = None

    def table(self, cells: Sequence[dict[str, Any]], paper: Sequence[dict[str, Any]]) -> str:
        return cells_table(cells, "task", METRICS)

    def plot(self, cells: Sequence[dict[str, Any]], path: Path, paper: Sequence[dict[str, Any]]) -> None:
        plot_bars(cells, path, f"{self.title}: {cells[0]['metric']} per task")


def _record(line: bytes, where: str) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise DataFormatError(f"{where}: not JSON ({error})") from None


def _item(file: EvalFile, raw: Any, where: str) -> EvalItem:
    if not isinstance(raw, dict):
        raise DataFormatError(f"{where}: expected an object, got {type(raw).__name__}")
    for name in ("input", "context"):
        if not isinstance(raw.get(name), str) or not raw[name].strip():
            raise DataFormatError(f"{where}: field '{name}' must be a non-empty string")
    answers = raw.get("answers")
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise DataFormatError(f"{where}: field 'answers' must be a non-empty list of strings")
    own = raw.get("_id")
    return EvalItem(file, None if own is None else str(own), raw["input"], list(answers), raw["context"])


LONGBENCH = LongBench()
