"""What the log hooks (mem_agent.rollout_log) do with a rollout step: memory-agent metrics in the
host's own logger, a line per rollout (and per eval set) in `SAVE/trajectories/metrics.jsonl`, and
every `MEM_TRAJECTORY_EVERY` rollouts a sample of `MEM_TRAJECTORY_COUNT` trajectory records.

A disk error is logged and training goes on; an error in the metrics themselves is a bug and
stops it. One process writes a run folder's records: a second trainer on the same SAVE_PATH logs
to its logger only, and says who holds the folder.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import check_output
from mem_agent.common.run_folder import hold_run_folder, lock_path
from mem_agent.common.usage import UsageError
from mem_agent.host.hook_config import settings
from mem_agent.observability.host_logging import (
    METRICS_FILE,
    append_metrics_line,
    log_to_host,
    rollout_step,
    save_dir,
)
from mem_agent.observability.metrics import prefixed, summarize, trajectories_of_eval, trajectories_of_rows
from mem_agent.observability.train_records import (
    TRAJECTORY_DIR,
    is_recorded,
    pick,
    records_of_rows,
    records_path,
    write_records,
)

__all__ = ["log_eval_rollout", "log_training_rollout"]

logger = logging.getLogger(__name__)


def log_training_rollout(rollout_id: int, args: Any, samples: list[Any], rollout_time: float) -> None:
    """Metrics of one training rollout step to the host's logger and the metrics file, and a sample
    of its trajectory records."""
    config = settings()
    trajectories = trajectories_of_rows(args, samples)
    metrics = summarize(trajectories, groups=True)
    step = rollout_step(args, rollout_id)
    log_to_host(args, prefixed(metrics, "rollout/mem_agent/"), step_key="rollout/step", step=step)
    folder = _records_folder(args)
    if folder is None:
        return
    line = {"kind": "rollout", "rollout_id": rollout_id, "step": step, "rollout_time": rollout_time, **metrics}
    try:
        append_metrics_line(folder / TRAJECTORY_DIR / METRICS_FILE, line)
        if is_recorded(rollout_id, config.trajectory_every):
            keys = pick(trajectories, config.trajectory_count, seed=rollout_id)
            records = records_of_rows(args, samples, keys, rollout_id=rollout_id, mode=config.mode.value)
            size = write_records(records_path(folder, rollout_id), records)
            logger.info("mem_agent: %d trajectory records of rollout %d, %d bytes", len(records), rollout_id, size)
    except (OSError, UsageError) as error:  # a full disk, a link in the folder: the run goes on, what is lost is named
        logger.warning("mem_agent: could not write under %s for rollout %d: %s", folder, rollout_id, error)


def log_eval_rollout(rollout_id: int, args: Any, data: dict[str, dict[str, Any]]) -> None:
    """The same metrics per eval set of one evaluation (one row per question)."""
    step = rollout_step(args, rollout_id)
    per_set = {}
    log: dict[str, float] = {}
    for name, result in data.items():
        samples = result.get("samples")
        if not samples:  # a host that keeps only rewards: nothing of the turns to count
            continue
        per_set[name] = summarize(trajectories_of_eval(result["rewards"], samples), groups=False)
        log |= prefixed(per_set[name], f"eval/{name}/mem_agent/")
    log_to_host(args, log, step_key="eval/step", step=step)
    folder = _records_folder(args)
    if folder is not None:
        try:
            for name, metrics in per_set.items():
                line = {"kind": "eval", "rollout_id": rollout_id, "step": step, "eval_set": name, **metrics}
                append_metrics_line(folder / TRAJECTORY_DIR / METRICS_FILE, line)
        except (OSError, UsageError) as error:
            logger.warning("mem_agent: could not write eval metrics under %s: %s", folder, error)


def _records_folder(args: Any) -> Path | None:
    """The --save folder, once this process holds SAVE/trajectories/ for the rest of its life: one
    writer per run folder, so a second trainer on the same SAVE_PATH records nothing there (the
    error says who holds it) instead of interleaving its records with the first's."""
    folder = save_dir(args)
    if folder is None:
        return None
    try:
        check_output(lock_path(folder / TRAJECTORY_DIR), root=folder)  # SAVE/trajectories itself no link
        hold_run_folder(
            folder / TRAJECTORY_DIR,
            command="trainer (mem_agent.rollout_log)",
            instead="give each run its own SAVE_PATH",
        )
    except UsageError as error:
        logger.error("mem_agent: no metrics or trajectory records written: %s", error)
        return None
    except OSError as error:  # the run goes on; what is lost is named
        logger.warning("mem_agent: could not write under %s: %s", folder, error)
        return None
    return folder
