"""Evaluation folders of any suite written by hand in summary.json's current shape (one `results`
list of cells, each with its suite, task, length and headline metric) or in the older one (RULER
cells under `ruler`, scores under `sub_em`), with a results line per item, so compare and the
paper comparison are tested on every layout a user's folder may have."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Cell:
    """One cell: its place and one score per item (a share in [0, 1]; None: the item failed)."""

    suite: str
    task: str
    length: int | None
    metric: str
    scores: list[float | None]
    empty: frozenset[int] = field(default_factory=frozenset)  # items answered with nothing

    @property
    def label(self) -> str:
        if self.suite == "ruler_hqa":
            return str(self.length)
        return f"longbench_{self.task}" if self.length is None else f"{self.task}_{self.length}"

    def summary(self) -> dict:
        """The cell as summary.json holds it: the mean x 100, failed items 0, empty ones left out."""
        counted = [s or 0.0 for i, s in enumerate(self.scores) if i not in self.empty]
        value = 100.0 * sum(counted) / len(counted) if counted else 0.0
        failed = sum(s is None for s in self.scores)
        return {
            "suite": self.suite,
            "task": self.task,
            "length": self.length,
            "label": self.label,
            "metric": self.metric,
            "metrics": [self.metric],
            "items": len(self.scores),
            "completed": len(self.scores) - failed,
            "failed": failed,
            "missing": 0,
            "empty": len(self.empty),
            "scored": len(counted),
            self.metric: value,
            "mean_context_tokens": float(self.length or 3000),
        }

    def lines(self) -> list[dict]:
        return [
            {"id": str(i), "status": "failed", "error": "timeout"}
            if score is None
            else {"id": str(i), "status": "completed", "answer": "" if i in self.empty else "x", self.metric: score}
            | ({"empty": True} if i in self.empty else {})
            | {"context_tokens": self.length or 3000, "dropped_tokens": 0, "suite": self.suite, "task": self.task}
            for i, score in enumerate(self.scores)
        ]


def suite_run(folder: Path, cells: list[Cell], facts: dict | None = None, *, old_shape: bool = False) -> Path:
    """The folder with results_<label>.jsonl per cell and summary.json; `old_shape` writes the
    layout of before suites (no `suite`; RULER cells under `ruler` with their score as `sub_em`)."""
    folder.mkdir(parents=True, exist_ok=True)
    for cell in cells:
        with (folder / f"results_{cell.label}.jsonl").open("w", encoding="utf-8") as handle:
            for line in cell.lines():
                if old_shape and cell.metric == "string_match_all" and cell.metric in line:
                    line["sub_em"] = line.pop(cell.metric)
                handle.write(json.dumps(line) + "\n")
    document = {"results": [cell.summary() for cell in cells], "run": facts or {"mode": "memagent"}}
    if old_shape:
        document = {"results": [], "ruler": [], "run": document["run"]}
        for cell in cells:
            summary = {k: v for k, v in cell.summary().items() if k not in ("suite", "task", "metrics", "scored")}
            if cell.suite == "ruler":
                summary |= {"split": cell.task, "sub_em": summary.pop(cell.metric)}
                summary["metric"] = "qa" if cell.task.startswith("qa_") else "string_match_all"
                document["ruler"].append(summary)
            else:
                del summary["metric"], summary["length"]
                document["results"].append(summary)
    (folder / "summary.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    return folder
