"""One host Sample through the memory agent, and the reward of one Sample: what the generate and
reward hooks (mem_agent.rollout) do.

The agent, its settings and the client to the host's router are made once per process
(`hook_config`, `clients`); host flags that cannot work with a fan-out are refused at the first
call, before any request (`flags`). A sample without a str prompt and a str
`metadata["context"]` is a FAILED trajectory with that reason, never an exception that would stop
the host's rollout.
"""

from __future__ import annotations

import logging
from typing import Any

from mem_agent.agent.records import Trajectory, TrajectoryStatus
from mem_agent.agent.scoring import ReportingRules, score_answer
from mem_agent.host.clients import client_for, sampling_from_host
from mem_agent.host.flags import check_host_args
from mem_agent.host.hook_config import agent_for, settings
from mem_agent.host.reward_fields import reward_record
from mem_agent.host.trajectory_rows import ground_truths, info_of, untrainable_status
from mem_agent.host.trajectory_samples import TrajectorySamples, outcome

__all__ = ["roll_out_sample", "sample_reward"]

logger = logging.getLogger(__name__)


async def roll_out_sample(args: Any, sample: Any, sampling_params: dict[str, Any], evaluation: bool) -> Any:
    """A list of turn Samples (training) or the final-answer Sample (evaluation) for one Sample."""
    config = settings()
    check_host_args(args, training=not evaluation, config=config)
    agent = agent_for(str(args.hf_checkpoint), config)
    metadata = sample.metadata if isinstance(sample.metadata, dict) else {}
    context = metadata.get("context")
    if not isinstance(context, str) or not isinstance(sample.prompt, str):
        trajectory = Trajectory(
            turns=[],
            status=TrajectoryStatus.FAILED,
            error="sample needs a str prompt and a str metadata['context'] (see prepare_data.py)",
        )
    else:
        trajectory = await agent.run(
            sample.prompt, context, client_for(args, config), sampling_from_host(sampling_params)
        )
    if trajectory.status is not TrajectoryStatus.COMPLETED:
        logger.warning("mem_agent: sample %s ended %s: %s", sample.index, trajectory.status, trajectory.error)
    samples = TrajectorySamples(args, sample, trajectory, agent)
    return samples.final_sample() if evaluation else samples.turn_samples()


def sample_reward(args: Any, sample: Any) -> Any:
    """The strict reward of the sample's trajectory, shaped as the host's flags read it (0 for a
    trajectory that cannot be trained, by the rule the advantages and the filters follow too)."""
    info = info_of(sample)
    untrainable = untrainable_status(sample)
    if untrainable is not None:
        return reward_record(args, 0.0, None, outcome(TrajectoryStatus(untrainable), 0.0))
    rules = ReportingRules.of(settings())
    scores = score_answer(info.get("answer", sample.response), ground_truths(sample), rules=rules)
    return reward_record(args, scores.strict, scores, outcome(TrajectoryStatus.COMPLETED, scores.strict))
