"""The LongBench test files (support/longbench_data.py) keep the release's layout, which the suite's
reader is tested against: one `<dataset>.jsonl` per QA task, the README's fields in order, and
`_id`s unique in a file unless repetition is asked for."""

from __future__ import annotations

import json
from pathlib import Path

from mem_agent.agent.longbench_scoring import LONGBENCH_QA_TASKS
from support.longbench_data import LONGBENCH_FIELDS, write_longbench


def _items(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_task_file_holds_every_row_in_longbench_layout(synthetic_rows: list[dict], tmp_path: Path) -> None:
    root = write_longbench(synthetic_rows[:5], tmp_path)
    assert sorted(path.name for path in root.iterdir()) == sorted(f"{task}.jsonl" for task in LONGBENCH_QA_TASKS)
    for task in LONGBENCH_QA_TASKS:
        items = _items(root / f"{task}.jsonl")
        assert [tuple(item) for item in items] == [LONGBENCH_FIELDS] * 5
        assert {item["dataset"] for item in items} == {task}
        assert len({item["_id"] for item in items}) == 5
        questions = {row["question"]: row["answer"] for row in synthetic_rows[:5]}
        assert all(item["answers"] == [questions[item["input"]]] for item in items)
        assert all(item["answers"][0] in item["context"] or item["answers"][0] in ("yes", "no") for item in items)


def test_repeated_ids_pair_neighbours(synthetic_rows: list[dict], tmp_path: Path) -> None:
    root = write_longbench(synthetic_rows[:4], tmp_path, tasks=["hotpotqa"], repeat_ids=True)
    ids = [item["_id"] for item in _items(root / "hotpotqa.jsonl")]
    assert ids[0] == ids[1] != ids[2] == ids[3]
