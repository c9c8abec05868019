"""Multi-Conv GRPO advantages: computed per trajectory, then given to every turn of it.

Pure arithmetic on small records; it knows nothing of samples or hosts, so the reward
post-process hook and the custom convert share this one implementation.

MemAgent scores only the final answer of a trajectory, and all of its conversations (memory turns
and final turn) are trained with that one advantage. So the group statistics are taken over
trajectories, never over rows: a trajectory with 12 memory turns weighs in its group exactly as
much as one with 2. Then the value is broadcast to each of its turns.

- A = R - mean(R over the trajectories of the same prompt), the released MemAgent recipe;
  `std_normalize` also divides by the group's standard deviation (unbiased, as the host trainer's
  own GRPO does) plus 1e-6. Both switches are the host's own flags, read by the caller
  (`trajectory_rows.host_normalization`): `--disable-rewards-normalization` (or a non-group
  estimator) turns `center` off, and the advantage is then the raw reward, as in the host;
  `--disable-grpo-std-normalization` turns `std_normalize` off (MemAgent's recipe). A group of
  one trajectory centres to 0 (the host's formula would give NaN there).
- A trajectory that failed, was aborted or reached us incomplete is not a sample of the policy's
  outcome: it is left out of its group's statistics and gets advantage 0 (its rows are also fully
  loss-masked by the caller).
- The ReMemR1 seam: a turn may also carry a state reward. Then
  A_turn = alpha * A_outcome + (1 - alpha) * A_state, with state rewards centred among the valid
  turns of the same prompt and step. Turns without a state reward keep A_outcome, so alpha = 1 or
  no state rewards at all is MemAgent exactly. `state_scale` multiplies the state rewards before
  centring: the released ReMemR1 code sums each turn's state reward over two tiled columns, so its
  state advantage is twice the centred reward (MEM_REMEMR1_STATE_SCALE, default 2; with std
  normalisation the scale cancels, up to the epsilon).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

STD_EPSILON = 1e-6


@dataclass(frozen=True)
class TrajectoryOutcome:
    group: Hashable  # the prompt: the host's Sample.group_index
    rollout: Hashable  # the trajectory: Sample.rollout_id
    reward: float
    valid: bool = True  # False for failed, aborted or incomplete trajectories


@dataclass(frozen=True)
class StepReward:
    """A per-turn state reward (ReMemR1); `step` is the turn's step within its trajectory."""

    group: Hashable
    rollout: Hashable
    step: int
    reward: float


@dataclass(frozen=True)
class TurnAdvantages:
    """Advantages of one rollout step: per trajectory, and per turn where a state reward mixed in."""

    by_rollout: dict[Hashable, float]
    by_turn: dict[tuple[Hashable, int], float] = field(default_factory=dict)

    def of(self, rollout: Hashable, step: int) -> float:
        return self.by_turn.get((rollout, step), self.by_rollout[rollout])


def centred(values: list[float], std_normalize: bool, center: bool = True) -> list[float]:
    """values - mean, optionally / (unbiased std + eps); a single value is centred to 0.

    `center=False` returns the values unchanged: the host then trains on raw rewards.
    """
    if not center:
        return list(values)
    mean = sum(values) / len(values)
    deviations = [value - mean for value in values]
    if not std_normalize or len(values) < 2:
        return deviations
    std = math.sqrt(sum(d * d for d in deviations) / (len(values) - 1))
    return [d / (std + STD_EPSILON) for d in deviations]


def grpo_advantages(
    outcomes: Iterable[TrajectoryOutcome], *, std_normalize: bool = False, center: bool = True
) -> dict[Hashable, float]:
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
        values = centred([m.reward for m in members], std_normalize, center)
        for member, value in zip(members, values, strict=True):
            advantages[member.rollout] = value
    return advantages


def turn_advantages(
    outcomes: Iterable[TrajectoryOutcome],
    step_rewards: Iterable[StepReward] = (),
    *,
    alpha: float = 1.0,
    std_normalize: bool = False,
    state_scale: float = 1.0,
    center: bool = True,
) -> TurnAdvantages:
    """Outcome advantages per trajectory, mixed with state advantages per turn where given."""
    outcomes = list(outcomes)
    by_rollout = grpo_advantages(outcomes, std_normalize=std_normalize, center=center)
    valid = {outcome.rollout for outcome in outcomes if outcome.valid}
    by_slot: dict[tuple[Hashable, int], list[StepReward]] = defaultdict(list)
    for reward in step_rewards:
        if reward.rollout not in by_rollout:
            raise ValueError(f"state reward for unknown trajectory {reward.rollout!r}")
        if reward.rollout in valid:  # invalid trajectories stay at 0 on every turn
            by_slot[(reward.group, reward.step)].append(reward)
    by_turn: dict[tuple[Hashable, int], float] = {}
    if alpha < 1.0:
        for members in by_slot.values():
            states = centred([state_scale * m.reward for m in members], std_normalize, center)
            for member, state in zip(members, states, strict=True):
                by_turn[(member.rollout, member.step)] = alpha * by_rollout[member.rollout] + (1.0 - alpha) * state
    return TurnAdvantages(by_rollout, by_turn)
