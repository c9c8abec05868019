"""The local inference stack: real tokenizer, real vLLM (CPU build), real vllm-router.

These are the honest end-to-end checks every later test stands on: token ids go in, token ids
and logprobs come out, consistent with each other and with the text the server writes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mem_agent.processes import ServerStartError, start_process, wait_healthy
from mem_agent.tiny_model import QWEN3_EOS, TinyQwen3Spec, ensure_tiny_qwen3
from mem_agent.tokenizer import encode
from support.http import get_json, post_json

MAX_TOKENS = 24


def _hotpot_prompt_ids(tokenizer, row: dict, budget: int = 1500) -> list[int]:
    paragraphs = [
        f"{title}\n{''.join(sentences)}"
        for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True)
    ]
    context_ids = encode(tokenizer, "\n\n".join(paragraphs))[:budget]
    message = f"Read this and answer: {row['question']}\n\n{tokenizer.decode(context_ids.tolist())}"
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": message}],
        tokenize=True,
        add_generation_prompt=True,
        enable_thinking=False,
    )["input_ids"]


def _assert_finish_consistent(finish_reason: str, token_ids: list[int], max_tokens: int) -> None:
    assert 0 < len(token_ids) <= max_tokens
    if finish_reason == "length":
        assert len(token_ids) == max_tokens
    else:
        assert finish_reason == "stop"
        assert token_ids[-1] == QWEN3_EOS, "a stop on this model is its EOS, which vLLM returns as the last id"


@pytest.mark.server
def test_router_inference_generate_returns_aligned_ids_and_logprobs(stack, tokenizer, hotpot_rows):
    """vime's protocol through the router: one logprob per generated id, max_tokens honoured."""
    for row in hotpot_rows[:4]:
        prompt_ids = _hotpot_prompt_ids(tokenizer, row)
        body = {
            "model": str(stack.model_path),
            "token_ids": prompt_ids,
            "sampling_params": {"max_tokens": MAX_TOKENS, "temperature": 1.0, "top_p": 1.0, "logprobs": 1},
        }
        choice = post_json(f"{stack.router_url}/inference/v1/generate", body)["choices"][0]
        token_ids = choice["token_ids"]
        content = choice["logprobs"]["content"]
        assert len(content) == len(token_ids)
        assert [item["token_id"] for item in content] == token_ids
        assert all(item["logprob"] <= 0.0 for item in content)
        _assert_finish_consistent(choice["finish_reason"], token_ids, MAX_TOKENS)


@pytest.mark.server
def test_router_completions_text_is_the_decoded_token_ids(stack, tokenizer, hotpot_rows):
    """OpenAI protocol with token ids in: the text the server writes is decode(token_ids)."""
    for row in hotpot_rows[4:8]:
        prompt_ids = _hotpot_prompt_ids(tokenizer, row)
        body = {
            "model": str(stack.model_path),
            "prompt": prompt_ids,
            "max_tokens": MAX_TOKENS,
            "temperature": 1.0,
            "logprobs": 0,
            "return_token_ids": True,
        }
        choice = post_json(f"{stack.router_url}/v1/completions", body)["choices"][0]
        token_ids = choice["token_ids"]
        assert len(choice["logprobs"]["token_logprobs"]) == len(token_ids)
        assert choice["text"] == tokenizer.decode(token_ids, skip_special_tokens=True)
        _assert_finish_consistent(choice["finish_reason"], token_ids, MAX_TOKENS)


@pytest.mark.server
def test_tiny_model_ends_responses_on_its_own(stack):
    """The EOS channel of the tiny model makes most responses stop before a 400-token cap."""
    body = {
        "model": str(stack.model_path),
        "prompt": [[9707, 11, 1879, i] for i in range(16)],
        "max_tokens": 400,
        "temperature": 1.0,
        "return_token_ids": True,
    }
    choices = post_json(f"{stack.server_url}/v1/completions", body)["choices"]
    lengths = [len(choice["token_ids"]) for choice in choices]
    stopped = sum(choice["finish_reason"] == "stop" for choice in choices)
    assert stopped >= 12, f"expected most of 16 responses to stop on EOS, got {stopped} (lengths {lengths})"
    assert 5 < float(np.median(lengths)) < 200


@pytest.mark.server
def test_router_lists_the_server_as_its_worker(stack):
    workers = get_json(f"{stack.router_url}/workers")["workers"]
    assert [worker["url"] for worker in workers] == [stack.server_url]


def test_tiny_model_is_deterministic_from_its_seed(tmp_path: Path):
    spec = TinyQwen3Spec(seed=7, max_position_embeddings=4096)
    first = ensure_tiny_qwen3(spec, root=tmp_path / "a")
    second = ensure_tiny_qwen3(spec, root=tmp_path / "b")
    assert first.name == second.name, "the cache key depends only on the spec and the tokenizer"
    assert (first / "model.safetensors").read_bytes() == (second / "model.safetensors").read_bytes()
    assert ensure_tiny_qwen3(spec, root=tmp_path / "a") == first, "a cached model is reused, not rebuilt"


def test_a_server_that_dies_reports_its_log_tail(tmp_path: Path):
    process = start_process(
        "doomed",
        [sys.executable, "-c", "print('port 1 is taken'); raise SystemExit(3)"],
        tmp_path / "doomed.log",
    )
    with pytest.raises(ServerStartError, match="port 1 is taken") as error:
        wait_healthy(process, "http://127.0.0.1:9/health", timeout_s=30)
    assert "status 3" in str(error.value)


def test_stopping_a_process_also_stops_the_children_it_forked(tmp_path: Path):
    child_pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, time; child = subprocess.Popen(['sleep', '300']); "
        f"open('{child_pid_file}', 'w').write(str(child.pid)); time.sleep(300)"
    )
    process = start_process("parent", [sys.executable, "-c", script], tmp_path / "parent.log")
    for _ in range(100):
        if child_pid_file.exists() and child_pid_file.read_text():
            break
        time.sleep(0.1)
    child_pid = int(child_pid_file.read_text())
    process.stop(grace_s=5)
    assert not process.alive()
    assert not Path(f"/proc/{child_pid}").exists() or "Z" in Path(f"/proc/{child_pid}/stat").read_text().split()[2]
