"""The evaluator's trajectory records (`--save-trajectories`): one per item, beside its result.

`trajectories_<N>.jsonl` sits next to `results_<N>.jsonl` and follows the same rules: each
finished item's record is appended and flushed at once; a rerun keeps exactly the records of the
items whose results it keeps (one per item, the last written) and drops the rest, so after any
number of kills and resumes there is at most one record per item. The record is written before
the result line: a crash between the two leaves a record whose item has no result, which the
resume drops when the item runs again; the reverse order could leave a kept result whose record
was never written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson

from mem_agent.common.guarded_files import atomic_output
from mem_agent.observability.trajectory_records import TrajectoryRecord, append_records, read_records


def trajectories_name(results_name: str) -> str:
    """`results_50.jsonl` -> `trajectories_50.jsonl`."""
    return "trajectories_" + results_name.removeprefix("results_")


@dataclass
class TrajectoryStore:
    path: Path
    kept: int = 0

    @classmethod
    def open(cls, path: Path, keep: Iterable[str], *, force: bool = False) -> TrajectoryStore:
        """The store at `path`, holding only the records of the item ids in `keep` (the results the
        evaluator reuses); everything else in an earlier file is dropped."""
        store = cls(Path(path))
        wanted = set(keep)
        latest: dict[str, TrajectoryRecord] = {}
        if not force and store.path.exists():
            for record in read_records(store.path):
                if record.item_id in wanted:
                    latest[record.item_id] = record
        with atomic_output(store.path, "wb") as handle:
            for record in latest.values():
                handle.write(orjson.dumps(record.to_json()) + b"\n")
        store.kept = len(latest)
        return store

    def append(self, record: TrajectoryRecord) -> None:
        append_records(self.path, [record])
