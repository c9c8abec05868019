"""GRPO advantages over trajectories, hand-computed, and the ReMemR1 mix that reduces to them."""

from __future__ import annotations

import math

import pytest

from mem_agent.host.advantages import StepReward, TrajectoryOutcome, centred, grpo_advantages, turn_advantages


def _group(group: str, rewards: dict[str, float]) -> list[TrajectoryOutcome]:
    return [TrajectoryOutcome(group, rollout, reward) for rollout, reward in rewards.items()]


def test_advantage_is_reward_minus_the_mean_of_its_own_groups_trajectories():
    """A = R - mean(R) within a prompt's group; another group's rewards never enter that mean."""
    outcomes = _group("q1", {"a": 1.0, "b": 0.0, "c": 0.0, "d": 1.0}) + _group("q2", {"e": 1.0, "f": 0.0, "g": 0.0})
    advantages = grpo_advantages(outcomes)
    assert [advantages[k] for k in "abcd"] == [0.5, -0.5, -0.5, 0.5]
    assert advantages["e"] == pytest.approx(2 / 3) and advantages["f"] == pytest.approx(-1 / 3)


def test_std_normalisation_divides_by_the_unbiased_group_std_plus_epsilon():
    """rewards 1, 0, 0, 1: deviations +-0.5, unbiased std sqrt(4 * 0.25 / 3), as the host's torch.std."""
    advantages = grpo_advantages(_group("q", {"a": 1.0, "b": 0.0, "c": 0.0, "d": 1.0}), std_normalize=True)
    assert advantages["a"] == pytest.approx(0.5 / (math.sqrt(1 / 3) + 1e-6))
    assert advantages["b"] == pytest.approx(-0.5 / (math.sqrt(1 / 3) + 1e-6))


def test_a_group_where_every_trajectory_scored_the_same_has_zero_advantages_even_with_std():
    """Nothing to learn from a group without contrast; std division must not blow 0/0 up."""
    assert set(grpo_advantages(_group("q", dict.fromkeys("abc", 1.0)), std_normalize=True).values()) == {0.0}


def test_failed_trajectories_are_left_out_of_the_mean_and_get_zero():
    """A failure is not an outcome of the policy: counting it as reward 0 would bias the baseline."""
    outcomes = [*_group("q", {"a": 1.0, "b": 0.0}), TrajectoryOutcome("q", "c", 0.0, valid=False)]
    assert grpo_advantages(outcomes) == {"a": 0.5, "b": -0.5, "c": 0.0}


def test_a_group_whose_trajectories_all_failed_gets_zeros_and_no_error():
    outcomes = [TrajectoryOutcome("q", rollout, 1.0, valid=False) for rollout in "ab"]
    assert grpo_advantages(outcomes, std_normalize=True) == {"a": 0.0, "b": 0.0}


def test_a_trajectory_listed_twice_is_an_error():
    with pytest.raises(ValueError, match="appears twice"):
        grpo_advantages([TrajectoryOutcome("q", "a", 1.0), TrajectoryOutcome("q", "a", 0.0)])


def test_a_single_value_centres_to_zero_instead_of_nan():
    """The host's torch.std of one element is NaN; a lone trajectory must not poison the loss."""
    assert centred([3.0], std_normalize=True) == [0.0]


def test_without_state_rewards_every_turn_gets_its_trajectorys_outcome_advantage():
    """MemAgent: the same advantage for every turn of a trajectory, whatever its step."""
    advantages = turn_advantages(_group("q", {"a": 1.0, "b": 0.0}), alpha=0.8)
    assert [advantages.of("a", step) for step in range(4)] == [0.5] * 4
    assert advantages.of("b", 7) == -0.5


def test_alpha_one_ignores_state_rewards_exactly():
    """alpha = 1 is MemAgent: state rewards given for any turn change nothing."""
    steps = [StepReward("q", r, s, x) for r, s, x in [("a", 0, 0.3), ("b", 0, 0.9), ("a", 1, 1.0), ("b", 1, 0.0)]]
    advantages = turn_advantages(_group("q", {"a": 1.0, "b": 0.0}), steps, alpha=1.0)
    assert advantages.by_turn == {} and advantages.of("a", 0) == 0.5 and advantages.of("b", 1) == -0.5


def test_state_rewards_are_centred_per_prompt_and_step_and_mixed_with_alpha():
    """A_turn = alpha * A_outcome + (1 - alpha) * A_state, states compared with the same step's turns."""
    steps = [StepReward("q", "a", 0, 0.3), StepReward("q", "b", 0, 0.9), StepReward("q", "a", 1, 1.0)]
    advantages = turn_advantages(_group("q", {"a": 1.0, "b": 0.0}), steps, alpha=0.8)
    # step 0: states 0.3, 0.9 -> -0.3, +0.3; step 1 has a alone -> 0
    assert advantages.of("a", 0) == pytest.approx(0.8 * 0.5 + 0.2 * -0.3)
    assert advantages.of("b", 0) == pytest.approx(0.8 * -0.5 + 0.2 * 0.3)
    assert advantages.of("a", 1) == pytest.approx(0.8 * 0.5)
    assert advantages.of("b", 1) == -0.5, "a turn without a state reward keeps the outcome advantage"


def test_an_invalid_trajectory_stays_at_zero_on_every_turn_and_out_of_the_state_statistics():
    outcomes = [*_group("q", {"a": 1.0, "b": 0.0}), TrajectoryOutcome("q", "c", 0.0, valid=False)]
    steps = [StepReward("q", "a", 0, 0.2), StepReward("q", "b", 0, 0.4), StepReward("q", "c", 0, 9.0)]
    advantages = turn_advantages(outcomes, steps, alpha=0.5)
    assert advantages.of("c", 0) == 0.0
    assert advantages.of("a", 0) == pytest.approx(0.5 * 0.5 + 0.5 * -0.1), "c's 9.0 is not in step 0's mean"


def test_a_state_reward_for_an_unknown_trajectory_is_an_error():
    with pytest.raises(ValueError, match="unknown trajectory"):
        turn_advantages(_group("q", {"a": 1.0}), [StepReward("q", "zz", 0, 1.0)], alpha=0.5)


def test_without_centering_each_trajectory_keeps_its_raw_reward_and_std_is_not_applied():
    """The host's --disable-rewards-normalization (or a non-group estimator): raw rewards, failures still 0."""
    outcomes = [*_group("q", {"a": 1.0, "b": 0.0, "c": 1.0}), TrajectoryOutcome("q", "d", 1.0, valid=False)]
    assert grpo_advantages(outcomes, std_normalize=True, center=False) == {"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}
    steps = [StepReward("q", "a", 0, 0.25), StepReward("q", "b", 0, 0.75)]
    mixed = turn_advantages(_group("q", {"a": 1.0, "b": 0.0}), steps, alpha=0.5, center=False)
    assert mixed.of("a", 0) == pytest.approx(0.5 * 1.0 + 0.5 * 0.25) and mixed.of("b", 0) == pytest.approx(0.375)
