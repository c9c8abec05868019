"""ReMemR1 against the released code: recall candidates, memory, state rewards and their weight."""

from __future__ import annotations

import numpy as np
import pytest

from mem_agent.advantages import StepReward, TrajectoryOutcome, turn_advantages
from mem_agent.config import ConfigError, MemAgentConfig, RetrieverKind
from mem_agent.records import Completion, FinishReason
from mem_agent.rememr1 import ReMemR1Planner, ReMemR1Prompts
from mem_agent.tokenizer import encode
from mem_agent.trajectory_rows import score_rows
from support.slime_host import Sample, host_args

# Invented facts; the query of each step names only what an earlier memory holds.
QUESTION = "Which river flows past the town where Orla Fenwick was born?"


def _completion(tokenizer, text: str) -> tuple[np.ndarray, Completion]:
    ids = encode(tokenizer, text)
    return ids, Completion.build(ids.tolist(), [-1.0] * len(ids), FinishReason.STOP)


def _planner(tokenizer, retriever: RetrieverKind = RetrieverKind.RECALL) -> ReMemR1Planner:
    prompts = ReMemR1Prompts.build(tokenizer)
    return ReMemR1Planner(prompts, encode(tokenizer, QUESTION), tokenizer, retriever)


def _run(planner: ReMemR1Planner, tokenizer, responses: list[str]) -> list[dict[str, object]]:
    return [planner.after_memory_turn(step, *_completion(tokenizer, text)) for step, text in enumerate(responses)]


def test_a_recall_at_step_one_can_bring_back_the_memory_written_at_step_zero(tokenizer):
    """The released code retrieves among every memory written before this turn, the one this turn's
    prompt showed included: the recalled memory is shown next turn, beside a newer memory."""
    extras = _run(
        _planner(tokenizer),
        tokenizer,
        [
            "<update>Orla Fenwick was born in Dunmere.</update>",
            "<update>The Saltby flows past Carrowick.</update><recall>where was Orla Fenwick born</recall>",
        ],
    )
    assert extras[1]["recalled"] == "Orla Fenwick was born in Dunmere."


def test_a_recall_at_the_first_turn_finds_nothing_and_the_new_memory_is_never_a_candidate(tokenizer):
    """Candidates are written before the turn that asks: at step 0 there are none, and a query that
    matches only the memory this turn writes retrieves nothing."""
    extras = _run(
        _planner(tokenizer),
        tokenizer,
        [
            "<update>Orla Fenwick was born in Dunmere.</update><recall>Orla Fenwick</recall>",
            "<update>The Saltby flows past Carrowick.</update><recall>Saltby Carrowick</recall>",
        ],
    )
    assert extras[0]["recalled"] is None and extras[1]["recalled"] is None


# --- the state term's weight -------------------------------------------------------------------


def _released_turn_advantages(
    outcomes: dict[str, float], states: dict[tuple[str, int], float], alpha: float
) -> dict[tuple[str, int], float]:
    """The released trainer's arithmetic, restated: each turn's state reward is tiled into two
    columns and summed (so doubled), centred per (prompt, step), and mixed with the outcome
    advantage centred per prompt; no std division (its scripts set grpo_use_adv=False)."""
    outcome_mean = sum(outcomes.values()) / len(outcomes)
    result = {}
    for (rollout_id, step), reward in states.items():
        same_step = [2 * value for (_, other_step), value in states.items() if other_step == step]
        state_advantage = 2 * reward - sum(same_step) / len(same_step)
        result[(rollout_id, step)] = alpha * (outcomes[rollout_id] - outcome_mean) + (1 - alpha) * state_advantage
    return result


def test_the_default_state_scale_reproduces_the_released_state_advantage_weight():
    """At alpha 0.8 the released code weighs the centred state reward 2 x 0.2 = 0.4, not 0.2."""
    outcomes = {"a": 1.0, "b": 0.0, "c": 0.0}
    states = {("a", 0): 1.5, ("b", 0): 0.5, ("c", 0): 1.0, ("a", 1): 1.0, ("b", 1): 0.0, ("c", 1): 2.0}
    config = MemAgentConfig()
    assert config.rememr1_state_scale == 2.0
    ours = turn_advantages(
        [TrajectoryOutcome("q", rollout_id, reward) for rollout_id, reward in outcomes.items()],
        [StepReward("q", rollout_id, step, reward) for (rollout_id, step), reward in states.items()],
        alpha=0.8,
        state_scale=config.rememr1_state_scale,
    )
    expected = _released_turn_advantages(outcomes, states, alpha=0.8)
    assert {key: ours.of(*key) for key in states} == pytest.approx(expected)
    # by hand, turn (a, 0): outcome 1 - 1/3 = 2/3; states 1.5, 0.5, 1.0 -> 1.5 - 1.0 = 0.5, doubled 1.0
    assert ours.of("a", 0) == pytest.approx(0.8 * 2 / 3 + 0.2 * 1.0)


def test_a_state_scale_of_one_is_the_papers_formula_and_std_normalisation_cancels_the_scale():
    outcomes = [TrajectoryOutcome("q", "a", 1.0), TrajectoryOutcome("q", "b", 0.0)]
    steps = [StepReward("q", "a", 0, 0.3), StepReward("q", "b", 0, 0.9)]
    single = turn_advantages(outcomes, steps, alpha=0.8, state_scale=1.0)
    assert single.of("a", 0) == pytest.approx(0.8 * 0.5 + 0.2 * -0.3)
    scaled = turn_advantages(outcomes, steps, alpha=0.8, std_normalize=True, state_scale=2.0)
    plain = turn_advantages(outcomes, steps, alpha=0.8, std_normalize=True, state_scale=1.0)
    assert scaled.of("a", 0) == pytest.approx(plain.of("a", 0), abs=1e-5)


def _rows(rollout_id: int, reward: float, states: list[float]) -> list[Sample]:
    """One trajectory's rows as the generate hook emits them (memory turns, then the final turn)."""
    rows = []
    for step, state in enumerate(states):
        info = {
            "turn": "final" if step == len(states) - 1 else "memory",
            "step": step,
            "num_samples": len(states),
            "trajectory_status": "completed",
            "state_reward": state,
        }
        rows.append(
            Sample(
                group_index=0,
                index=rollout_id,
                rollout_id=rollout_id,
                tokens=[11, 12, 20 + step],
                response_length=1,
                loss_mask=[1],
                rollout_log_probs=[-0.5],
                reward=reward,
                status=Sample.Status.COMPLETED,
                metadata={"mem_agent": info},
            )
        )
    return rows


@pytest.mark.parametrize("scale", [2.0, 1.0, 0.5])
def test_the_hooks_apply_the_configured_state_scale(scale):
    """score_rows (reward post-process and convert alike) passes MEM_REMEMR1_STATE_SCALE on."""
    samples = _rows(0, 1.0, [0.2, 1.0]) + _rows(1, 0.0, [0.6, 1.0])
    config = MemAgentConfig(mode="rememr1", rememr1_alpha=0.5, rememr1_state_scale=scale)
    scored = score_rows(host_args("http://127.0.0.1:9", hf_checkpoint="x", n_samples_per_prompt=2), samples, config)
    # outcome +-0.5; step 0 states 0.2, 0.6 -> -0.2, +0.2 before scaling; step 1 equal -> 0
    assert scored.advantages == pytest.approx(
        [0.5 * 0.5 + 0.5 * scale * -0.2, 0.5 * 0.5, 0.5 * -0.5 + 0.5 * scale * 0.2, 0.5 * -0.5]
    )


def test_the_state_scale_setting_is_read_and_validated():
    assert MemAgentConfig.from_env({"MEM_REMEMR1_STATE_SCALE": "1"}).rememr1_state_scale == 1.0
    with pytest.raises(ConfigError, match="MEM_REMEMR1_STATE_SCALE=-1 must be a positive number"):
        MemAgentConfig.from_env({"MEM_REMEMR1_STATE_SCALE": "-1"})
