"""LongBench (v1) QA files made from our own synthetic multi-hop rows, laid out as LongBench's released
data: `<root>/<dataset>.jsonl`, one JSON object a line, with its README's fields in its order.

The text is ours (invented facts, our paragraphs); only the layout is LongBench's, so a reader that
takes these files takes the real ones. `_id` is unique within a file, as in the release; the
`repeat_ids` variant gives every two neighbours one `_id`, for the readers' rule that a file with
repeated ids names its items by position.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from conftest import document_text

from mem_agent.agent.longbench_scoring import LONGBENCH_QA_TASKS

# LongBench's README ("Data Format"), in its order; the released lines keep it.
LONGBENCH_FIELDS = ("input", "context", "answers", "length", "dataset", "language", "all_classes", "_id")


def _item_id(dataset: str, key: str) -> str:
    """48 hex digits, the shape of the release's random ids, derived so that files are reproducible."""
    return hashlib.sha256(f"{dataset}/{key}".encode()).hexdigest()[:48]


def longbench_record(row: dict, dataset: str, item_id: str) -> dict:
    """One synthetic row as a LongBench QA item. `length` counts words of the question, context and
    answers (the README's rule for English)."""
    context = document_text([row])
    answers = [row["answer"]]
    length = len(row["question"].split()) + len(context.split()) + sum(len(answer.split()) for answer in answers)
    values = (row["question"], context, answers, length, dataset, "en", None, item_id)
    return dict(zip(LONGBENCH_FIELDS, values, strict=True))


def write_longbench(
    rows: Sequence[dict], root: Path, *, tasks: Sequence[str] = LONGBENCH_QA_TASKS, repeat_ids: bool = False
) -> Path:
    """Write `<root>/<task>.jsonl` for each task, every file holding every row (task k starts at row
    k, so first items differ between files); return `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for shift, task in enumerate(tasks):
        turned = [*rows[shift % len(rows) :], *rows[: shift % len(rows)]] if rows else []
        keys = [str(index // 2) if repeat_ids else row["id"] for index, row in enumerate(turned)]
        lines = [
            json.dumps(longbench_record(row, task, _item_id(task, key)), ensure_ascii=False)
            for row, key in zip(turned, keys, strict=True)
        ]
        (root / f"{task}.jsonl").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return root
