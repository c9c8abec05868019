"""ReMemR1 against the released code: recall candidates, memory, state rewards and their weight."""

from __future__ import annotations

import asyncio

import pytest

from mem_agent import rollout
from mem_agent.agent.prompt_sets import builtin_prompts
from mem_agent.agent.records import Turn, TurnKind
from mem_agent.agent.rememr1 import ReMemR1Planner, parse_response
from mem_agent.agent.retrieval import TfidfScorer, retrieve, subword_terms
from mem_agent.agent.step_rewards import (
    MemoryTurnFacts,
    coverage,
    final_turn_reward,
    memory_turn_format,
    memory_turn_reward,
    released_turn_input,
    turn_state_rewards,
)
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.host.advantages import StepReward, TrajectoryOutcome, turn_advantages
from mem_agent.host.trajectory_rows import score_rows
from mem_agent.settings.config import AgentMode, ConfigError, CoverageRule, MemAgentConfig, MemoryRule, RetrieverKind
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, decode, encode
from support.completions import completion_of
from support.fixed_answer_server import fixed_answer_server
from support.host.args import host_args
from support.host.rollout_loop import sampling_params
from support.host.sample import Sample

# Invented facts; the query of each step names only what an earlier memory holds.
QUESTION = "Which river flows past the town where Orla Fenwick was born?"


def _planner(
    tokenizer, retriever: RetrieverKind = RetrieverKind.TFIDF, rule: MemoryRule = MemoryRule.RESPONSE
) -> ReMemR1Planner:
    prompts = builtin_prompts(tokenizer, AgentMode.REMEMR1)
    return ReMemR1Planner(prompts, encode(tokenizer, QUESTION), tokenizer, retriever, rule)


def _run(planner: ReMemR1Planner, tokenizer, responses: list[str]) -> list[dict[str, object]]:
    return [planner.after_memory_turn(step, *completion_of(tokenizer, text)) for step, text in enumerate(responses)]


@pytest.mark.parametrize("retriever", list(RetrieverKind))
def test_a_recall_at_step_one_can_bring_back_the_memory_written_at_step_zero(tokenizer, retriever):
    """The released code retrieves among every memory written before this turn, the one this turn's
    prompt showed included: the recalled memory is shown next turn, beside a newer memory."""
    extras = _run(
        _planner(tokenizer, retriever, MemoryRule.UPDATE),
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
    # The launch script's --disable-grpo-std-normalization: std division would cancel the scale.
    args = host_args("http://127.0.0.1:9", hf_checkpoint="x", n_samples_per_prompt=2, grpo_std_normalization=False)
    scored = score_rows(args, samples, config)
    # outcome +-0.5; step 0 states 0.2, 0.6 -> -0.2, +0.2 before scaling; step 1 equal -> 0
    assert scored.advantages == pytest.approx(
        [0.5 * 0.5 + 0.5 * scale * -0.2, 0.5 * 0.5, 0.5 * -0.5 + 0.5 * scale * 0.2, 0.5 * -0.5]
    )


def test_the_state_scale_setting_is_read_and_validated():
    assert MemAgentConfig.from_env({"MEM_REMEMR1_STATE_SCALE": "1"}).rememr1_state_scale == 1.0
    with pytest.raises(ConfigError, match="MEM_REMEMR1_STATE_SCALE=-1 must be a positive number"):
        MemAgentConfig.from_env({"MEM_REMEMR1_STATE_SCALE": "-1"})


# --- what becomes the memory -------------------------------------------------------------------

THINKING_RESPONSE = (
    "<thinking>The section names Orla's birthplace.</thinking>\n"
    "<update>Orla Fenwick was born in Dunmere.</update>\n<recall>Saltby river</recall>"
)


def test_by_default_the_memory_is_the_response_less_its_recall_blocks(tokenizer):
    """The released code keeps the whole response (thinking and tags included) minus recall blocks;
    its state reward still reads the update block."""
    planner = _planner(tokenizer)
    extras = planner.after_memory_turn(0, *completion_of(tokenizer, THINKING_RESPONSE))
    expected = THINKING_RESPONSE.split("\n<recall>")[0]
    assert extras["memory_text"] == planner.memory_text == expected
    assert extras["update_text"] == "Orla Fenwick was born in Dunmere."
    assert planner.history == [expected]
    shown = decode(tokenizer, planner.memory_prompt(1, encode(tokenizer, "next section")))
    assert f"<memory>\n{expected}\n</memory>" in shown


def test_with_the_update_rule_the_memory_is_the_last_update_block(tokenizer):
    planner = _planner(tokenizer, rule=MemoryRule.UPDATE)
    extras = planner.after_memory_turn(0, *completion_of(tokenizer, THINKING_RESPONSE))
    assert extras["memory_text"] == extras["update_text"] == planner.memory_text == "Orla Fenwick was born in Dunmere."


def test_the_workflow_builds_planners_with_the_configured_memory_rule_and_retriever(tokenizer):
    for rule in MemoryRule:
        config = MemAgentConfig(mode="rememr1", rememr1_memory=rule, retriever="bm25")
        planner = MemoryAgent(tokenizer, config).new_planner(QUESTION)
        assert isinstance(planner, ReMemR1Planner)
        assert (planner.memory_rule, planner.retriever) == (rule, RetrieverKind.BM25)
    assert MemAgentConfig().rememr1_memory is MemoryRule.RESPONSE and MemAgentConfig().retriever is RetrieverKind.TFIDF


# --- the released retriever's terms ------------------------------------------------------------


def test_subword_terms_are_the_tokenizers_pieces_of_the_lower_cased_text_without_the_space_marker(tokenizer):
    terms = subword_terms(tokenizer)("Where was Orla Fenwick born?")
    pieces = tokenizer.convert_ids_to_tokens(encode(tokenizer, "where was orla fenwick born?").tolist())
    assert terms == [piece.replace("\u0120", "") for piece in pieces]
    assert "where" in terms and not any("\u0120" in term for term in terms)


def test_tfidf_scores_by_hand():
    """Raw counts x smoothed IDF ln((1 + n) / (1 + df)) + 1, cosine; n = 2 memories.

    query [x, y]; memory 0 [x, z], memory 1 [y, y]. df: x 1, y 1, z 1 -> idf = ln(3/2) + 1 = w for all.
    query (w, w, 0), memory 0 (w, 0, w), memory 1 (0, 2w, 0) over (x, y, z):
    cos0 = w^2 / (sqrt(2) w * sqrt(2) w) = 1/2; cos1 = 2 w^2 / (sqrt(2) w * 2w) = 1/sqrt(2).
    """
    assert TfidfScorer().scores(["x", "y"], [["x", "z"], ["y", "y"]]) == pytest.approx([0.5, 2**-0.5])


def test_the_tfidf_planner_matches_word_pieces_as_the_released_retriever_does(tokenizer):
    """A query for "Fenwicks" shares pieces with "Fenwick" but no word: only the released terms find it."""
    responses = [
        "<update>Orla Fenwick was born in Dunmere.</update>",
        "<update>The Saltby flows past Carrowick.</update><recall>Fenwicks</recall>",
    ]
    assert _run(_planner(tokenizer, RetrieverKind.TFIDF), tokenizer, responses)[1]["recalled"] is not None
    assert _run(_planner(tokenizer, RetrieverKind.RECALL), tokenizer, responses)[1]["recalled"] is None
    assert retrieve("Fenwicks", ["Orla Fenwick was born in Dunmere."], RetrieverKind.TFIDF) is None, "words"


# --- state rewards -----------------------------------------------------------------------------


def test_substring_coverage_is_case_sensitive_and_finds_words_inside_words():
    """The released matching: whitespace-split gold words looked up as sub-strings of the text."""
    assert coverage("Born in Stuttgart.", ["Stuttgart"]) == 1.0
    assert coverage("born in stuttgart", ["Stuttgart"]) == 0.0
    assert coverage("The Stuttgarter Zeitung", ["Stuttgart"]) == 1.0
    assert coverage("Barlin in 1902", ["Barlin, 1902"]) == 0.5, "the gold word is 'Barlin,' with its comma"


def test_word_coverage_is_case_blind_and_whole_word():
    assert coverage("born in stuttgart", ["Stuttgart"], CoverageRule.WORDS) == 1.0
    assert coverage("The Stuttgarter Zeitung", ["Stuttgart"], CoverageRule.WORDS) == 0.0


@pytest.mark.parametrize("rule", list(CoverageRule))
def test_coverage_takes_the_best_alias_not_the_mean(rule):
    """The paper's max; the released code's mean (0.5 here) is a known defect."""
    assert coverage("born in Barlin", ["Barlin", "Velmont City"], rule) == 1.0
    assert coverage("born in Barlin", ["", "Barlin"], rule) == 1.0, "an empty alias is skipped"


def test_the_memory_turn_format_counts_update_blocks_only():
    """Released: exactly one non-empty update block; how many recalls a turn asks for does not matter."""
    two_recalls = MemoryTurnFacts("input", "", "", None, update_blocks=1)
    assert memory_turn_reward(two_recalls, ["Barlin"]) == 1.0
    two_recall_blocks = parse_response("<update>a</update><recall>b</recall><recall>c</recall>")
    assert memory_turn_format(len(two_recall_blocks.updates)) == 1
    assert memory_turn_format(len(parse_response("<update>a</update><update>b</update>").updates)) == 0


@pytest.mark.parametrize(
    ("answer", "reward"),
    [
        ("so \\boxed{Barlin}", 1.0),
        ("\\boxed{Bar\nlin}", 1.0),
        ("\\boxed{ }", 0.0),
        ("\\boxed{}", 0.0),
        ("\\boxed{a} \\boxed{b}", 0.0),
        ("\\boxed{a {b}", 0.0),
        ("\\boxed Barlin", 0.0),
    ],
)
def test_the_final_format_wants_one_closed_box_with_something_in_it(answer, reward):
    assert final_turn_reward(answer) == reward


def test_the_state_reward_reads_the_update_block_under_the_released_memory_rule(tokenizer):
    """The new memory the reward measures is the update, not the thinking around it."""
    planner = _planner(tokenizer)
    response = "<thinking>Maybe Dunmere?</thinking><update>Orla was born somewhere.</update>"
    completion_ids, completion = completion_of(tokenizer, response)
    extras = planner.after_memory_turn(0, completion_ids, completion)
    turn = Turn(TurnKind.MEMORY, 0, encode(tokenizer, "prompt"), completion, planner.memory, extras)
    rewards = turn_state_rewards([turn], "", ["Dunmere"], lambda _: "the prompt text")
    assert rewards == {0: 1.0}, "format 1, gained 0: Dunmere is only in the thinking"
    assert "Dunmere" in planner.memory_text


@pytest.mark.usefixtures("fresh_settings")
@pytest.mark.parametrize(("rule", "memory_coverage"), [("substring", 0.0), ("words", 1.0)])
def test_the_training_hook_scores_state_rewards_with_the_configured_coverage(monkeypatch, rule, memory_coverage):
    """Through rollout.generate: a gold written in another case counts only for whole-word matching."""
    monkeypatch.setenv("MEM_MODE", "rememr1")
    monkeypatch.setenv("MEM_REMEMR1_COVERAGE", rule)
    rollout.reset_caches()
    text = "<update>The Velmont Bridge.</update> \\boxed{Velmont Bridge}"
    with fixed_answer_server(text) as url:
        args = host_args(url, hf_checkpoint=BUNDLED_QWEN3, n_samples_per_prompt=1)
        sample = Sample(
            group_index=0, index=0, prompt="Which bridge?", label="velmont bridge", metadata={"context": "Notes."}
        )
        rows = asyncio.run(rollout.generate(args, sample, sampling_params(args)))
    infos = [row.metadata["mem_agent"] for row in rows]
    memory_turn = next(info for info in infos if info["turn"] == "memory")
    # format 1 + gained coverage (the old memory is empty) + no recall
    assert memory_turn["state_reward"] == pytest.approx(1.0 + memory_coverage)


def test_the_revisit_reward_reads_the_prompt_without_its_special_tokens_as_released(tokenizer):
    """The released reward decodes the turn's prompt with skip_special_tokens=True: a gold word that
    only the chat template's markers spell (`im_end` in `<|im_end|>`) is not in the input, so a
    recalled memory holding it earns the revisit part; read with the markers, it would earn nothing."""
    prompt = encode(tokenizer, "<|im_start|>user\nWhere was it?<|im_end|>\n<|im_start|>assistant\n")
    response_ids, completion = completion_of(tokenizer, "<update>Notes.</update>")
    extras = {"memory_before": "", "update_text": "Notes.", "recalled": "im_end", "update_blocks": 1}
    turn = Turn(TurnKind.MEMORY, 0, prompt, completion, response_ids, extras)
    assert released_turn_input(tokenizer)(turn) == "user\nWhere was it?\nassistant\n"
    released = turn_state_rewards([turn], "", ["im_end"], released_turn_input(tokenizer))
    with_markers = turn_state_rewards([turn], "", ["im_end"], lambda t: tokenizer.decode(t.prompt_ids.tolist()))
    assert released == {0: 2.0} and with_markers == {0: 1.0}, "format 1 + revisit 1, against format 1 alone"
