"""slime / vime log hooks: memory-agent metrics in the host's own logger, and trajectory records.

    --custom-rollout-log-function-path mem_agent.rollout_log.log_rollout
    --custom-eval-rollout-log-function-path mem_agent.rollout_log.log_eval_rollout

Both hosts call these first in `log_rollout_data(rollout_id, args, samples, rollout_extra_metrics,
rollout_time)` and `log_eval_rollout_data(rollout_id, args, data, extra_metrics)`
(slime/observability/rollout_metrics.py:223-226 and :256-259, vime's file alike); both return
False, so the host logs its own metrics as well. Ours go out through the host's logger under
`rollout/mem_agent/...` (and `eval/<set>/mem_agent/...`), stepped like the host's, counted per
trajectory (observability/metrics.py says how each is counted).

With `--save` set, each rollout's metrics are also appended to `SAVE/trajectories/metrics.jsonl`
(the training summary's input), and every `MEM_TRAJECTORY_EVERY` rollouts a sample of
`MEM_TRAJECTORY_COUNT` trajectories goes to `SAVE/trajectories/rollout_<id>.jsonl`. A disk error
there is logged and does not stop training; an error in the metrics themselves is a bug and does.
The work is `observability/rollout_logging.py`'s.
"""

from __future__ import annotations

from typing import Any

from mem_agent.observability import rollout_logging

__all__ = ["log_eval_rollout", "log_rollout"]


def log_rollout(
    rollout_id: int, args: Any, samples: list[Any], rollout_extra_metrics: Any, rollout_time: float
) -> bool:
    """The training log hook: metrics of one rollout step, and its trajectory records."""
    rollout_logging.log_training_rollout(rollout_id, args, samples, rollout_time)
    return False  # the host logs its own metrics too


def log_eval_rollout(rollout_id: int, args: Any, data: dict[str, dict[str, Any]], extra_metrics: Any) -> bool:
    """The evaluation log hook: the same metrics per eval set (one row per question)."""
    rollout_logging.log_eval_rollout(rollout_id, args, data)
    return False
