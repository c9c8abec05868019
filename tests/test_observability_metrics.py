"""How each memory-agent metric is counted, on hand-made trajectories: every trajectory once in
every trajectory-level figure (failed ones included, scoring 0), turn-level figures pooled over
turns, reward contrast judged over the trajectories that are trained, and the record sample
holding correct and wrong trajectories alike."""

from __future__ import annotations

import pytest

from mem_agent.observability.metrics import TrajectoryFacts, TurnFacts, summarize
from mem_agent.observability.train_records import is_recorded, pick

RIGHT = {"strict": 1.0, "sub_em": 1.0, "em": 1.0, "f1": 1.0}
WRONG = {"strict": 0.0, "sub_em": 1.0, "em": 0.0, "f1": 0.5}


def memory(tokens: int, cut: bool = False, **extra) -> TurnFacts:
    return TurnFacts("memory", tokens, tokens + 1, cut, **extra)


def final(tokens: int = 10, cut: bool = False) -> TurnFacts:
    return TurnFacts("final", 0, tokens, cut)


def trajectory(key, group, reward, scores, turns, status="completed", box=True) -> TrajectoryFacts:
    return TrajectoryFacts(key, group, status, reward, scores, box, tuple(turns))


def rollout() -> list[TrajectoryFacts]:
    return [
        # group 0: one right (8 memory turns), one wrong (1 memory turn)
        trajectory(0, 0, 1.0, RIGHT, [memory(10 * i) for i in range(1, 9)] + [final()]),
        trajectory(1, 0, 0.0, WRONG, [memory(100, cut=True), final(cut=True)], box=False),
        # group 1: one wrong, one failed with no turn: no trained contrast
        trajectory(2, 1, 0.0, WRONG, [memory(5), final()]),
        trajectory(3, 1, 0.0, None, [], status="failed", box=False),
    ]


def test_trajectory_figures_weigh_each_trajectory_once_and_failures_count_zero():
    metrics = summarize(rollout())
    assert metrics["trajectories"] == 4
    assert metrics["reward/mean"] == 0.25, "the 9-turn trajectory counts once, not 9 times"
    assert metrics["reward/std"] == pytest.approx(0.4330127)
    assert metrics["accuracy/strict"] == 0.25 and metrics["accuracy/sub_em"] == 0.75, "failed is in the denominator"
    assert metrics["accuracy/f1"] == pytest.approx((1.0 + 0.5 + 0.5) / 4)
    assert metrics["status/failed"] == 1 and metrics["status/aborted"] == 0
    assert metrics["turns/mean"] == (9 + 2 + 2 + 0) / 4 and metrics["turns/max"] == 9
    assert metrics["answer/box_share"] == pytest.approx(2 / 3), "over the trajectories that answered"
    assert metrics["answer/cut_share"] == pytest.approx(1 / 3)


def test_turn_figures_pool_the_memory_turns_of_the_rollout():
    metrics = summarize(rollout())
    lengths = [10, 20, 30, 40, 50, 60, 70, 80, 100, 5]
    assert metrics["memory_tokens/mean"] == pytest.approx(sum(lengths) / 10)
    assert metrics["memory_tokens/p50"] == pytest.approx(45.0)
    assert metrics["memory_tokens/p95"] == pytest.approx(91.0)
    assert metrics["memory/cut_share"] == pytest.approx(0.1)
    assert metrics["response_tokens/memory_mean"] == pytest.approx(sum(lengths) / 10 + 1)
    assert metrics["response_tokens/final_mean"] == 10


def test_a_group_without_contrast_among_trained_trajectories_is_counted_per_trajectory():
    """Group 1 has a 0 and a failed 0: the failed one is not trained, so nothing contrasts."""
    metrics = summarize(rollout())
    assert metrics["zero_contrast/groups"] == 1 and metrics["zero_contrast/group_share"] == 0.5
    assert metrics["zero_contrast/trajectory_share"] == 0.5
    assert "zero_contrast/groups" not in summarize(rollout(), groups=False), "evaluation has no groups"


def test_recall_figures_appear_only_when_turns_recall():
    assert not any(key.startswith("rememr1/") for key in summarize(rollout()))
    turns = [
        memory(3, recall_asked=True, recall_hit=True, state_reward=0.5),
        memory(3, recall_asked=True, recall_hit=False, state_reward=0.0),
        memory(3, state_reward=1.0),
        memory(3, recall_asked=True, state_reward=0.5),  # asked, nothing recalled
        final(),
    ]
    metrics = summarize([trajectory(0, 0, 1.0, RIGHT, turns)])
    assert metrics["rememr1/recall_rate"] == 0.75 and metrics["rememr1/recall_hits"] == 1
    assert metrics["rememr1/recall_hit_rate"] == 0.5 and metrics["rememr1/state_reward_mean"] == 0.5


def test_the_record_sample_holds_both_kinds_and_tops_up_when_one_falls_short():
    many = [trajectory(i, i // 4, float(i % 3 == 0), RIGHT, []) for i in range(40)]
    chosen = pick(many, 8, seed=5)
    rewards = [many[key].reward for key in chosen]
    assert len(chosen) == 8 and rewards.count(1.0) == 4 and chosen == sorted(chosen)
    assert pick(many, 8, seed=5) == chosen, "the same rollout records the same trajectories"
    one_right = [trajectory(i, 0, float(i == 3), RIGHT, []) for i in range(10)]
    assert 3 in pick(one_right, 4, seed=1) and len(pick(one_right, 4, seed=1)) == 4
    assert len(pick(one_right[:2], 8, seed=0)) == 2
    failed = trajectory(99, 0, 1.0, None, [], status="failed")
    assert pick([failed], 1, seed=0) == [99], "a failed trajectory is a wrong one"


def test_records_are_written_every_n_rollouts_from_rollout_zero_and_never_with_zero():
    assert [i for i in range(7) if is_recorded(i, 3)] == [0, 3, 6]
    assert not any(is_recorded(i, 0) for i in range(5))
