"""ReMemR1 mode: tag parsing, retrieval on constructed histories, step rewards by hand, the loop."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import document_text, server_flags

from mem_agent import eval_ruler_hqa, rollout
from mem_agent.agent.prompt_sets import builtin_prompts
from mem_agent.agent.prompts import NO_RECALL_TEXT
from mem_agent.agent.records import SamplingParams, TrajectoryStatus, TurnKind
from mem_agent.agent.rememr1 import ReMemR1Planner, parse_response
from mem_agent.agent.retrieval import retrieve
from mem_agent.agent.step_rewards import (
    MemoryTurnFacts,
    coverage,
    final_turn_reward,
    memory_turn_format,
    memory_turn_reward,
    recall_hit,
)
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.custom_convert import convert_samples_to_train_data
from mem_agent.inference.client import ApiProtocol, ClientSettings, RolloutClient
from mem_agent.serving.tiny_model import COMMON_WORDS
from mem_agent.settings.config import AgentMode, MemAgentConfig, MemoryRule, RetrieverKind
from mem_agent.tokenization.tokenizer import decode, encode
from support.completions import completion_of
from support.host.train_data import check_train_data, flatten_rollout
from support.real_step import real_step
from support.trainer_rows import trainer_rows

# --- parsing -----------------------------------------------------------------------------------


def test_update_and_recall_blocks_are_read_across_lines():
    parsed = parse_response(
        "<update>\nAda was born in Velmont.\nShe founded Corvane.\n</update>\n<recall>who\nfounded it</recall>"
    )
    assert parsed.memory_text == "Ada was born in Velmont.\nShe founded Corvane."
    assert parsed.query == "who\nfounded it" and memory_turn_format(len(parsed.updates)) == 1.0


def test_without_an_update_block_the_response_minus_recalls_is_the_memory():
    parsed = parse_response("Notes: Ada, Velmont. <recall>Ada's town</recall> More.")
    assert parsed.memory_text == "Notes: Ada, Velmont.  More." and memory_turn_format(len(parsed.updates)) == 0.0


def test_an_update_cut_off_by_max_tokens_still_becomes_the_memory():
    parsed = parse_response("<update>Ada was born in Vel")
    assert parsed.memory_text == "Ada was born in Vel" and parsed.updates == ()


def test_two_updates_keep_the_last_and_are_not_well_formed():
    parsed = parse_response("<update>first</update><update>second</update><recall> </recall>")
    assert parsed.memory_text == "second" and parsed.query is None and memory_turn_format(len(parsed.updates)) == 0.0


# --- retrieval ---------------------------------------------------------------------------------

HISTORY = [
    "Corvane Works was founded by Ada Velmont in 1902.",
    "The Tanash river flows through Rinwick.",
    "Ada Velmont was born in Barlin.",
]


@pytest.mark.parametrize("kind", list(RetrieverKind))
def test_every_scorer_finds_the_memory_that_answers_the_query(kind):
    assert retrieve("where was Ada Velmont born", HISTORY, kind) == 2
    assert retrieve("Tanash river", HISTORY, kind) == 1


def test_word_recall_score_by_hand():
    # query words {who, founded, corvane}: memory 0 holds founded + corvane -> 2/3; others 0
    from mem_agent.agent.retrieval import RecallScorer, words

    scores = RecallScorer().scores(words("Who founded Corvane?"), [words(memory) for memory in HISTORY])
    assert scores == [pytest.approx(2 / 3), 0.0, 0.0]


@pytest.mark.parametrize("kind", list(RetrieverKind))
def test_ties_go_to_the_most_recent_memory_and_no_match_retrieves_nothing(kind):
    twins = ["Ada Velmont notes", "unrelated", "notes: Ada Velmont"]  # same words, same score
    assert retrieve("Ada Velmont", twins, kind) == 2
    assert retrieve("zebra", HISTORY, kind) is None
    assert retrieve("", HISTORY, kind) is None and retrieve("Ada", [], kind) is None


# --- step rewards ------------------------------------------------------------------------------


def test_coverage_is_the_max_over_ground_truths():
    assert coverage("born in Barlin town", ["Barlin", "Barlin City"]) == 1.0
    assert coverage("born in Barlin town", ["Barlin City"]) == 0.5


def test_memory_turn_reward_by_hand():
    facts = MemoryTurnFacts(
        turn_input="<problem>Where was Ada born?</problem> section text about rivers",
        memory_before="Ada founded Corvane.",
        memory_after="Ada founded Corvane. Ada was born in Barlin City.",
        recalled="Barlin City notes",
        update_blocks=1,
    )
    # format 1; gained: coverage after ("barlin city" both present) 1.0 - before 0.0 = 1.0;
    # revisit: input lacks barlin/city (0.0), recalled+input has both (1.0) -> +1.0
    assert memory_turn_reward(facts, ["Barlin City"]) == pytest.approx(3.0)


def test_a_badly_formed_turn_that_loses_facts_is_penalised():
    facts = MemoryTurnFacts("input", "Barlin City", "nothing", None, update_blocks=0)
    assert memory_turn_reward(facts, ["Barlin City"]) == pytest.approx(-1.0)


def test_final_turn_format_wants_exactly_one_complete_box():
    assert final_turn_reward("so \\boxed{Barlin}") == 1.0
    assert final_turn_reward("\\boxed{a} or \\boxed{b}") == 0.0
    assert final_turn_reward("\\boxed{unclosed") == 0.0 and final_turn_reward("Barlin") == 0.0


def test_a_recall_hits_when_it_brings_back_a_gold_word():
    assert recall_hit("Ada was born in Barlin", ["Barlin City"]) and not recall_hit("rivers", ["Barlin"])
    assert not recall_hit(None, ["Barlin"])


# --- the planner with the real tokenizer -------------------------------------------------------


def test_a_recall_brings_back_an_earlier_memory_in_the_next_prompt_only(tokenizer):
    prompts = builtin_prompts(tokenizer, AgentMode.REMEMR1)
    planner = ReMemR1Planner(
        prompts, encode(tokenizer, "Where was Ada born?"), tokenizer, RetrieverKind.RECALL, MemoryRule.UPDATE
    )
    texts = [
        "<update>Ada Velmont founded Corvane. Ada was born in Barlin.</update>",
        "<update>Corvane makes glass.</update>",
        "<update>Corvane makes glass in Tanash.</update><recall>where was Ada born</recall>",
        "<update>Nothing new.</update>",
    ]
    prompts_seen = []
    for step, text in enumerate(texts):
        prompts_seen.append(decode(tokenizer, planner.memory_prompt(step, encode(tokenizer, f"section {step}"))))
        extras = planner.after_memory_turn(step, *completion_of(tokenizer, text))
        if step == 2:
            assert extras["recall_query"] == "where was Ada born"
            assert extras["recalled"] == "Ada Velmont founded Corvane. Ada was born in Barlin."
    final = decode(tokenizer, planner.final_prompt())
    prompts_seen.append(decode(tokenizer, planner.memory_prompt(4, encode(tokenizer, "section 4"))))
    assert f"<recalled_memory>\n{NO_RECALL_TEXT}\n</recalled_memory>" in prompts_seen[2]
    assert (
        "<recalled_memory>\nAda Velmont founded Corvane. Ada was born in Barlin.\n</recalled_memory>" in prompts_seen[3]
    )
    assert NO_RECALL_TEXT in prompts_seen[4], "only the latest turn's recall is shown"
    assert "<memory>\nNothing new.\n</memory>" in final and NO_RECALL_TEXT in final


# --- against the real server -------------------------------------------------------------------


@pytest.mark.server
def test_rememr1_runs_end_to_end_against_the_real_server(stack, tokenizer, qa_rows):
    config = MemAgentConfig(mode="rememr1", chunk_tokens=128, max_memory_tokens=24, max_final_tokens=16)
    agent = MemoryAgent(tokenizer, config)
    context = document_text(qa_rows[:2])

    async def go():
        async with RolloutClient(ClientSettings(stack.router_url, protocol=ApiProtocol.VLLM)) as client:
            return await agent.run(qa_rows[0]["question"], context, client, SamplingParams())

    trajectory = asyncio.run(go())
    assert trajectory.status is TrajectoryStatus.COMPLETED and trajectory.num_chunks >= 3
    memory_turns = [turn for turn in trajectory.turns if turn.kind is TurnKind.MEMORY]
    assert len(memory_turns) == trajectory.num_chunks
    for turn in memory_turns:
        assert {"memory_text", "recall_query", "recalled", "update_blocks"} <= turn.extras.keys()
        assert decode(tokenizer, turn.memory_ids) == turn.extras["memory_text"] or turn.extras["memory_text"] == ""
    assert "<recalled_memory>" in decode(tokenizer, trajectory.turns[-1].prompt_ids)


# --- through the hooks and the evaluator -----------------------------------------------------


def _rows_the_tiny_model_can_partly_answer(rows: list[dict], per_row: int) -> list[dict]:
    """Trainer rows whose state rewards vary from turn to turn, whatever the sampling draws.

    A state reward counts the answer words a memory holds. The tiny model writes only its ~65
    COMMON_WORDS, never an invented town (or most real answers), so with the rows' own answers
    every state reward is 0 and nothing would show the mixing. A ground truth of ten of those
    words gives each memory of 16 such words a coverage of about 0 to 0.4 that differs between
    turns and samples. Every `per_row` rows make one document (a synthetic row alone is about
    450 tokens, two chunks of the hooks' 256; three make about six).
    """
    truth = " ".join(COMMON_WORDS[:10])
    longer = []
    for first in range(0, len(rows) - per_row + 1, per_row):
        group = rows[first : first + per_row]
        context = {key: [item for row in group for item in row["context"][key]] for key in ("title", "sentences")}
        longer.append({**group[0], "answer": truth, "context": context})
    return longer


@pytest.mark.server
def test_a_rememr1_rollout_step_mixes_state_advantages_into_each_turn(
    stack, synthetic_rows, monkeypatch, fresh_settings
):
    monkeypatch.setenv("MEM_MODE", "rememr1")
    monkeypatch.setenv("MEM_REMEMR1_ALPHA", "0.5")
    rows_in = trainer_rows(_rows_the_tiny_model_can_partly_answer(synthetic_rows[:6], 3), 2)
    step = real_step(stack.router_url, stack.model_path, rows_in)
    rows = flatten_rollout(step.result.output.samples)
    data = convert_samples_to_train_data(step.args, rows)
    check_train_data(data, rollout_counted=True)
    infos = [row.metadata["mem_agent"] for row in rows]
    assert all(isinstance(info.get("state_reward"), float) for info in infos), "every turn has a state reward"
    assert all({"recall_share", "recall_hit_rate", "mean_state_reward"} <= info.keys() for info in infos)
    per_trajectory: dict[int, set[float]] = {}
    for row, advantage in zip(rows, data["rewards"], strict=True):
        per_trajectory.setdefault(row.rollout_id, set()).add(round(advantage, 9))
    assert any(len(values) > 1 for values in per_trajectory.values()), "alpha < 1: turns of one trajectory differ"

    monkeypatch.setenv("MEM_REMEMR1_ALPHA", "1")
    rollout.reset_caches()
    memagent_like = convert_samples_to_train_data(step.args, rows)
    for rid in per_trajectory:
        values = {a for row, a in zip(rows, memagent_like["rewards"], strict=True) if row.rollout_id == rid}
        assert len(values) == 1, "alpha = 1: one advantage per trajectory, MemAgent's"


@pytest.mark.server
def test_the_evaluator_reports_recall_figures_in_rememr1_mode(stack, tmp_path, make_eval_files, monkeypatch):
    monkeypatch.setenv("MEM_MODE", "rememr1")
    make_eval_files(30, questions=3, out=tmp_path)  # 30 synthetic documents: about 1,300 tokens, 6 chunks of 256
    argv = [
        "--data",
        str(tmp_path / "eval_30.json"),
        "--output-dir",
        str(tmp_path / "out"),
        *server_flags(stack),
        "--chunk-tokens",
        "256",
        "--max-memory",
        "24",
        "--max-final",
        "16",
        "--temperature",
        "1.0",
        "--top-p",
        "1.0",
    ]
    assert eval_ruler_hqa.main(argv) == 0
    records = [json.loads(line) for line in (tmp_path / "out" / "results_30.jsonl").read_text().splitlines()]
    assert all("recall_share" in r and "recall_hit_rate" in r for r in records)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["results"][0]
    assert "recall_share" in summary
