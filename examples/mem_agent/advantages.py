"""Multi-Conv GRPO advantages: computed per trajectory, then given to every turn of it.

MemAgent scores only the final answer of a trajectory, and all of its conversations (memory turns
and final turn) are trained with that one advantage. So the group statistics are taken over
trajectories, never over rows: a trajectory with 12 memory turns must weigh in its group exactly
as much as one with 2. Then the value is broadcast to each of its turns.

- A = R - mean(R over the trajectories of the same prompt), the released MemAgent recipe;
  `std_normalize` (MEM_ADV_STD_NORM=1) also divides by the group's standard deviation (unbiased,
  like the host trainer's own GRPO) plus 1e-6.
- A trajectory that failed or was aborted is not a sample of the policy's outcome: it is left out
  of its group's statistics and gets advantage 0 (its rows are also fully loss-masked).
- ReMemR1 mixes in a per-turn state advantage: A_turn = alpha * A_outcome + (1 - alpha) * A_state,
  with state rewards grouped by (prompt, step). alpha = 1 is MemAgent exactly.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

STD_EPSILON = 1e-6


@dataclass(frozen=True)
class TrajectoryOutcome:
    group: Hashable  # the prompt: slime's Sample.group_index
    rollout: Hashable  # the trajectory: Sample.rollout_id
    reward: float
    valid: bool = True  # False for failed / aborted trajectories


def centred(values: list[float], std_normalize: bool) -> list[float]:
    """values - mean, optionally / (std + eps); a single value is centred to 0."""
    mean = sum(values) / len(values)
    deviations = [value - mean for value in values]
    if not std_normalize or len(values) < 2:
        return deviations
    std = math.sqrt(sum(d * d for d in deviations) / (len(values) - 1))
    return [d / (std + STD_EPSILON) for d in deviations]


def grpo_advantages(outcomes: Iterable[TrajectoryOutcome], *, std_normalize: bool = False) -> dict[Hashable, float]:
    """Advantage per trajectory (keyed by rollout) from group-relative outcome rewards."""
    by_group: dict[Hashable, list[TrajectoryOutcome]] = defaultdict(list)
    advantages: dict[Hashable, float] = {}
    seen: set[Hashable] = set()
    for outcome in outcomes:
        if outcome.rollout in seen:
            raise ValueError(f"trajectory {outcome.rollout!r} appears twice")
        seen.add(outcome.rollout)
        if outcome.valid:
            by_group[outcome.group].append(outcome)
        else:
            advantages[outcome.rollout] = 0.0
    for members in by_group.values():
        for member, value in zip(members, centred([m.reward for m in members], std_normalize), strict=True):
            advantages[member.rollout] = value
    return advantages


@dataclass(frozen=True)
class StepReward:
    group: Hashable
    rollout: Hashable
    step: int
    reward: float


def mixed_turn_advantages(
    outcome_advantages: Mapping[Hashable, float],
    step_rewards: Iterable[StepReward],
    alpha: float,
    *,
    std_normalize: bool = False,
) -> dict[tuple[Hashable, int], float]:
    """ReMemR1: alpha * A_outcome + (1 - alpha) * A_state per (rollout, step).

    State rewards are centred within (prompt, step): the turns that read the same chunk of the
    same document compete with each other. Trajectories without a valid outcome stay at 0.
    """
    by_slot: dict[tuple[Hashable, int], list[StepReward]] = defaultdict(list)
    for reward in step_rewards:
        by_slot[(reward.group, reward.step)].append(reward)
    mixed: dict[tuple[Hashable, int], float] = {}
    for members in by_slot.values():
        states = centred([m.reward for m in members], std_normalize)
        for member, state in zip(members, states, strict=True):
            outcome = outcome_advantages.get(member.rollout, 0.0)
            mixed[(member.rollout, member.step)] = alpha * outcome + (1.0 - alpha) * state
    return mixed
