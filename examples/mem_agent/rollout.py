"""slime / vime hooks: run the memory agent for one sample and hand back its turns as samples.

    --custom-generate-function-path mem_agent.rollout.generate
    --custom-rm-path mem_agent.rollout.reward
    --custom-reward-post-process-path mem_agent.rollout.reward_post_process
    --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data

Training (`evaluation=False`) returns Multi-Conv output: one Sample per turn (each memory turn
and the final turn, each its own prompt and response), all carrying the trajectory's `rollout_id`
(the input's `index`, the host's fan-out convention) and its `group_index`. The final answer's
strict reward is set on every turn, so the host's reward model is not called again (it skips
samples whose reward is set); advantages are computed per trajectory in `reward_post_process` /
`custom_convert` and broadcast to turns. Evaluation returns only the final-answer Sample, so the
host's eval accuracy is per question, not per turn.

Rewards follow the host's flags (`host/reward_fields.py`): a number, or with `--reward-key` a dict that
carries the strict reward under that key and the accuracy fields beside it. Host flags that cannot
work with a fan-out are refused at the first call, before any request (`host/flags.py`).

Statuses: a turn cut by max_tokens is TRUNCATED and still trained (MemAgent keeps cut memories).
A trajectory with an aborted turn is ABORTED in every sample. slime and vime then skip the reward
model for the whole list and keep it in its group; such a group reaches training only if it
finished before the step's own abort (an engine restarted by fault tolerance, an operator's
abort), so every row is loss-masked here, rewarded 0 and left out of its group's mean. Groups
still running at the step's abort are dropped by the host (--partial-rollout, which would
re-queue them, is refused). A trajectory whose request failed for good (GenerationError) is
FAILED with the reason in `metadata["error"]` and treated like an aborted one: a half
trajectory is never trained as if complete.

Abort: `generate.abort_mode = "request"`. A host that reads the attribute (current vime) ends a
rollout by cancelling this coroutine: the cancellation closes our in-flight HTTP request (the
engine drops it) and no later turn is sent, while other requests on the engines are left alone.
A host that does not read it (slime HEAD 624b824) aborts every request on every engine instead;
each trajectory then ends ABORTED at its next turn, and one that was between two turns at that
moment may send its next turn after the sweep.

Token limits are MEM_MAX_MEMORY and MEM_MAX_FINAL, not the host's --rollout-max-response-len;
sampling and the router come from the host's args (`host/clients.py`). What the hooks do lives in
`host/`: one sample through the agent and its reward (`sample_rollout`), the trajectory as host
Samples (`trajectory_samples`), GRPO over trajectories (`trajectory_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mem_agent.host import hook_config
from mem_agent.host.hook_config import scored_rows
from mem_agent.host.sample_rollout import roll_out_sample, sample_reward

__all__ = ["generate", "reset_caches", "reward", "reward_post_process"]


def reset_caches() -> None:
    """Forget settings, agents and clients (tests change MEM_* between cases)."""
    hook_config.reset_caches()


async def generate(args: Any, sample: Any, sampling_params: dict[str, Any], evaluation: bool = False) -> Any:
    """The custom generate hook: a Sample in, a list of turn Samples (training) or one (evaluation)."""
    return await roll_out_sample(args, sample, sampling_params, evaluation)


# The host cancels this coroutine to end a rollout instead of aborting every engine (see above).
generate.abort_mode = "request"  # type: ignore[attr-defined]


async def reward(args: Any, sample_or_samples: Any, **kwargs: Any) -> Any:
    """The custom reward hook: strict reward of the trajectory's final answer, for one or many samples.

    Shaped like the rewards generate sets (a number, or a dict under --reward-key): the host
    stores whatever this returns in `Sample.reward` and reads it back with its own flags.
    """
    if isinstance(sample_or_samples, list):
        return [sample_reward(args, sample) for sample in sample_or_samples]
    return sample_reward(args, sample_or_samples)


def reward_post_process(args: Any, samples: Sequence[Any]) -> tuple[list[float], list[float]]:
    """(raw rewards, advantages) per row: GRPO over trajectories grouped by group_index.

    The host's own normalisation reshapes rows into groups of n; with a fan-out the row count per
    group varies, so grouping must use group_index, and statistics must count each trajectory once.
    """
    scored = scored_rows(args, samples)
    return scored.raw_rewards, scored.advantages
