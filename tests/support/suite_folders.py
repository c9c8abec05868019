"""An evaluation folder that holds every suite, laid out as the suite contract writes it:
summary.json's cells under `results`, one `results_<label>.jsonl` per cell and, for some cells,
`trajectories_<label>.jsonl` (records made by our own record types, scored by our own scorers).

What each question is, so a test knows its outcome:

| label                 | id | headline           | outcome                 |
|-----------------------|----|--------------------|-------------------------|
| `50` (RULER-HQA)      | 0  | sub_em 1           | right                   |
|                       | 1  | sub_em 0           | wrong                   |
|                       | 2  | -                  | failed                  |
| `niah_single_1_8192`  | 0  | string_match_all 1, written as `sub_em` (an older line) | right |
|                       | 1  | 0, as `sub_em`     | wrong                   |
| `niah_multivalue_8192`| 0  | string_match_all 0.25 (1 of 4; its record says sub_em 1) | partial |
|                       | 1  | string_match_all 1 | right                   |
| `qa_1_16384`          | 0  | sub_em 1           | right                   |
| `longbench_hotpotqa`  | 0  | qa_f1 0.4          | partial                 |
|                       | 1  | qa_f1 0, empty answer | wrong                |

`older_summary` rewrites summary.json as runs before the suite contract wrote it: RULER-HQA
cells without `suite`, RULER cells under `"ruler"` with their score in `sub_em`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mem_agent.agent.ruler_scoring import string_match_all
from mem_agent.agent.scoring import score_answer
from mem_agent.observability.trajectory_records import TrajectoryRecord, TurnRecord, append_records

MULTIVALUE_GOLDS = ["7341", "2290", "5518", "6602"]


def _line(item_id: str, question: str, golds: list[str], answer: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "status": "completed",
        "question": question,
        "answers": golds,
        "prediction": answer,
        "answer": f"\\boxed{{{answer}}}" if answer else "",
        "context_tokens": 6000,
        "dropped_tokens": 0,
        "num_chunks": 2,
    } | fields


def _record(line: dict[str, Any], label: str) -> TrajectoryRecord:
    """The evaluator's record of a line: two memories and the final answer, scored HQA-style."""
    line = {"answer": "", "context_tokens": 6000} | line  # a failed line holds neither
    scores = score_answer(line["answer"], line["answers"])
    turns = [
        TurnRecord("memory", step, f"notes after chunk {step} of #{line['id']}", False, "stop", 50, 9, 9)
        for step in range(2)
    ]
    turns.append(TurnRecord("final", 2, line["answer"], False, "stop", 40, 6, 9))
    return TrajectoryRecord(
        source="eval",
        item_id=line["id"],
        question=line["question"],
        ground_truths=line["answers"],
        mode="memagent",
        status=line["status"],
        answer=line["answer"],
        scores={name: getattr(scores, name) for name in ("strict", "sub_em", "em", "f1")}
        if line["status"] == "completed"
        else {},
        has_box=scores.has_box,
        context_tokens=line["context_tokens"],
        dropped_tokens=0,
        turns=turns,
        eval_set=f"eval_{label}.json",
    )


def _cells() -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(the summary cell, its results lines) of each label."""
    answer = "one value is 2290"
    multivalue = "the values are 7341 2290 5518 6602"
    hqa = [
        _line("0", "Who wrote it?", ["Ann"], "Ann", sub_em=1.0, em=1.0, f1=1.0, strict=1.0),
        _line("1", "Where is it?", ["Oslo"], "Rome", sub_em=0.0, em=0.0, f1=0.0, strict=0.0),
        {"id": "2", "status": "failed", "question": "When?", "answers": ["1990"], "error": "server gave up"},
    ]
    single = [
        _line("0", "What is the number?", ["4410"], "4410", sub_em=1.0, strict=1.0),
        _line("1", "What is the number?", ["8812"], "1234", sub_em=0.0, strict=0.0),
    ]
    values = [
        _line(
            "0",
            "What are the values?",
            MULTIVALUE_GOLDS,
            answer,
            string_match_all=0.25,
            **_ruler_line("niah_multivalue"),
        ),
        _line(
            "1",
            "What are the values?",
            MULTIVALUE_GOLDS,
            multivalue,
            string_match_all=1.0,
            **_ruler_line("niah_multivalue"),
        ),
    ]
    assert string_match_all(answer, MULTIVALUE_GOLDS) == 0.25  # the score our RULER scorer gives
    qa_1 = [_line("0", "Which city?", ["Paris"], "Paris", sub_em=1.0, em=1.0, f1=1.0)]
    longbench = [
        _line("0", "Who founded it?", ["John Smith Jones"], "Smith", qa_f1=0.4, suite="longbench", task="hotpotqa"),
        _line("1", "What year?", ["1901"], "", qa_f1=0.0, empty=True, suite="longbench", task="hotpotqa"),
    ]
    counts = {"completed": 0, "failed": 0, "missing": 0, "empty": 0, "mean_context_tokens": 6000.0, "cut_share": 0.0}
    return [
        ({"suite": "ruler_hqa", "task": "hotpotqa", "length": 50, "label": "50", "metric": "sub_em"}
         | counts | {"items": 3, "completed": 2, "failed": 1, "scored": 3, "sub_em": 33.3, "em": 33.3, "f1": 33.3,
                     "strict": 33.3, "metrics": ["sub_em", "em", "f1", "strict"]}, hqa),
        (_ruler("niah_single_1", 8192, "string_match_all", 50.0) | counts | {"items": 2, "completed": 2}, single),
        (_ruler("niah_multivalue", 8192, "string_match_all", 62.5) | counts | {"items": 2, "completed": 2}, values),
        (_ruler("qa_1", 16384, "sub_em", 100.0) | counts | {"items": 1, "completed": 1}, qa_1),
        ({"suite": "longbench", "task": "hotpotqa", "length": None, "label": "longbench_hotpotqa", "metric": "qa_f1",
          "metrics": ["qa_f1"], "qa_f1": 40.0} | counts | {"items": 2, "completed": 2, "empty": 1, "scored": 1},
         longbench),
    ]  # fmt: skip


def _ruler_line(task: str) -> dict[str, Any]:
    return {"strict": 0.0, "suite": "ruler", "task": task}


def _ruler(task: str, length: int, metric: str, score: float) -> dict[str, Any]:
    label = f"{task}_{length}"
    return {"suite": "ruler", "task": task, "length": length, "label": label, "metric": metric, metric: score}


def suites_folder(folder: Path, *, trajectories: bool = True) -> Path:
    """The folder described in the module's docstring; trajectories for 50 and niah_multivalue_8192."""
    folder.mkdir(parents=True, exist_ok=True)
    cells = []
    for cell, lines in _cells():
        label = cell["label"]
        (folder / f"results_{label}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        if trajectories and label in ("50", "niah_multivalue_8192"):
            append_records(folder / f"trajectories_{label}.jsonl", [_record(line, label) for line in lines])
        cells.append(cell | {"file": str(folder / f"eval_{label}.json")})
    summary = {"suites": ["ruler_hqa", "ruler", "longbench"], "results": cells, "run": {"mode": "memagent"}}
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    return folder


def older_summary(folder: Path) -> None:
    """summary.json as written before the suite contract: RULER cells under "ruler" (split, their
    score in sub_em, QA's metric named "qa"), the others without suite; LongBench had no cells."""
    summary = json.loads((folder / "summary.json").read_text())
    hqa = [
        _without(c, "suite", "task", "length", "metric", "metrics")
        for c in summary["results"]
        if c["suite"] == "ruler_hqa"
    ]
    ruler = [
        _without(c, "suite", "task", "metric", "metrics", c["metric"])
        | {"split": c["task"], "metric": "qa" if c["task"] == "qa_1" else c["metric"], "sub_em": c[c["metric"]]}
        for c in summary["results"]
        if c["suite"] == "ruler"
    ]
    older = {"suites": ["hqa", "ruler"], "results": hqa, "ruler": ruler, "run": summary["run"]}
    (folder / "summary.json").write_text(json.dumps(older, indent=2))


def _without(cell: dict[str, Any], *names: str) -> dict[str, Any]:
    return {key: value for key, value in cell.items() if key not in names}
