"""What a run left on disk, read back for the viewer: a trajectory file, an evaluation folder or a
training folder, each turned into trajectory records grouped the way the run made them.

An evaluation folder holds `results_<N>.jsonl` (one line per question, always) and, with
`--save-trajectories`, `trajectories_<N>.jsonl` (the same questions turn by turn). A question with
a result but no trajectory (a run without the flag) is still shown: its answer, gold and score,
with no memories. A training folder (SAVE_PATH) holds `trajectories/rollout_*.jsonl`, a sample of each recorded
rollout, and `trajectories/metrics.jsonl`, every rollout's figures over all its trajectories (what
the page's curves draw).

Every file is read by its own reader (schemas checked, cut lines skipped and named on the page),
and of an item found more than once the line the evaluator's report counts is shown
(`evaluation.results.unique_items`). A folder a live run holds is read as it stands, and the page
says so: each line read is complete (records are appended whole, rollout files replaced whole),
but the run has not finished, and an evaluation's summary.json is from before it started.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mem_agent.common.run_folder import folder_in_use
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.results import read_results, unique_items
from mem_agent.evaluation.summary_file import SUMMARY_NAME, read_summary
from mem_agent.observability.training_curves import read_run
from mem_agent.observability.trajectory_records import TrajectoryRecord, read_records

_RESULTS = re.compile(r"results_(.+)\.jsonl")


@dataclass
class RunView:
    kind: str  # "evaluation" | "training" | "records"
    path: Path
    records: list[TrajectoryRecord]
    groups: dict[str, list[TrajectoryRecord]]  # by length label ("50") or rollout ("rollout 12"), in run order
    summary: dict[str, Any] | None = None  # an evaluation's summary.json
    notes: list[str] = field(default_factory=list)  # what the page must say about what it could not show
    rollout_metrics: list[dict[str, Any]] = field(default_factory=list)  # training: metrics.jsonl, per rollout


def load_run(path: Path) -> RunView:
    """The run at `path`; a path that is none of the three is a UsageError naming what was looked for."""
    path = Path(path)
    notes: list[str] = []
    if path.is_file():
        records = _read(path, notes)
        return RunView("records", path, records, _grouped(records), notes=_live(path.parent) + notes)
    if not path.is_dir():
        raise UsageError(f"{path} does not exist")
    rollouts = sorted((path / "trajectories").glob("rollout_*.jsonl")) or sorted(path.glob("rollout_*.jsonl"))
    if rollouts:
        live = _live(rollouts[0].parent)
        records = [record for file in rollouts for record in _read(file, notes)]
        return _with_metrics(RunView("training", path, records, _grouped(records), notes=live + notes))
    if (path / SUMMARY_NAME).is_file() or any(path.glob("results_*.jsonl")):
        return _evaluation(path)
    raise UsageError(
        f"{path} is not a run: expected a trajectory .jsonl file, an evaluation folder (results_<N>.jsonl)"
        " or a training folder (trajectories/rollout_*.jsonl)"
    )


def _with_metrics(run: RunView) -> RunView:
    """The training run with its per-rollout metrics, or a note saying why it has no curves."""
    try:
        run.rollout_metrics = read_run(run.path).rollouts
    except UsageError as error:
        run.notes.append(f"no curves over rollouts: {error}")
    return run


def _live(folder: Path) -> list[str]:
    """The page's note for a folder a live run holds: what it shows is a snapshot."""
    holder = folder_in_use(folder)
    return [] if holder is None else [f"{holder}: this page is a snapshot of what it had written"]


def _read(path: Path, notes: list[str]) -> list[TrajectoryRecord]:
    try:
        return list(read_records(path, notes))
    except OSError as error:
        raise UsageError(f"{path} cannot be read: {error.strerror}") from None


def _grouped(records: list[TrajectoryRecord]) -> dict[str, list[TrajectoryRecord]]:
    groups: dict[str, list[TrajectoryRecord]] = {}
    for record in sorted(records, key=_order):
        groups.setdefault(_group_name(record), []).append(record)
    return groups


def _order(record: TrajectoryRecord) -> tuple[int, str, int, tuple[int, str]]:
    """Rollout, eval file, the prompt's group (a group's trajectories together), then id as a
    number (#2 before #10)."""
    group = record.group_index if isinstance(record.group_index, int) else -1
    return (record.rollout_id or 0, record.eval_set or "", group, _natural_key(record.item_id))


def _group_name(record: TrajectoryRecord) -> str:
    if record.rollout_id is not None:
        return f"rollout {record.rollout_id}"
    return record.eval_set or record.source


def _evaluation(path: Path) -> RunView:
    notes = _live(path)
    summary = None
    if (path / SUMMARY_NAME).is_file() and not notes:  # a live run's summary.json is an earlier run's
        summary = read_summary(path / SUMMARY_NAME)
    groups: dict[str, list[TrajectoryRecord]] = {}
    labels = sorted(
        (m.group(1) for p in path.glob("results_*.jsonl") if (m := _RESULTS.fullmatch(p.name))), key=_natural_key
    )
    for label in labels:
        results_path = path / f"results_{label}.jsonl"
        trajectories_path = path / f"trajectories_{label}.jsonl"
        turns = {r.item_id: r for r in _read(trajectories_path, notes)} if trajectories_path.is_file() else {}
        if not turns:
            notes.append(
                f"{results_path.name}: no {trajectories_path.name} (run with --save-trajectories to see memories)"
            )
        try:
            chosen = unique_items(read_results(results_path, notes))
        except OSError as error:
            raise UsageError(f"{results_path} cannot be read: {error.strerror}") from None
        ordered = sorted(chosen, key=lambda result: _natural_key(result["id"]))  # item order, not finishing order
        groups[label] = [_joined(turns.get(result["id"]), result, label) for result in ordered]
    records = [record for group in groups.values() for record in group]
    return RunView("evaluation", path, records, groups, summary, notes)


def _natural_key(label: str) -> tuple[int, str]:
    """Numbers in numeric order, then other names: "50" < "100" < "custom"."""
    return (int(label), "") if label.isdigit() else (1 << 62, label)


def _joined(record: TrajectoryRecord | None, result: dict[str, Any], label: str) -> TrajectoryRecord:
    """The item's trajectory record, or one made of its result line, with the facts only the result
    line holds (the direct baseline's `gold_in_window`, written after the record)."""
    if record is None:
        return _record_of_result(result, label)
    facts = _result_facts(result)
    return replace(record, extra={**record.extra, **facts}) if facts else record


def _result_facts(result: dict[str, Any]) -> dict[str, Any]:
    window = result.get("gold_in_window")
    return {"gold_in_window": window} if isinstance(window, bool) else {}


def _record_of_result(result: dict[str, Any], label: str) -> TrajectoryRecord:
    """A result line as a record without turns, so one page shows both kinds of evaluation run."""
    scores = {name: float(result[name]) for name in ("strict", "sub_em", "em", "f1") if result.get(name) is not None}
    return TrajectoryRecord(
        source="eval",
        item_id=result["id"],
        question=result.get("question") or "",
        ground_truths=result.get("answers") or [],
        mode=str(result.get("mode", "")),
        status=str(result.get("status", "")),
        answer=result.get("answer") or "",
        scores=scores,
        has_box=bool(result.get("prediction")),
        context_tokens=result.get("context_tokens") or 0,
        dropped_tokens=result.get("dropped_tokens") or 0,
        turns=[],
        eval_set=label,
        error=result.get("error"),
        extra=({"num_chunks": result["num_chunks"]} if isinstance(result.get("num_chunks"), int) else {})
        | _result_facts(result),
    )
