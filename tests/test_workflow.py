"""The memory-agent loop against the real vLLM server, through the router.

The tiny model writes gibberish, so these tests assert structure: how many turns, what each
prompt is made of, that memory is the model's own ids, and how truncation, aborts and failures
end a trajectory. A recording proxy in front of the router shows exactly what the server sent.
Documents are our synthetic rows (about 400 tokens each: 6 chunks of 64); the id-for-id check
also runs on a real HotpotQA row where the sample exists, since real text is where a decode and
re-encode would show.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from conftest import document_text

from mem_agent.agent import prompt_sets, workflow
from mem_agent.agent.prompt_sets import ResponseCleaner
from mem_agent.agent.records import FinishReason, SamplingParams, TrajectoryStatus, TurnKind
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.inference.client import ClientSettings, RolloutClient
from mem_agent.serving.tiny_model import QWEN3_EOS
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import encode
from support.fault_proxy import Fault, fault_proxy, scripted

pytestmark = pytest.mark.server

CHUNK = 64
SAMPLING = SamplingParams(temperature=1.0, top_p=1.0, seed=None)


def _agent(tokenizer, **overrides) -> MemoryAgent:
    settings = {"chunk_tokens": CHUNK, "max_memory_tokens": 48, "max_final_tokens": 32, **overrides}
    return MemoryAgent(tokenizer, MemAgentConfig(**settings))


def _run(agent, url, problem, context, **client_overrides):
    async def go():
        async with RolloutClient(ClientSettings(url, **client_overrides)) as client:
            return await agent.run(problem, context, client, SAMPLING)

    return asyncio.run(go())


def test_contexts_of_1_to_12_chunks_give_one_memory_turn_per_chunk_then_a_final(stack, tokenizer, synthetic_rows):
    """Uncapped, as the evaluator reads (the training default caps at 8 chunks: tested apart)."""
    agent = _agent(tokenizer, max_chunks=0)
    document = encode(tokenizer, document_text(synthetic_rows[:3]))
    assert len(document) >= 12 * CHUNK, "three rows fill 12 chunks"
    contexts = [document[: n * CHUNK - 7] for n in range(1, 13)]

    async def go():
        async with RolloutClient(ClientSettings(stack.router_url)) as client:
            return await asyncio.gather(*(agent.run("Who?", ctx, client, SAMPLING) for ctx in contexts))

    for expected_chunks, trajectory in enumerate(asyncio.run(go()), start=1):
        assert trajectory.status is TrajectoryStatus.COMPLETED, trajectory.error
        assert trajectory.num_chunks == expected_chunks and trajectory.dropped_tokens == 0
        kinds = [turn.kind for turn in trajectory.turns]
        assert kinds == [TurnKind.MEMORY] * expected_chunks + [TurnKind.FINAL]
        assert [turn.step for turn in trajectory.turns] == list(range(expected_chunks + 1))
        for turn in trajectory.turns:
            assert len(turn.logprobs) == len(turn.response_ids) > 0
            limit = 48 if turn.kind is TurnKind.MEMORY else 32
            assert len(turn.response_ids) <= limit
            assert turn.truncated == (turn.finish_reason is FinishReason.LENGTH)


def test_each_prompt_is_problem_memory_and_chunk_and_the_final_sees_only_problem_and_memory(
    stack, tokenizer, synthetic_rows
):
    agent = _agent(tokenizer)
    row = synthetic_rows[0]
    context_ids = encode(tokenizer, document_text([row]))[: 3 * CHUNK]
    trajectory = _run(agent, stack.router_url, row["question"], context_ids)
    problem_ids = encode(tokenizer, row["question"])
    memory = agent.prompts.no_memory
    for step, turn in enumerate(trajectory.turns[:-1]):
        chunk = context_ids[step * CHUNK : (step + 1) * CHUNK]
        expected = agent.prompts.memory_turn.render(problem=problem_ids, memory=memory, section=chunk)
        assert np.array_equal(turn.prompt_ids, expected)
        memory = turn.memory_ids
    final = trajectory.turns[-1]
    assert np.array_equal(final.prompt_ids, agent.prompts.final_turn.render(problem=problem_ids, memory=memory))
    assert np.array_equal(final.memory_ids, memory)
    assert len(final.prompt_ids) == agent.prompts.final_turn.static_tokens + len(problem_ids) + len(memory)


def test_memory_and_training_ids_are_exactly_what_the_server_generated(stack, tokenizer, qa_rows):
    """No decode and re-encode anywhere: ids and logprobs are the server's, memory is them less EOS."""
    agent = _agent(tokenizer)
    context = document_text(qa_rows[1:2])[:2000]
    with fault_proxy(stack.router_url, scripted()) as proxy:
        trajectory = _run(agent, proxy.url, qa_rows[1]["question"], context)
    sent = [json.loads(payload)["choices"][0] for payload in proxy.responses]
    assert len(sent) == len(trajectory.turns)
    for turn, choice in zip(trajectory.turns, sent, strict=True):
        assert turn.response_ids.tolist() == choice["token_ids"]
        assert np.allclose(turn.logprobs, [item["logprob"] for item in choice["logprobs"]["content"]])
        if turn.kind is TurnKind.MEMORY:
            expected_memory = choice["token_ids"]
            if expected_memory and expected_memory[-1] == QWEN3_EOS:
                expected_memory = expected_memory[:-1]
            assert turn.memory_ids.tolist() == expected_memory
    assert trajectory.answer == tokenizer.decode(sent[-1]["token_ids"], skip_special_tokens=True)


def test_a_memory_cut_by_max_tokens_is_kept_and_its_turn_marked_truncated(stack, tokenizer, synthetic_rows):
    agent = _agent(tokenizer, max_memory_tokens=3)
    trajectory = _run(agent, stack.router_url, "Q?", document_text(synthetic_rows[2:3])[:1500])
    memory_turns = [turn for turn in trajectory.turns if turn.kind is TurnKind.MEMORY]
    truncated = [turn for turn in memory_turns if turn.truncated]
    assert truncated, "with 3 tokens most memory turns are cut"
    for turn in truncated:
        assert turn.memory_ids.tolist() == turn.response_ids.tolist() and len(turn.memory_ids) == 3


def test_the_chunk_cap_reads_the_first_and_last_halves_and_records_the_rest(stack, tokenizer, synthetic_rows):
    agent = _agent(tokenizer, max_chunks=2)
    context_ids = encode(tokenizer, document_text(synthetic_rows[3:5]))[: 5 * CHUNK]
    assert len(context_ids) == 5 * CHUNK
    trajectory = _run(agent, stack.router_url, "Q?", context_ids)
    assert trajectory.num_chunks == 2 and trajectory.dropped_tokens == 3 * CHUNK
    first, second = (turn.prompt_ids for turn in trajectory.turns[:2])
    assert context_ids[:CHUNK].tolist() == _window(first, context_ids[:CHUNK])
    assert context_ids[-CHUNK:].tolist() == _window(second, context_ids[-CHUNK:])


def _window(prompt: np.ndarray, needle: np.ndarray) -> list[int]:
    """The slice of `prompt` equal to `needle`, or [] when it is not in there."""
    for start in range(len(prompt) - len(needle) + 1):
        if np.array_equal(prompt[start : start + len(needle)], needle):
            return prompt[start : start + len(needle)].tolist()
    return []


def test_a_document_is_tokenised_once_not_per_chunk(stack, tokenizer, synthetic_rows, monkeypatch):
    calls: list[int] = []
    real_encode = workflow.encode

    def counting_encode(tok, text):
        calls.append(len(text))
        return real_encode(tok, text)

    agent = _agent(tokenizer)  # its static prompt pieces are tokenised once, here
    monkeypatch.setattr(workflow, "encode", counting_encode)
    monkeypatch.setattr(prompt_sets, "encode", counting_encode)  # the question is the prompt set's
    context = document_text(synthetic_rows[4:5])
    trajectory = _run(agent, stack.router_url, "Q?", context)
    assert trajectory.num_chunks > 3
    assert sorted(calls) == sorted([len("Q?"), len(context)])


def test_an_aborted_turn_ends_the_trajectory_as_aborted(stack, tokenizer, synthetic_rows):
    agent = _agent(tokenizer)
    with fault_proxy(stack.router_url, scripted(None, Fault.ABORT)) as proxy:
        trajectory = _run(agent, proxy.url, "Q?", document_text(synthetic_rows[5:6]))
    assert trajectory.status is TrajectoryStatus.ABORTED
    assert len(trajectory.turns) == 2 and trajectory.turns[-1].finish_reason is FinishReason.ABORT
    assert proxy.requests == 2, "no request is sent after an abort"


def test_a_request_that_fails_for_good_fails_the_trajectory_with_its_reason(stack, tokenizer, synthetic_rows):
    agent = _agent(tokenizer)
    with fault_proxy(stack.router_url, scripted(None, None, Fault.HTTP_400)) as proxy:
        trajectory = _run(agent, proxy.url, "Q?", document_text(synthetic_rows[6:7]))
    assert trajectory.status is TrajectoryStatus.FAILED
    assert "HTTP 400" in (trajectory.error or "") and "injected http_400" in (trajectory.error or "")
    assert len(trajectory.turns) == 2


def test_thinking_text_never_enters_memory_or_the_answer(tokenizer):
    cleaner = ResponseCleaner(tokenizer, thinking=True)
    response = encode(tokenizer, "<think>\nthe section says Paris\n</think>\n\nCapital: Paris.")
    response = np.append(response, QWEN3_EOS).astype(np.int32)
    assert tokenizer.decode(cleaner.visible_ids(response).tolist()) == "Capital: Paris."
    assert cleaner.text(response) == "Capital: Paris."
    unfinished = encode(tokenizer, "<think>\nstill thinking when max_tokens ran out")
    assert cleaner.visible_ids(unfinished).size == 0


def test_without_thinking_only_the_trailing_eos_is_removed(tokenizer):
    cleaner = ResponseCleaner(tokenizer, thinking=False)
    body = encode(tokenizer, "Notes: <think> is just text here.")
    response = np.append(body, QWEN3_EOS).astype(np.int32)
    assert np.array_equal(cleaner.visible_ids(response), body)
