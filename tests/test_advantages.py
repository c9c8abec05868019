"""GRPO advantages over trajectories, hand-computed, and the ReMemR1 mix that reduces to them."""

from __future__ import annotations

import math

import pytest

from mem_agent.advantages import StepReward, TrajectoryOutcome, centred, grpo_advantages, mixed_turn_advantages


def test_advantage_is_reward_minus_the_group_mean():
    outcomes = [TrajectoryOutcome("q1", r, reward) for r, reward in zip("abcd", [1.0, 0.0, 0.0, 1.0], strict=True)]
    outcomes += [
        TrajectoryOutcome("q2", "e", 1.0),
        TrajectoryOutcome("q2", "f", 0.0),
        TrajectoryOutcome("q2", "g", 0.0),
    ]
    advantages = grpo_advantages(outcomes)
    assert [advantages[k] for k in "abcd"] == [0.5, -0.5, -0.5, 0.5]
    assert advantages["e"] == pytest.approx(2 / 3) and advantages["f"] == pytest.approx(-1 / 3)


def test_std_normalisation_divides_by_the_unbiased_group_std():
    # rewards 1, 0, 0, 1: deviations +-0.5, unbiased std = sqrt(4 * 0.25 / 3) = sqrt(1/3)
    outcomes = [TrajectoryOutcome("q", r, reward) for r, reward in zip("abcd", [1.0, 0.0, 0.0, 1.0], strict=True)]
    advantages = grpo_advantages(outcomes, std_normalize=True)
    assert advantages["a"] == pytest.approx(0.5 / (math.sqrt(1 / 3) + 1e-6))


def test_a_group_with_one_reward_value_has_zero_advantages_even_with_std():
    outcomes = [TrajectoryOutcome("q", r, 1.0) for r in "abc"]
    assert set(grpo_advantages(outcomes, std_normalize=True).values()) == {0.0}


def test_failed_trajectories_are_left_out_of_the_mean_and_get_zero():
    outcomes = [
        TrajectoryOutcome("q", "a", 1.0),
        TrajectoryOutcome("q", "b", 0.0),
        TrajectoryOutcome("q", "c", 0.0, valid=False),
    ]
    advantages = grpo_advantages(outcomes)
    assert advantages == {"a": 0.5, "b": -0.5, "c": 0.0}


def test_a_trajectory_listed_twice_is_an_error():
    with pytest.raises(ValueError, match="appears twice"):
        grpo_advantages([TrajectoryOutcome("q", "a", 1.0), TrajectoryOutcome("q", "a", 0.0)])


def test_single_value_centres_to_zero():
    assert centred([3.0], std_normalize=True) == [0.0]


def test_mixed_advantage_with_alpha_one_is_exactly_memagents():
    outcomes = [TrajectoryOutcome("q", r, reward) for r, reward in zip("ab", [1.0, 0.0], strict=True)]
    outcome_advantages = grpo_advantages(outcomes)
    steps = [
        StepReward("q", r, s, reward) for r, s, reward in [("a", 0, 0.3), ("b", 0, 0.9), ("a", 1, 1.0), ("b", 1, 0.0)]
    ]
    mixed = mixed_turn_advantages(outcome_advantages, steps, alpha=1.0)
    assert mixed == {("a", 0): 0.5, ("b", 0): -0.5, ("a", 1): 0.5, ("b", 1): -0.5}


def test_mixed_advantage_centres_state_rewards_per_prompt_and_step():
    outcome_advantages = {"a": 0.5, "b": -0.5}
    steps = [StepReward("q", "a", 0, 0.3), StepReward("q", "b", 0, 0.9), StepReward("q", "a", 1, 1.0)]
    mixed = mixed_turn_advantages(outcome_advantages, steps, alpha=0.8)
    # step 0: states 0.3, 0.9 -> -0.3, +0.3; step 1 alone -> 0
    assert mixed[("a", 0)] == pytest.approx(0.8 * 0.5 + 0.2 * -0.3)
    assert mixed[("b", 0)] == pytest.approx(0.8 * -0.5 + 0.2 * 0.3)
    assert mixed[("a", 1)] == pytest.approx(0.8 * 0.5)
