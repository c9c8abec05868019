"""The evaluator's `--save-trajectories`: each finished item's trajectory record, in the store of its
eval file (`trajectories_<N>.jsonl` beside `results_<N>.jsonl`, see trajectory_store.py).

The evaluator's engine knows nothing of records: the command hands `keep_trajectories` to the run
(evaluation/run.py), which calls it once the result stores are open and passes what it returns to
the engine as the callback that sees every trajectory.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from mem_agent.agent.chunking import TokenIds
from mem_agent.agent.direct_reading import DIRECT_MODE, DirectReader
from mem_agent.agent.records import Trajectory, TrajectoryStatus
from mem_agent.agent.scoring import AnswerScores
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.evaluation.evaluator import OnTrajectory
from mem_agent.evaluation.files import EvalFile, EvalItem
from mem_agent.evaluation.results import ResultStore
from mem_agent.observability.trajectory_records import RecordFormatError, record_of
from mem_agent.observability.trajectory_store import TrajectoryStore, trajectories_name


def keep_trajectories(
    reader: MemoryAgent | DirectReader, output_dir: Path, stores: dict[EvalFile, ResultStore], force: bool
) -> OnTrajectory:
    """Each file's records, trimmed to the items whose results are reused, and the callback that
    appends each finished item's record. A malformed earlier record is a DataFormatError."""
    try:
        trajectories = {
            file: TrajectoryStore.open(output_dir / trajectories_name(file.results_name), store.done, force=force)
            for file, store in stores.items()
        }
    except RecordFormatError as error:
        raise DataFormatError(str(error)) from None
    return functools.partial(_keep_record, reader, trajectories)


def _keep_record(
    reader: MemoryAgent | DirectReader,
    stores: dict[EvalFile, TrajectoryStore],
    file: EvalFile,
    item: EvalItem,
    trajectory: Trajectory,
    scores: AnswerScores,
    metrics: dict[str, float],
    document: TokenIds,
) -> None:
    completed = trajectory.status is TrajectoryStatus.COMPLETED
    record = record_of(
        trajectory,
        lambda ids: reader.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True),
        source="eval",
        item_id=item.item_id,
        question=item.question,
        ground_truths=item.answers,
        mode=DIRECT_MODE if isinstance(reader, DirectReader) else reader.config.mode.value,
        scores=scores if completed else None,
        document=document,
        eval_set=file.path.name,
    )
    if completed:  # the suite's own scores, as its result line holds them (string_match_all, qa_f1, ...)
        record = dataclasses.replace(record, scores=dict(metrics))
    stores[file].append(record)
