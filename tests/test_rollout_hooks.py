"""The slime/vime hooks through a whole rollout step, against the real vLLM server and router.

The trainer host is a test double (tests/support/slime_host.py) that mirrors slime's real Sample
and its train-data consumer; everything on the inference side is real.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import pytest

from mem_agent import rollout
from mem_agent.build_long_context import render_context
from mem_agent.custom_convert import convert_samples_to_train_data
from mem_agent.qa_rows import Paragraph
from mem_agent.rollout_client import ApiProtocol
from mem_agent.scoring import strict_reward
from support.fault_proxy import Fault, fault_proxy, scripted
from support.slime_host import (
    Sample,
    check_train_data,
    data_source_groups,
    flatten_rollout,
    generate_and_rm_group,
    host_args,
    steps_by_rollout,
)

N = 4


@pytest.fixture(autouse=True)
def small_agent(monkeypatch):
    monkeypatch.setenv("MEM_CHUNK_TOKENS", "256")
    monkeypatch.setenv("MEM_MAX_MEMORY", "16")
    monkeypatch.setenv("MEM_MAX_FINAL", "16")
    monkeypatch.setenv("MEM_MAX_RETRIES", "0")
    rollout.reset_caches()
    yield
    rollout.reset_caches()


def _rows(hotpot_rows, count: int) -> list[dict]:
    rows = []
    for row in hotpot_rows[:count]:
        paragraphs = [
            Paragraph(title, "".join(sentences))
            for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True)
        ]
        metadata = {"context": render_context(paragraphs), "ground_truth": [row["answer"]]}
        rows.append({"prompt": row["question"], "label": row["answer"], "metadata": metadata})
    return rows


class _CountingRm:
    def __init__(self) -> None:
        self.calls: list[int] = []

    async def __call__(self, args, samples, **kwargs):
        self.calls.append(len(samples) if isinstance(samples, list) else 1)
        return await rollout.reward(args, samples, **kwargs)


def _rollout_step(url, model_path, hotpot_rows, prompts=3, evaluation=False):
    args = host_args(url, backend="vime", hf_checkpoint=str(model_path), n_samples_per_prompt=N)
    groups = data_source_groups(_rows(hotpot_rows, prompts), N)
    rm = _CountingRm()

    async def go():
        try:
            return await asyncio.gather(
                *(generate_and_rm_group(args, g, rollout.generate, rm, evaluation=evaluation) for g in groups)
            )
        finally:
            await rollout.close_clients()

    return args, asyncio.run(go()), rm


@pytest.mark.server
def test_a_rollout_step_yields_train_data_that_meets_the_host_contract(stack, hotpot_rows):
    with fault_proxy(stack.router_url, scripted()) as proxy:
        args, output, rm = _rollout_step(proxy.url, stack.model_path, hotpot_rows)
    rows = flatten_rollout(output)
    data = convert_samples_to_train_data(args, rows)
    check_train_data(data, rollout_counted=True)
    assert set(rm.calls) == {0}, "the host asks for no reward: every turn already carries its trajectory's"

    by_rollout: dict[int, list[int]] = defaultdict(list)
    for position, rid in enumerate(data["rollout_ids"]):
        by_rollout[rid].append(position)
    assert len(by_rollout) == 3 * N, "one trajectory per input sample"
    for rid, positions in by_rollout.items():
        turns = [rows[p].metadata["mem_agent"]["turn"] for p in positions]
        assert turns[-1] == "final" and set(turns[:-1]) <= {"memory"} and len(turns) >= 2
        assert len({data["rewards"][p] for p in positions}) == 1, "every turn shares the trajectory's advantage"
        assert len({rows[p].group_index for p in positions}) == 1 and rows[positions[0]].index == rid
        final = rows[positions[-1]]
        assert data["raw_reward"][positions[-1]] == strict_reward(final.metadata["mem_agent"]["answer"], [final.label])
        assert "context" not in final.metadata, "the document is not copied into every turn"

    per_group: dict[int, list[float]] = defaultdict(list)
    for positions in by_rollout.values():
        per_group[rows[positions[0]].group_index].append(data["rewards"][positions[0]])
    for advantages in per_group.values():
        assert len(advantages) == N and abs(sum(advantages)) < 1e-9, "group mean over trajectories is 0"

    sent = sorted(json.loads(payload)["choices"][0]["token_ids"] for payload in proxy.responses)
    trained = sorted(tokens[-length:] for tokens, length in zip(data["tokens"], data["response_lengths"], strict=True))
    assert trained == sent, "each row's response is exactly what the server generated, once"

    for step in steps_by_rollout(data, global_batch_size=N):
        step_rollouts = {data["rollout_ids"][p] for p in step}
        assert all(set(by_rollout[rid]) <= set(step) for rid in step_rollouts), "no trajectory is split across steps"


@pytest.mark.server
def test_the_reward_post_process_hook_groups_by_prompt_for_sample_counted_hosts(stack, hotpot_rows):
    args, output, _ = _rollout_step(stack.router_url, stack.model_path, hotpot_rows, prompts=2)
    rows = flatten_rollout(output)
    raw, advantages = rollout.reward_post_process(args, rows)
    assert len(raw) == len(advantages) == len(rows)
    data = convert_samples_to_train_data(args, rows)
    assert data["rewards"] == advantages and data["raw_reward"] == raw
    check_train_data(
        {k: v for k, v in data.items() if k not in ("rollout_ids", "rollout_mask_sums")}, rollout_counted=False
    )


@pytest.mark.server
def test_evaluation_returns_one_scored_sample_per_question(stack, hotpot_rows):
    _, output, _ = _rollout_step(stack.router_url, stack.model_path, hotpot_rows, prompts=2, evaluation=True)
    samples = [sample for group in output for sample in group]
    assert len(samples) == 2 * N and all(isinstance(sample, Sample) for sample in samples)
    for sample in samples:
        info = sample.metadata["mem_agent"]
        assert info["turn"] == "final" and sample.reward == strict_reward(info["answer"], [sample.label])
        assert {"sub_em", "em", "f1"} <= info.keys()


@pytest.mark.server
def test_a_failed_request_fails_its_trajectory_which_is_masked_and_left_out_of_the_group(stack, hotpot_rows):
    with fault_proxy(stack.router_url, scripted(Fault.HTTP_400)) as proxy:
        args, output, _ = _rollout_step(proxy.url, stack.model_path, hotpot_rows, prompts=1)
    rows = flatten_rollout(output)
    failed = [row for row in rows if row.status == Sample.Status.FAILED]
    assert failed and all("HTTP 400" in row.metadata["mem_agent"]["error"] for row in failed)
    assert len({row.rollout_id for row in failed}) == 1, "only the trajectory that met the fault"
    data = convert_samples_to_train_data(args, rows)
    check_train_data(data, rollout_counted=True)
    valid_advantages = {}
    for position, row in enumerate(rows):
        if row.status == Sample.Status.FAILED:
            assert data["rewards"][position] == 0.0 and set(data["loss_masks"][position]) == {0}
            assert data["rollout_mask_sums"][position] == 0
        else:
            valid_advantages[row.rollout_id] = data["rewards"][position]
    assert len(valid_advantages) == N - 1 and abs(sum(valid_advantages.values())) < 1e-9


@pytest.mark.server
def test_an_aborted_turn_aborts_the_whole_trajectory_and_nothing_of_it_is_trained(stack, hotpot_rows):
    with fault_proxy(stack.router_url, scripted(None, Fault.ABORT)) as proxy:
        args, output, _rm = _rollout_step(proxy.url, stack.model_path, hotpot_rows, prompts=1)
    rows = flatten_rollout(output)
    aborted = [row for row in rows if row.status == Sample.Status.ABORTED]
    assert aborted and len({row.rollout_id for row in aborted}) == 1
    data = convert_samples_to_train_data(args, rows)
    for position, row in enumerate(rows):
        if row.status == Sample.Status.ABORTED:
            assert set(data["loss_masks"][position]) == {0} and data["rewards"][position] == 0.0


def test_a_sample_without_a_context_fails_with_a_reason_instead_of_crashing_the_step(tokenizer):
    args = host_args("http://127.0.0.1:9", hf_checkpoint="bundled:qwen3", n_samples_per_prompt=1)
    sample = Sample(index=7, group_index=0, prompt="Q?", label="a", metadata={})

    async def go():
        try:
            return await rollout.generate(args, sample, {"temperature": 1.0})
        finally:
            await rollout.close_clients()

    rows = asyncio.run(go())
    assert len(rows) == 1 and rows[0].status == Sample.Status.FAILED and rows[0].rollout_id == 7
    assert "metadata['context']" in rows[0].metadata["mem_agent"]["error"]
    assert rows[0].loss_mask == [0] and rows[0].response_length == 1


@pytest.mark.parametrize(
    ("backend", "override", "expected"),
    [
        ("vime", "", ("http://10.0.0.5:3001", ApiProtocol.VLLM)),
        ("slime", "", ("http://10.0.0.5:3001", ApiProtocol.SGLANG)),
        ("slime", "openai", ("http://10.0.0.5:3001", ApiProtocol.OPENAI)),
    ],
)
def test_the_router_and_protocol_come_from_the_host_args(monkeypatch, backend, override, expected):
    monkeypatch.setenv("MEM_PROTOCOL", override)
    rollout.reset_caches()
    args = host_args("http://10.0.0.5:3001", backend=backend, hf_checkpoint="x", n_samples_per_prompt=1)
    assert rollout.router_address(args, rollout.settings()) == expected


def test_host_sampling_params_are_used_as_given():
    params = {"temperature": 0.6, "top_p": 0.9, "top_k": 20, "sampling_seed": 11, "max_new_tokens": 4096}
    sampling = rollout.sampling_from_host(params)
    assert (sampling.temperature, sampling.top_p, sampling.top_k, sampling.seed) == (0.6, 0.9, 20, 11)
