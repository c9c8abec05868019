"""Send metrics through the host trainer's own logger, stepped as the host steps its own.

Both hosts log a rollout's metrics with `logging_utils.log(args, metrics, step_key=...)` (W&B
and/or TensorBoard, as the run is set up), the step being `metric_utils.compute_rollout_step(args,
rollout_id)` under `rollout/step` (training) or `eval/step` (evaluation); W&B binds `rollout/*` and
`eval/*` to those step keys (slime/observability/rollout_metrics.py:249-271, wandb_utils.py:168-176;
vime/observability/ the same). The host imports its `logging_utils` and `metric_utils` before it
calls a custom log function (rollout_metrics.py:7-14), so they are found among the loaded modules:
this works in slime and in vime alike without importing either, and never picks a host that is
merely installed. Without a host (a test, a laptop) the metrics go to the Python log only.

Besides, every rollout's metrics are appended to `--save/trajectories/metrics.jsonl`, one
flushed line each, which `python -m mem_agent.train_summary` reads.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from mem_agent.common.guarded_files import append_bytes

logger = logging.getLogger("mem_agent.observability")

HOSTS = ("vime", "slime")
METRICS_FILE = "metrics.jsonl"


def host_modules() -> tuple[ModuleType, ModuleType] | None:
    """(logging_utils, metric_utils) of the host that is running us, or None outside a host."""
    for host in HOSTS:
        log = sys.modules.get(f"{host}.observability.logging_utils")
        steps = sys.modules.get(f"{host}.observability.metric_utils")
        if log is not None and steps is not None:
            return log, steps
    return None


def rollout_step(args: Any, rollout_id: int) -> int:
    """The host's step for a rollout (`--wandb-always-use-train-step` counts optimizer steps)."""
    modules = host_modules()
    if modules is not None:
        return int(modules[1].compute_rollout_step(args, rollout_id))
    return rollout_id


def log_to_host(args: Any, metrics: dict[str, float], *, step_key: str, step: int) -> None:
    """One call of the host's logger with `metrics` and the step under `step_key`."""
    metrics = {**metrics, step_key: step}
    logger.info("mem_agent %s %d: %s", step_key, step, metrics)
    modules = host_modules()
    if modules is not None:
        modules[0].log(args, metrics, step_key=step_key)


def save_dir(args: Any) -> Path | None:
    """The trainer's --save folder, where checkpoints go; None when the run saves nothing."""
    save = getattr(args, "save", None)
    return Path(save) if save else None


def append_metrics_line(path: Path, line: dict[str, Any]) -> None:
    """Append one line and flush it: a crash loses at most the line being written. A rollout
    run again after a resume appends a second line; readers keep the last one per rollout."""
    append_bytes(path, orjson.dumps({**line, "time": round(time.time(), 3)}) + b"\n")
