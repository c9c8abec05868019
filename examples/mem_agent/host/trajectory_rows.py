"""A rollout step's flat turn rows, regrouped into trajectories and scored.

Shared by the reward post-process hook and the custom convert, so both give a row the same
advantage and agree on which rows may be trained. The host hands over a flat list in which a
trajectory is the rows sharing a `rollout_id` and a prompt's group is the rows sharing a
`group_index`. A row without a `rollout_id` (another generate's output) is a trajectory of its
own under the smallest id no other row uses, as slime HEAD's and current vime's converts number
it (slime/ray/rollout.py:647-655, vime/data/batch_builder.py `BatchBuilder.convert`).

A trajectory is not trained (every row loss-masked, advantage 0, left out of its group's mean)
when any of its rows is ABORTED or FAILED or records such a trajectory status
(`untrainable_status`, the rule the reward hook and the dynamic-sampling filters share), or when
fewer rows arrive than the generate hook emitted (`metadata["mem_agent"]["num_samples"]`): the
sample-counted hosts (vime's older interface, slime v0.2.x) trim a step's rows to a multiple of the
global batch size, which can cut the last trajectory in half; its memory turns alone must not be
trained as if they were complete.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mem_agent.agent.records import TrainDataError
from mem_agent.host.advantages import StepReward, TrajectoryOutcome, turn_advantages
from mem_agent.host.reward_fields import reward_value
from mem_agent.settings.config import AgentMode, MemAgentConfig

logger = logging.getLogger(__name__)

META = "mem_agent"  # our key inside Sample.metadata
UNTRAINABLE_STATUSES = ("aborted", "failed")  # a row's status, or its trajectory's, that is never trained
_REMEMR1_METRICS = ("recall_share", "recall_hit_rate", "mean_state_reward")  # logged per rollout step
# The host's group-relative estimators (slime/ray/rollout.py:614 and :627, vime's BatchBuilder alike).
_CENTRED_ESTIMATORS = ("grpo", "gspo", "cispo", "reinforce_plus_plus_baseline")
_STD_ESTIMATORS = ("grpo", "gspo", "cispo")


@dataclass(frozen=True)
class ScoredRows:
    raw_rewards: list[float]
    advantages: list[float]
    trainable: list[bool]  # False: the row's trajectory failed, was aborted or arrived incomplete
    rollout_ids: list[Hashable]


@dataclass
class _Trajectory:
    group: Hashable
    positions: list[int] = field(default_factory=list)
    final: int | None = None
    expected_rows: int | None = None
    problem: str | None = None  # why it is not trained


def rollout_keys(samples: Sequence[Any]) -> list[Hashable]:
    """Each row's trajectory id: its `rollout_id`, or a fresh one no other row uses (the host's rule)."""
    keys: list[Hashable] = [sample.rollout_id for sample in samples]
    taken = {key for key in keys if key is not None}
    fresh = 0
    for position, key in enumerate(keys):
        if key is None:
            while fresh in taken:
                fresh += 1
            keys[position] = fresh
            taken.add(fresh)
    return keys


def info_of(sample: Any) -> dict[str, Any]:
    metadata = sample.metadata if isinstance(sample.metadata, dict) else {}
    info = metadata.get(META)
    return info if isinstance(info, dict) else {}


def ground_truths(sample: Any) -> list[str]:
    """`metadata["ground_truth"]` (a list or one string), else the label (a list or one string)."""
    metadata = sample.metadata if isinstance(sample.metadata, dict) else {}
    for truths in (metadata.get("ground_truth"), sample.label):
        if isinstance(truths, str) and truths:
            return [truths]
        if isinstance(truths, list | tuple) and truths:
            return [str(truth) for truth in truths]
    return []


@dataclass(frozen=True)
class Normalization:
    """How the host's own GRPO normalises rewards, read from its flags (slime/ray/rollout.py:612-633).

    `center`: the estimator is group-relative and `--disable-rewards-normalization` is not set;
    otherwise the host trains on raw rewards. `std`: `--disable-grpo-std-normalization` is not
    set (the host's default divides by the group std; MemAgent's released recipe does not).
    """

    center: bool
    std: bool


def host_normalization(args: Any) -> Normalization:
    estimator = getattr(args, "advantage_estimator", "grpo")
    center = estimator in _CENTRED_ESTIMATORS and bool(getattr(args, "rewards_normalization", True))
    std = center and estimator in _STD_ESTIMATORS and bool(getattr(args, "grpo_std_normalization", True))
    return Normalization(center=center, std=std)


def untrainable_status(sample: Any) -> str | None:
    """`aborted` or `failed` when this turn row's trajectory must not be trained, else None.

    The row's own status says so (the host reads it too), or the trajectory status our generate
    hook recorded in its metadata. The reward hook, the dynamic-sampling filters and the advantages
    all ask this, so a trajectory left out of one is left out of all.
    """
    status = str(getattr(sample.status, "value", sample.status)).lower()
    if status in UNTRAINABLE_STATUSES:
        return status
    recorded = info_of(sample).get("trajectory_status", "completed")
    return recorded if recorded in UNTRAINABLE_STATUSES else None


def group_trajectories(samples: Sequence[Any], keys: Sequence[Hashable]) -> dict[Hashable, _Trajectory]:
    trajectories: dict[Hashable, _Trajectory] = {}
    for position, (sample, key) in enumerate(zip(samples, keys, strict=True)):
        trajectory = trajectories.setdefault(key, _Trajectory(sample.group_index))
        if trajectory.group != sample.group_index:
            raise TrainDataError(
                f"row {position}: rollout {key!r} spans group_index {trajectory.group!r} and {sample.group_index!r}"
            )
        trajectory.positions.append(position)
        info = info_of(sample)
        if info.get("turn") == "final":
            trajectory.final = position
        if isinstance(info.get("num_samples"), int):
            trajectory.expected_rows = info["num_samples"]
        problem = untrainable_status(sample)
        if problem is not None:
            trajectory.problem = problem
    for key, trajectory in trajectories.items():
        rows, expected = len(trajectory.positions), trajectory.expected_rows
        if expected is not None and rows > expected:
            raise TrainDataError(f"rollout {key!r} has {rows} rows but its generate call emitted {expected}")
        if trajectory.problem is None and expected is not None and rows < expected:
            trajectory.problem = "incomplete"
    return trajectories


def score_rows(args: Any, samples: Sequence[Any], config: MemAgentConfig) -> ScoredRows:
    """Per row: raw reward, its trajectory's (or turn's) advantage, and whether it may be trained."""
    rollout_ids = rollout_keys(samples)
    trajectories = group_trajectories(samples, rollout_ids)
    raw_rewards = [reward_value(args, sample) for sample in samples]
    outcomes, step_rewards = [], []
    for key, trajectory in trajectories.items():
        scored_position = trajectory.final if trajectory.final is not None else trajectory.positions[0]
        reward = raw_rewards[scored_position]
        outcomes.append(TrajectoryOutcome(trajectory.group, key, reward, valid=trajectory.problem is None))
        for position in trajectory.positions:
            info = info_of(samples[position])
            if isinstance(info.get("state_reward"), int | float):  # ReMemR1 turns carry one
                step_rewards.append(StepReward(trajectory.group, key, int(info["step"]), float(info["state_reward"])))
    alpha = config.rememr1_alpha if config.mode is AgentMode.REMEMR1 else 1.0
    norm = host_normalization(args)
    advantages = turn_advantages(
        outcomes,
        step_rewards,
        alpha=alpha,
        std_normalize=norm.std,
        center=norm.center,
        state_scale=config.rememr1_state_scale,
    )
    _log_rememr1_metrics(samples, trajectories)
    problems = Counter(t.problem for t in trajectories.values() if t.problem is not None)
    if problems:
        untrained = sum(problems.values())
        logger.warning("mem_agent: %d of %d trajectories not trained: %s", untrained, len(trajectories), dict(problems))
    return ScoredRows(
        raw_rewards=raw_rewards,
        advantages=[
            advantages.of(rollout, int(info_of(sample).get("step", 0)))
            for rollout, sample in zip(rollout_ids, samples, strict=True)
        ],
        trainable=[trajectories[rollout].problem is None for rollout in rollout_ids],
        rollout_ids=rollout_ids,
    )


def _log_rememr1_metrics(samples: Sequence[Any], trajectories: dict[Hashable, _Trajectory]) -> None:
    """Per rollout step: share of turns that recall, retrieval hit rate, mean step reward."""
    facts = [info_of(samples[t.positions[0]]) for t in trajectories.values()]
    facts = [info for info in facts if "recall_share" in info]
    if facts:
        means = {key: sum(float(info[key]) for info in facts) / len(facts) for key in _REMEMR1_METRICS}
        logger.info("mem_agent rememr1: %s over %d trajectories", means, len(facts))
