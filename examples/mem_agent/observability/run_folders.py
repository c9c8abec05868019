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
(`evaluation.results.unique_items`). An evaluation's scores are its results lines', by each
section's headline metric (eval_sections.py): a trajectory record brings the memories, never the
score. A folder a live run holds is read as it stands, and the page
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
from mem_agent.observability.eval_sections import Section, result_scores, sections_of
from mem_agent.observability.training_curves import read_run
from mem_agent.observability.trajectory_records import TrajectoryRecord, read_records

_RESULTS = re.compile(r"results_(.+)\.jsonl")
_TRAJECTORIES = re.compile(r"trajectories_(.+)\.jsonl")


@dataclass
class RunView:
    kind: str  # "evaluation" | "training" | "records"
    path: Path
    records: list[TrajectoryRecord]
    groups: dict[str, list[TrajectoryRecord]]  # by length label ("50") or rollout ("rollout 12"), in run order
    summary: dict[str, Any] | None = None  # an evaluation's summary.json
    notes: list[str] = field(default_factory=list)  # what the page must say about what it could not show
    rollout_metrics: list[dict[str, Any]] = field(default_factory=list)  # training: metrics.jsonl, per rollout
    sections: dict[str, Section] = field(default_factory=dict)  # evaluation: each label's suite, task, metric


def load_run(path: Path) -> RunView:
    """The run at `path`; a path that is none of the three is a UsageError naming what was looked for."""
    path = Path(path)
    notes: list[str] = []
    if path.is_file():
        return _records_file(path, notes)
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
    summary = _summary(path, notes)
    labels = [m.group(1) for p in path.glob("results_*.jsonl") if (m := _RESULTS.fullmatch(p.name))]
    results = {label: _results(path / f"results_{label}.jsonl", notes) for label in labels}
    sections = sections_of(summary, labels, {label: lines[0] for label, lines in results.items() if lines})
    groups: dict[str, list[TrajectoryRecord]] = {}
    without = []
    for label, section in sections.items():
        trajectories_path = path / f"trajectories_{label}.jsonl"
        turns = {r.item_id: r for r in _read(trajectories_path, notes)} if trajectories_path.is_file() else {}
        without += [] if turns else [label]
        groups[label] = [_record(result, turns.get(result["id"]), section) for result in results[label]]
    if without:  # one note, however many cells a run has (RULER: up to 13 splits x 7 lengths)
        which = "any results file" if len(without) == len(sections) else ", ".join(f"results_{w}" for w in without)
        notes.append(f"no trajectories_*.jsonl for {which} (run with --save-trajectories to see memories)")
    records = [record for group in groups.values() for record in group]
    return RunView("evaluation", path, records, groups, summary, notes, sections=sections)


def _summary(folder: Path, live: list[str]) -> dict[str, Any] | None:
    """The folder's summary.json; none while a run holds the folder (it is an earlier run's)."""
    return read_summary(folder / SUMMARY_NAME) if (folder / SUMMARY_NAME).exists() and not live else None


def _records_file(path: Path, notes: list[str]) -> RunView:
    """One trajectory file; an evaluator's, with its results file beside it, scored by the results
    lines as the folder's page scores it (its records' own scores are HQA-style)."""
    live = _live(path.parent)
    records = _read(path, notes)
    match = _TRAJECTORIES.fullmatch(path.name)
    results_path = path.with_name(f"results_{match.group(1)}.jsonl") if match else None
    if match is None or results_path is None or not results_path.is_file():
        return RunView("records", path, records, _grouped(records), notes=live + notes)
    label = match.group(1)
    results = {result["id"]: result for result in _results(results_path, notes)}
    sections = sections_of(_summary(path.parent, live), [label], {label: next(iter(results.values()), {})})
    scored = [_record(results[r.item_id], r, sections[label]) if r.item_id in results else r for r in records]
    scored.sort(key=lambda record: _natural_key(record.item_id))
    return RunView("records", path, scored, {label: scored}, notes=live + notes, sections=sections)


def _results(results_path: Path, notes: list[str]) -> list[dict[str, Any]]:
    """A results file's items, one line each, in item order (not finishing order)."""
    try:
        chosen = unique_items(read_results(results_path, notes))
    except OSError as error:
        raise UsageError(f"{results_path} cannot be read: {error.strerror}") from None
    return sorted(chosen, key=lambda result: _natural_key(result["id"]))


def _record(result: dict[str, Any], turns: TrajectoryRecord | None, section: Section) -> TrajectoryRecord:
    """The question as its results line scores it, with its turns where the run recorded them."""
    scores = result_scores(result, section)
    if turns is None:
        return _record_of_result(result, section.label, scores)
    status = str(result.get("status", turns.status))
    return replace(
        turns, status=status, scores=scores, error=result.get("error"), extra=turns.extra | _result_facts(result)
    )


def _result_facts(result: dict[str, Any]) -> dict[str, Any]:
    """What only the results line holds, kept for the page: its mark of an empty final answer (the
    badge) and the direct baseline's `gold_in_window` (written after the trajectory record)."""
    facts: dict[str, Any] = {"empty": True} if result.get("empty") is True else {}
    window = result.get("gold_in_window")
    return facts | ({"gold_in_window": window} if isinstance(window, bool) else {})


def _natural_key(label: str) -> tuple[int, str]:
    """Numbers in numeric order, then other names: "50" < "100" < "custom"."""
    return (int(label), "") if label.isdigit() else (1 << 62, label)


def _record_of_result(result: dict[str, Any], label: str, scores: dict[str, float]) -> TrajectoryRecord:
    """A result line as a record without turns, so one page shows both kinds of evaluation run."""
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
