"""Every training row our hooks emit is what the model saw.

Rows come from whole host rollout steps (the host double's data source and rollout loop, our
generate / reward / reward_post_process hooks and our convert) against vLLM's CPU build behind
vllm-router, in both agent modes, on our synthetic QA set (~450-token documents read in 128-token
chunks: four memory turns and a final turn per trajectory). transformers loads the same tiny
Qwen3 weights in the server's dtype and recomputes every response token's logprob from the row's
`tokens` (bench/row_consistency.py); the check passes only if each one is within tolerance of the
row's `rollout_log_probs`, and the row's shape, turn boundary and loss mask are what the engine
produced.

Tolerance, from the dtype the server computes in (read from its log: the tiny model's config says
bfloat16 and vLLM's CPU build serves it so). vLLM 0.32 returns raw logprobs: log_softmax in
float32 of the model-dtype logits, before temperature and top-p (at the rollout's 1.0 / 1.0 the
processed ones are equal anyway). Two correct bf16 implementations may round a logit to
neighbouring bf16 values, one ulp apart, and a logprob (z_t - logsumexp z) then moves by at most
two ulps of the largest logit: 2 x 2^-4 = 0.125 for the tiny Qwen3, whose logits stay under 16.
A float32 server (`--dtype float32`, same weights) has a tolerance of 16 ulps: there the error
accumulated through the layers, a few ulps, exceeds the output rounding. On top, a step's mean
|diff| must stay within one ulp: disagreements between correct implementations are sporadic, a
fault in how rows are built moves every token. The measured figures (max and mean |diff| per
dtype, rows and tokens compared, the corruptions' margins) are in the benchmark table of
docs/benchmarks.md, row 7, from the full benchmark; each run of these tests prints its own under "measured figures".

What each dtype can see: an off-by-one splice, a shifted loss mask and a shifted response_length
are caught in either, on every row (the splice moves a response token against the prompt's last
token, ~11 nats; the others break the shape, boundary or mask rules). A re-tokenised prompt keeps
the response and changes only the context, and the tiny random model barely listens to its
context: each response logprob moves by 1e-5 to 1e-3, under a bf16 ulp, so that corruption is
asserted on the float32 server, where every row moves and the step's mean is far past one ulp; a
single row can move by as little as its per-token tolerance, so rows are reported one by one only
mostly (a measured figure), the step always.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bench import bench_consistency, run_all
from bench.bench_consistency import FLOAT32_SERVER, server_log, stack_rows
from bench.row_consistency import (
    ReferenceModel,
    check_rows,
    figures,
    generation_prompt_ids,
    served_dtype,
    step_check,
)
from bench.row_corruptions import CORRUPTIONS, detection
from bench.row_rollout import TrainRow, rollout_rows
from mem_agent.agent.prompt_sets import builtin_prompts
from mem_agent.serving.cpu_stack import LocalStack, StackSettings, local_stack
from mem_agent.settings.config import AgentMode
from support.sglang_shim import sglang_shim

pytestmark = pytest.mark.usefixtures("fresh_settings")
QUESTIONS, SAMPLES = 3, 2
STRUCTURAL = ("splice_off_by_one", "shifted_loss_mask", "response_length_plus_one", "response_length_minus_one")


@pytest.fixture(scope="module")
def bf16_reference(tiny_model_path: Path) -> ReferenceModel:
    return ReferenceModel(tiny_model_path, "bfloat16")


@pytest.fixture(scope="module")
def fp32_reference(tiny_model_path: Path) -> ReferenceModel:
    return ReferenceModel(tiny_model_path, "float32")


@pytest.fixture(scope="module")
def float32_stack(tiny_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """The same tiny weights served in float32 (the session's `stack` serves them in bfloat16)."""
    run_dir = tmp_path_factory.mktemp("local_stack_fp32")
    with local_stack(StackSettings(model_path=tiny_model_path, run_dir=run_dir, extra_vllm_args=FLOAT32_SERVER)) as s:
        yield s


@pytest.fixture(scope="module")
def bf16_rows(stack: LocalStack, synthetic_rows: list[dict]) -> list[TrainRow]:
    return stack_rows(stack, synthetic_rows[:QUESTIONS], SAMPLES)


@pytest.fixture(scope="module")
def fp32_rows(float32_stack: LocalStack, synthetic_rows: list[dict]) -> list[TrainRow]:
    return stack_rows(float32_stack, synthetic_rows[:QUESTIONS], SAMPLES)


def record_figures(measured, label: str, rows: list[TrainRow], reference: ReferenceModel, verdict: bool = True) -> None:
    """Figures per mode and row kind; `verdict=False` for a reference in another dtype than the server's."""
    for key, entry in figures(check_rows(reference, rows)).items():
        ratio = f", max |diff|/tolerance {entry['max_over_tolerance']:.3g}" if verdict else ""
        measured(
            f"{label} {key}: {entry['rows']} rows, {entry['tokens']} tokens, max |diff| {entry['max_abs_diff']:.3g}, "
            f"mean {entry['mean_abs_diff']:.3g}{ratio}"
        )


def assert_all_consistent(rows: list[TrainRow], reference: ReferenceModel) -> None:
    kinds = Counter((row.mode, row.kind) for row in rows)
    for mode in bench_consistency.MODES:
        assert kinds[(mode, "memory")] >= 3 * QUESTIONS * SAMPLES, "several memory turns per trajectory"
        assert kinds[(mode, "final")] == QUESTIONS * SAMPLES
    checks = check_rows(reference, rows)
    assert [check.problems for check in checks if not check.ok] == []
    assert all(check.abs_diff.size == check.row.response_length for check in checks), "every token compared"
    step = step_check(checks)
    assert step.ok and step.mean_over_ulp < 0.5, "rounding disagreements are sporadic, not systematic"


@pytest.mark.server
def test_the_default_server_computes_in_the_dtype_of_the_model_config(stack: LocalStack):
    """The reference must run in the served dtype; the tiny model's config says bfloat16 and vLLM keeps it."""
    config = json.loads((stack.model_path / "config.json").read_text())
    assert served_dtype(server_log(stack)) == config.get("dtype", config.get("torch_dtype")) == "bfloat16"


@pytest.mark.server
def test_every_row_of_the_bf16_server_is_what_the_model_computes(bf16_rows, bf16_reference, fp32_reference, measured):
    """Memory and final turns of both modes: each response logprob within 2 bf16 ulps of transformers'."""
    assert_all_consistent(bf16_rows, bf16_reference)
    record_figures(measured, "bf16 server, bf16 reference", bf16_rows, bf16_reference)
    record_figures(measured, "bf16 server, fp32 reference", bf16_rows, fp32_reference, verdict=False)


@pytest.mark.server
def test_every_row_of_the_fp32_server_is_what_the_model_computes(float32_stack, fp32_rows, fp32_reference, measured):
    """The same weights served in float32: each response logprob within 16 fp32 ulps of transformers'."""
    assert served_dtype(server_log(float32_stack)) == "float32"
    assert_all_consistent(fp32_rows, fp32_reference)
    record_figures(measured, "fp32 server, fp32 reference", fp32_rows, fp32_reference)


@pytest.mark.server
@pytest.mark.parametrize("corruption", STRUCTURAL)
def test_a_corrupted_bf16_step_fails_and_every_changed_row_is_reported(bf16_rows, bf16_reference, corruption):
    """Each corruption, applied to every real row of the step, fails it and is reported on each row."""
    found = detection(bf16_reference, bf16_rows, corruption)
    assert found.changed == len(bf16_rows)
    assert found.reported == found.changed and found.step_caught


@pytest.mark.server
@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_a_corrupted_fp32_step_fails_including_a_retokenised_prompt(fp32_rows, fp32_reference, corruption, measured):
    """In float32 the check also sees the context: a step whose prompts were re-tokenised from their text fails."""
    found = detection(fp32_reference, fp32_rows, corruption)
    assert found.changed >= len(fp32_rows) // 2, "spliced prompts rarely survive decode + encode unchanged"
    assert found.step_caught
    if corruption == "retokenised_prompt":
        # Every token of every row moves, so the step's mean rule catches the step; a single row can
        # move as little as its per-token tolerance, so how many rows are reported alone is a figure.
        measured(
            f"re-tokenised prompt (fp32): step mean |diff| {found.step.mean_over_ulp:.1f} ulps; "
            f"{found.reported} of {found.changed} changed rows reported; "
            f"weakest row {found.weakest_ratio:.2f} x tolerance"
        )
    else:
        assert found.reported == found.changed


@pytest.mark.server
def test_rows_through_slimes_sglang_wire_format_are_what_the_model_computes(stack, synthetic_rows, bf16_reference):
    """slime's path (sglang_router_* attributes, SGLang's /generate shapes via the shim) gives consistent rows."""
    with sglang_shim(stack.router_url) as shim:
        rows = rollout_rows(
            shim.url, stack.model_path, synthetic_rows[:1], mode="memagent", n_samples=2, backend="slime"
        )
    assert shim.requests and len(rows) >= 2 * 5
    assert [check.problems for check in check_rows(bf16_reference, rows) if not check.ok] == []


@pytest.mark.server
def test_the_benchmark_reports_figures_per_mode_and_row_kind(stack, float32_stack, measured):
    """Quick mode: both servers, four (mode, kind) figures each, every target met."""
    result = bench_consistency.run(stack, quick=True, float32_stack=float32_stack)
    for dtype, server in result["servers"].items():
        assert server["server_dtype"] == dtype
        assert set(server["figures"]) == {f"{m}/{k}" for m in bench_consistency.MODES for k in ("memory", "final")}
        assert server["tokens_compared"] == sum(entry["tokens"] for entry in server["figures"].values()) > 0
        assert server["failed_rows"] == 0 and server["mean_over_ulp"] <= 1 and server["caught_share"] == 1.0
        measured(
            f"quick {dtype}: max |diff|/tolerance {server['max_over_tolerance']:.3g}, "
            f"mean |diff|/ulp {server['mean_over_ulp']:.3g}"
        )
    assert all(check.met for check in run_all.checks({"consistency": result}))


def test_the_tolerance_is_a_few_ulps_of_the_largest_logit(bf16_reference, fp32_reference):
    """2 bf16 ulps (ulp = 2^-7 x 2^floor(log2|z|)), 16 fp32 ulps (2^-23 x ...)."""
    largest = np.array([12.0, 8.0, 7.9, 0.3])
    np.testing.assert_array_equal(bf16_reference.tolerance(largest), 2 * 2.0**-7 * np.array([8, 8, 4, 0.25]))
    np.testing.assert_array_equal(fp32_reference.tolerance(largest), 16 * 2.0**-23 * np.array([8, 8, 4, 0.25]))


def test_every_prompt_we_build_ends_with_the_assistant_turns_opening(bf16_reference):
    """The boundary rule holds for our own prompts: the response starts where the model's turn starts."""
    tail = bf16_reference.generation_prompt
    assert bf16_reference.tokenizer.decode(tail) == "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    prompts = builtin_prompts(bf16_reference.tokenizer, AgentMode.MEMAGENT)
    ids = np.array([11, 12], dtype=np.int32)
    for prompt in (
        prompts.memory_turn.render(problem=ids, memory=ids, section=ids),
        prompts.final_turn.render(problem=ids, memory=ids),
    ):
        assert prompt.tolist()[-len(tail) :] == tail
    thinking = generation_prompt_ids(bf16_reference.tokenizer, thinking=True)
    assert bf16_reference.tokenizer.decode(thinking) == "<|im_start|>assistant\n"


def test_the_served_dtype_is_read_from_the_last_engine_start_in_the_log(tmp_path: Path):
    log = tmp_path / "vllm_server.log"
    log.write_text("start config: kv_cache_dtype=auto, dtype=torch.float32, x\nrestart config: dtype=torch.bfloat16\n")
    assert served_dtype(log) == "bfloat16"
    log.write_text("no engine line\n")
    with pytest.raises(ValueError, match="no 'dtype=torch"):
        served_dtype(log)


def sampled_row(reference: ReferenceModel, prompt: list[int], length: int, seed: int, rollout_id: int) -> TrainRow:
    """A row generated token by token (one forward per step, like an engine's decode), with its logprobs."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    tokens, logprobs = list(prompt), []
    with torch.inference_mode():
        for _ in range(length):
            logits = reference.model(input_ids=torch.tensor([tokens]), logits_to_keep=1).logits[0, -1].float()
            distribution = logits.log_softmax(-1)
            token = int(torch.multinomial(distribution.exp(), 1, generator=generator))
            tokens.append(token)
            logprobs.append(float(distribution[token]))
    return TrainRow("memagent", "final", rollout_id, 0, tokens, length, [1] * length, logprobs)


def test_the_checker_aligns_position_t_with_token_t_plus_one_without_a_server(fp32_reference):
    """Rows decoded step by step pass the one-pass check; each corruption of them is reported."""
    prompts = builtin_prompts(fp32_reference.tokenizer, AgentMode.MEMAGENT)
    prompt = prompts.final_turn.render(problem=np.arange(100, 120, dtype=np.int32), memory=prompts.no_memory)
    rows = [sampled_row(fp32_reference, prompt.tolist(), 6, seed, rollout_id=seed) for seed in range(3)]
    assert all(check.ok for check in check_rows(fp32_reference, rows))
    for name in STRUCTURAL:
        found = detection(fp32_reference, rows, name)
        assert found.reported == found.changed == len(rows) and found.step_caught, name


def test_a_small_drift_on_every_token_passes_each_row_but_fails_the_step(fp32_reference):
    """Half the per-token tolerance on every token: no row fails, the step's mean (8 ulps) does."""
    prompts = builtin_prompts(fp32_reference.tokenizer, AgentMode.MEMAGENT)
    prompt = prompts.final_turn.render(problem=np.arange(300, 310, dtype=np.int32), memory=prompts.no_memory)
    rows = [sampled_row(fp32_reference, prompt.tolist(), 4, seed, rollout_id=seed) for seed in range(2)]
    clean = check_rows(fp32_reference, rows)
    drifted = [
        replace(row, rollout_log_probs=list(np.asarray(row.rollout_log_probs) + check.tolerance / 2))
        for row, check in zip(rows, clean, strict=True)
    ]
    checks = check_rows(fp32_reference, drifted)
    assert all(check.ok for check in checks)
    step = step_check(checks)
    assert not step.ok and step.mean_over_ulp > 4


def test_a_row_whose_lengths_disagree_or_whose_rollout_mixes_masks_is_reported(fp32_reference):
    prompt = [*fp32_reference.tokenizer.encode("question"), *fp32_reference.generation_prompt]
    good = TrainRow("memagent", "memory", 1, 0, [*prompt, 5, 6], 2, [1, 1], [-1.0, -1.0])
    short = TrainRow("memagent", "memory", 1, 0, [*prompt, 5, 6], 2, [1, 1], [-1.0])
    masked = TrainRow("memagent", "final", 1, 1, [*prompt, 5, 6], 2, [0, 0], [-1.0, -1.0])
    checks = check_rows(fp32_reference, [short, masked])
    assert checks[0].problems[0].startswith("shape:")
    assert any(problem.startswith("mask:") for problem in checks[1].problems)
    assert [p.split(":")[0] for p in check_rows(fp32_reference, [good])[0].problems] == ["logprobs"]
