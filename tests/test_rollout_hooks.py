"""The slime/vime hooks through whole rollout steps, against the real vLLM server and router.

The trainer host is the double in tests/support/host (slime HEAD and current vime: the rollout
loop, `log_rollout_data`, the convert and the DP split); everything on the inference side is
real. One rollout step (3 questions x 4 samples, vime's router attributes) runs once per data
source for this module behind a recording proxy and is checked from several sides; fault cases
run their own steps. SGLang cannot be installed here, so slime's wire protocol runs through a
shim over the same real model. Host flags are tested in test_host_flags.py, against a scripted
engine.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict

import numpy as np
import pytest

from mem_agent import rollout
from mem_agent.agent.records import FinishReason, SamplingParams
from mem_agent.agent.scoring import strict_reward
from mem_agent.host.clients import close_clients, router_address, sampling_from_host
from mem_agent.host.flags import HostConfigError
from mem_agent.host.hook_config import settings
from mem_agent.host.trajectory_rows import ground_truths
from mem_agent.inference.client import ApiProtocol, build_body, parse_completion
from support.fault_proxy import Fault, scripted
from support.hook_bench import small_agent
from support.host.args import host_args
from support.host.eval_loop import eval_rollout_single_dataset
from support.host.rollout_loop import RolloutState, sampling_params
from support.host.sample import Sample
from support.host.train_data import check_train_data
from support.real_step import SAMPLES_PER_PROMPT, Recorded, real_step
from support.sglang_shim import sglang_shim
from support.trainer_rows import trainer_rows

N = SAMPLES_PER_PROMPT

pytestmark = pytest.mark.usefixtures("fresh_settings")


@pytest.fixture(scope="module")
def recorded(stack, qa_rows) -> Recorded:
    return real_step(stack.router_url, stack.model_path, trainer_rows(qa_rows, 3))


def positions_by_rollout(data) -> dict[int, list[int]]:
    table: dict[int, list[int]] = defaultdict(list)
    for position, rid in enumerate(data["rollout_ids"]):
        table[rid].append(position)
    return table


@pytest.mark.server
def test_a_rollout_step_passes_the_hosts_loop_metrics_convert_and_split(recorded):
    """Siblings share rollout_id, rows align, every row lands on one rank, no trajectory spans two steps."""
    result = recorded.result
    check_train_data(result.data, rollout_counted=True)
    assert "rollout/response_len/mean" in result.log and result.log["rollout/truncated_ratio"] <= 1
    by_rollout = positions_by_rollout(result.data)
    assert len(by_rollout) == 3 * N, "one trajectory per input sample"
    placed = sorted(p for rank in result.ranks for p in rank["partition"])
    assert placed == list(range(len(result.samples))), "every row on exactly one DP rank"
    assert result.schedule.global_batch_sizes == [N] * 3, "three steps of N trajectories"
    step_of = {}
    for rank in result.ranks:
        for step, micro in enumerate(_steps(rank, result.schedule.num_microbatches)):
            for local in micro:
                step_of[rank["partition"][local]] = step
    for positions in by_rollout.values():
        assert len({step_of[p] for p in positions}) == 1, "a trajectory's turns stay in one training step"


def _steps(rank, num_microbatches):
    micro = iter(rank["micro_batch_indices"])
    for count in num_microbatches:
        yield [i for _ in range(count) for i in next(micro)]


@pytest.mark.server
def test_every_turn_of_a_trajectory_shares_its_rollout_group_and_advantage(recorded):
    """Multi-Conv GRPO: one advantage per trajectory, given to all its turns; mean 0 over trajectories."""
    rows, data = recorded.result.samples, recorded.result.data
    per_group: dict[int, list[float]] = defaultdict(list)
    for rid, positions in positions_by_rollout(data).items():
        infos = [rows[p].metadata["mem_agent"] for p in positions]
        assert [i["turn"] for i in infos] == ["memory"] * (len(infos) - 1) + ["final"] and len(infos) >= 2
        assert [i["step"] for i in infos] == list(range(len(infos))), "memory steps 0..k-1, then the final"
        assert all(i["num_samples"] == len(positions) for i in infos)
        assert {rows[p].index for p in positions} == {rid} and len({rows[p].group_index for p in positions}) == 1
        assert len({data["rewards"][p] for p in positions}) == 1
        assert len({data["rollout_mask_sums"][p] for p in positions}) == 1
        final = rows[positions[-1]]
        expected = strict_reward(final.metadata["mem_agent"]["answer"], final.metadata["ground_truth"])
        assert data["raw_reward"][positions[-1]] == expected == final.reward
        assert "context" not in final.metadata, "the document is not copied into every turn"
        per_group[final.group_index].append(data["rewards"][positions[0]])
    assert len(per_group) == 3
    for advantages in per_group.values():
        assert len(advantages) == N and abs(sum(advantages)) < 1e-9


@pytest.mark.server
def test_each_row_is_exactly_a_prompt_sent_and_the_ids_and_logprobs_the_server_generated(recorded):
    """Trained ids are the server's own (never re-tokenised) and logprobs line up with them, once each."""
    sent: dict[tuple, list[float]] = {}
    for request, answer in recorded.exchanges:
        choice = json.loads(answer)["choices"][0]
        key = (tuple(json.loads(request)["token_ids"]), tuple(choice["token_ids"]))
        assert key not in sent
        sent[key] = [item["logprob"] for item in choice["logprobs"]["content"]]
    data = recorded.result.data
    trained = set()
    for tokens, length, logprobs, mask in zip(
        data["tokens"], data["response_lengths"], data["rollout_log_probs"], data["loss_masks"], strict=True
    ):
        key = (tuple(tokens[:-length]), tuple(tokens[-length:]))
        assert key in sent, "tokens = the prompt that was sent + the ids that came back"
        np.testing.assert_allclose(logprobs, sent[key], rtol=1e-6, atol=1e-6)
        assert mask == [1] * length
        trained.add(key)
    assert trained == set(sent), "every generated response is trained exactly once"


@pytest.mark.server
def test_evaluation_returns_one_scored_sample_per_question(stack, qa_rows):
    """Eval accuracy is per question: the final turn only, rewarded inside generate, lenient scores beside."""
    rows = trainer_rows(qa_rows, 2)
    with small_agent():
        args = host_args(
            str(stack.router_url),
            hf_checkpoint=str(stack.model_path),
            n_samples_per_prompt=N,
            n_samples_per_eval_prompt=2,
        )

        async def go():
            try:
                return await eval_rollout_single_dataset(RolloutState.for_args(args), "hqa", rows)
            finally:
                await close_clients()

        data = asyncio.run(go())["hqa"]
    assert len(data["samples"]) == 4 and all(isinstance(sample, Sample) for sample in data["samples"])
    for sample, reward in zip(data["samples"], data["rewards"], strict=True):
        info = sample.metadata["mem_agent"]
        assert info["turn"] == "final" and reward == sample.reward == strict_reward(info["answer"], [sample.label])
        assert {"sub_em", "em", "f1", "extracted"} <= info.keys() and sample.rollout_id == sample.index
        assert len(sample.tokens) > sample.response_length == len(sample.rollout_log_probs) > 0


@pytest.mark.server
def test_a_failed_request_fails_its_trajectory_which_is_masked_and_left_out_of_the_group(stack, synthetic_rows):
    """A 400 is not retried: that trajectory is FAILED with the reason; its siblings train normally."""
    rows = trainer_rows(synthetic_rows, 1)
    result = real_step(stack.router_url, stack.model_path, rows, plan=scripted(Fault.HTTP_400)).result
    failed = [row for row in result.samples if row.status == Sample.Status.FAILED]
    assert failed and len({row.rollout_id for row in failed}) == 1, "only the trajectory that met the fault"
    assert all("HTTP 400" in row.metadata["error"] and row.reward == 0.0 for row in failed)
    data = result.data
    check_train_data(data, rollout_counted=True)
    valid: dict[int, float] = {}
    for position, row in enumerate(result.samples):
        if row.status == Sample.Status.FAILED:
            assert data["rewards"][position] == 0.0 and set(data["loss_masks"][position]) == {0}
            assert data["rollout_mask_sums"][position] == 0
        else:
            valid[row.rollout_id] = data["rewards"][position]
    assert len(valid) == N - 1 and abs(sum(valid.values())) < 1e-9


@pytest.mark.server
def test_an_aborted_turn_aborts_the_whole_trajectory_and_nothing_of_it_is_trained(stack, synthetic_rows):
    """The host skips the rm for a list with an ABORTED sibling and still trains the group: all of it masked."""
    rows = trainer_rows(synthetic_rows, 1)
    result = real_step(stack.router_url, stack.model_path, rows, plan=scripted(None, Fault.ABORT)).result
    aborted = [row for row in result.samples if row.status == Sample.Status.ABORTED]
    assert aborted and len({row.rollout_id for row in aborted}) == 1
    trajectory = [row for row in result.samples if row.rollout_id == aborted[0].rollout_id]
    assert trajectory == aborted, "every turn of it, not only the aborted one"
    check_train_data(result.data, rollout_counted=True)
    for position, row in enumerate(result.samples):
        if row.status == Sample.Status.ABORTED:
            assert set(result.data["loss_masks"][position]) == {0} and result.data["rewards"][position] == 0.0


@pytest.mark.server
def test_slimes_router_attributes_drive_an_sglang_rollout_end_to_end(stack, synthetic_rows):
    """slime's sglang_router_* -> SGLang's /generate wire format (a shim over the real model), same rows."""
    with sglang_shim(stack.router_url) as shim:
        recorded = real_step(shim.url, stack.model_path, trainer_rows(synthetic_rows, 1), backend="slime")
    assert shim.requests and all(
        body["return_logprob"] is True and body["sampling_params"]["max_new_tokens"] == 16 for body in shim.requests
    ), "SGLang's spelling, and our turn budget (MEM_MAX_MEMORY/FINAL), never the host's max_new_tokens"
    data = recorded.result.data
    check_train_data(data, rollout_counted=True)
    assert len(set(data["rollout_ids"])) == N and {row.status for row in recorded.result.samples} <= {
        Sample.Status.COMPLETED,
        Sample.Status.TRUNCATED,
    }
    sent = set()
    for request, answer in recorded.exchanges:
        pairs = json.loads(answer)["meta_info"]["output_token_logprobs"]
        sent.add((tuple(json.loads(request)["input_ids"]), tuple(pair[1] for pair in pairs)))
    trained = {(tuple(t[:-n]), tuple(t[-n:])) for t, n in zip(data["tokens"], data["response_lengths"], strict=True)}
    assert trained == sent


def test_a_sample_without_a_context_fails_with_a_reason_instead_of_crashing_the_step(tokenizer):
    args = host_args("http://127.0.0.1:9", hf_checkpoint="bundled:qwen3", n_samples_per_prompt=1)
    sample = Sample(index=7, group_index=0, prompt="Q?", label="a", metadata={})

    async def go():
        try:
            return await rollout.generate(args, sample, sampling_params(args))
        finally:
            await close_clients()

    rows = asyncio.run(go())
    assert len(rows) == 1 and rows[0].status == Sample.Status.FAILED and rows[0].rollout_id == 7
    assert "metadata['context']" in rows[0].metadata["error"] and rows[0].reward == 0.0
    assert rows[0].loss_mask == [0] and rows[0].response_length == 1


@pytest.mark.parametrize(
    ("backend", "host", "override", "expected"),
    [
        ("vime", "10.0.0.5", "", ("http://10.0.0.5:3001", ApiProtocol.VLLM)),
        ("slime", "10.0.0.5", "", ("http://10.0.0.5:3001", ApiProtocol.SGLANG)),
        ("slime", "10.0.0.5", "openai", ("http://10.0.0.5:3001", ApiProtocol.OPENAI)),
        ("vime", "fd00::5", "", ("http://[fd00::5]:3001", ApiProtocol.VLLM)),
        ("vime", "[fd00::5]", "", ("http://[fd00::5]:3001", ApiProtocol.VLLM)),
    ],
)
def test_the_router_and_protocol_come_from_the_host_args(monkeypatch, backend, host, override, expected):
    """vime's vllm_router_* means vLLM's protocol, slime's sglang_router_* SGLang's; MEM_PROTOCOL wins."""
    monkeypatch.setenv("MEM_PROTOCOL", override)
    rollout.reset_caches()
    args = host_args("http://127.0.0.1:3001", backend=backend, hf_checkpoint="x", n_samples_per_prompt=1)
    setattr(args, f"{'vllm' if backend == 'vime' else 'sglang'}_router_ip", host)
    assert router_address(args, settings()) == expected


def test_args_without_a_router_are_a_clear_error():
    args = host_args("http://127.0.0.1:1", hf_checkpoint="x", n_samples_per_prompt=1, vllm_router_ip=None)
    with pytest.raises(HostConfigError, match="neither vllm_router_ip"):
        router_address(args, settings())


def test_the_slime_path_sends_sglang_requests_with_our_token_budgets_and_reads_its_answers():
    """slime's sampling dict -> SGLang /generate body; max_new_tokens is MEM_MAX_*, not the host's."""
    args = host_args("http://127.0.0.1:1", backend="slime", hf_checkpoint="x", n_samples_per_prompt=1)
    params = {**sampling_params(args), "temperature": 0.6, "top_k": 20, "sampling_seed": 5}
    body = build_body(ApiProtocol.SGLANG, np.array([1, 2, 3]), 16, sampling_from_host(params), None)
    assert body["input_ids"].tolist() == [1, 2, 3] and body["return_logprob"] is True
    sent = body["sampling_params"]
    assert (sent["max_new_tokens"], sent["temperature"], sent["top_k"], sent["sampling_seed"]) == (16, 0.6, 20, 5)
    assert sent["no_stop_trim"] is True and sent["skip_special_tokens"] is False
    answer = {
        "text": "ab",
        "meta_info": {
            "output_token_logprobs": [[-0.5, 64, None], [-1.25, 151645, None]],
            "finish_reason": {"type": "length", "length": 2},
        },
    }
    completion = parse_completion(ApiProtocol.SGLANG, answer, max_tokens=16)
    assert completion.token_ids.tolist() == [64, 151645] and completion.logprobs.tolist() == [-0.5, -1.25]
    assert completion.finish_reason is FinishReason.LENGTH


def test_host_sampling_params_are_used_as_given_in_either_spelling():
    vime = {"temperature": 0.6, "top_p": 0.9, "top_k": 20, "seed": 11, "max_new_tokens": 4096}
    slime = {**vime, "sampling_seed": 11}
    del slime["seed"]
    for params in (vime, slime):
        assert sampling_from_host(params) == SamplingParams(temperature=0.6, top_p=0.9, top_k=20, seed=11)


@pytest.mark.parametrize(
    ("metadata", "label", "expected"),
    [
        ({"ground_truth": ["Paris", "paris, France"]}, "Paris", ["Paris", "paris, France"]),
        ({"ground_truth": "Paris"}, None, ["Paris"]),
        ({}, "Paris", ["Paris"]),
        ({}, ["Paris", "City of Light"], ["Paris", "City of Light"]),
        ({"ground_truth": []}, None, []),
    ],
)
def test_ground_truths_come_from_metadata_then_the_label(metadata, label, expected):
    assert ground_truths(Sample(metadata=metadata, label=label)) == expected


def test_the_reward_hook_answers_a_list_with_a_list_and_a_sample_with_a_number():
    """The host calls it with the (possibly empty) list of samples still needing a reward."""
    args = host_args("http://127.0.0.1:9", hf_checkpoint="x", n_samples_per_prompt=1)
    right = Sample(response=r"so \boxed{Paris}", label="Paris")
    wrong = Sample(response=r"\boxed{Rome}", metadata={"ground_truth": ["Paris"]})
    failed = Sample(response=r"\boxed{Paris}", label="Paris", metadata={"mem_agent": {"trajectory_status": "failed"}})
    assert asyncio.run(rollout.reward(args, [])) == []
    assert asyncio.run(rollout.reward(args, [right, wrong, failed])) == [1.0, 0.0, 0.0]
    assert asyncio.run(rollout.reward(args, right)) == 1.0
