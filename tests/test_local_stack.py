"""The local inference stack: real tokenizer, real vLLM (CPU build), real vllm-router.

These are the honest end-to-end checks every later test stands on: token ids go in, token ids
and logprobs come out, consistent with each other and with the text the server writes. Prompts
are about 1,500 tokens of our synthetic documents (four rows each).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import document_text

from mem_agent.serving import cpu_stack, processes
from mem_agent.serving.cpu_stack import LocalStack, StackSettings
from mem_agent.serving.processes import (
    ManagedProcess,
    ProcessStopError,
    ServerStartError,
    log_tail,
    running_in,
    start_process,
    wait_healthy,
)
from mem_agent.serving.tiny_model import QWEN3_EOS, TinyQwen3Spec, ensure_tiny_qwen3
from mem_agent.tokenization.tokenizer import encode
from support.http import get_json, post_json
from support.proc_state import still_running

MAX_TOKENS = 24


def _prompt_ids(tokenizer, rows: list[dict], budget: int = 1500) -> list[int]:
    context_ids = encode(tokenizer, document_text(rows))[:budget]
    message = f"Read this and answer: {rows[0]['question']}\n\n{tokenizer.decode(context_ids.tolist())}"
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
def test_router_inference_generate_returns_aligned_ids_and_logprobs(stack, tokenizer, synthetic_rows):
    """vime's protocol through the router: one logprob per generated id, max_tokens honoured."""
    for first in range(0, 16, 4):
        prompt_ids = _prompt_ids(tokenizer, synthetic_rows[first : first + 4])
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
def test_router_completions_text_is_the_decoded_token_ids(stack, tokenizer, synthetic_rows):
    """OpenAI protocol with token ids in: the text the server writes is decode(token_ids)."""
    for first in range(16, 32, 4):
        prompt_ids = _prompt_ids(tokenizer, synthetic_rows[first : first + 4])
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


def _parent_with_child(tmp_path: Path, child_ignores_sigterm: bool = False) -> tuple[ManagedProcess, int]:
    """A started process that forks a child into its group; the child writes its PID when ready."""
    pid_file, partial = tmp_path / "child.pid", tmp_path / "child.pid.partial"
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN); " if child_ignores_sigterm else ""
    child = (
        f"import os, pathlib, signal, time; {ignore}"
        f"pathlib.Path({str(partial)!r}).write_text(str(os.getpid())); "
        f"os.replace({str(partial)!r}, {str(pid_file)!r}); time.sleep(300)"
    )
    parent = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(300)"
    process = start_process("parent", [sys.executable, "-c", parent], tmp_path / "parent.log")
    deadline = time.monotonic() + 120  # two Python start-ups on a machine that may be loaded
    while not pid_file.exists():
        assert process.alive() and time.monotonic() < deadline, log_tail(process.log_path)
        time.sleep(0.05)
    child_pid = int(pid_file.read_text())
    assert still_running(child_pid) and child_pid in running_in([process.pid])
    return process, child_pid


def test_stopping_a_process_also_stops_the_children_it_forked(tmp_path: Path):
    """When stop returns the child has exited, however loaded the machine: a zombie left for init to
    reap is the most that may remain, never a process still running (state R) after its signal."""
    process, child_pid = _parent_with_child(tmp_path)
    process.stop(grace_s=30)
    assert not process.alive() and running_in([process.pid]) == []
    assert not still_running(child_pid)


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path):
    process, child_pid = _parent_with_child(tmp_path, child_ignores_sigterm=True)
    started = time.monotonic()
    process.stop(grace_s=1)
    assert time.monotonic() - started >= 1, "SIGKILL only after the grace period"
    assert not process.alive() and running_in([process.pid]) == [] and not still_running(child_pid)


def test_a_process_that_outlives_sigkill_is_an_error_that_names_it(tmp_path: Path, monkeypatch):
    """Stuck in the kernel, a process can outlive SIGKILL for a while; stop says so instead of
    returning as if the group were gone."""
    process, _ = _parent_with_child(tmp_path)
    monkeypatch.setattr(processes, "running_in", lambda leaders, sessions=True: list(leaders))
    message = rf"parent: processes \[{process.pid}\] still run 1 s after SIGKILL"
    with pytest.raises(ProcessStopError, match=message):
        process.stop(grace_s=0.2, kill_wait_s=1)
    monkeypatch.undo()
    process.stop(grace_s=5)
    assert running_in([process.pid]) == []


class _StubbornProcess:
    """Stands in for a started server: records its stop, and fails it when asked to."""

    def __init__(self, name: str, stopped: list[str], fails: bool) -> None:
        self.name, self.pid, self._stopped, self._fails = name, 4242, stopped, fails

    def stop(self) -> None:
        self._stopped.append(self.name)
        if self._fails:
            raise ProcessStopError(f"{self.name}: processes [4242] still run 30 s after SIGKILL")


def test_the_stack_stops_every_process_even_when_one_cannot_be_stopped(tmp_path: Path):
    """The router outliving SIGKILL must not leave vLLM running: both are tried, then one error names it."""
    stopped: list[str] = []
    server, router = (_StubbornProcess(name, stopped, name == "vllm-router") for name in ("vllm-cpu", "vllm-router"))
    stack = LocalStack(tmp_path, server_url="http://127.0.0.1:1", router_url=None, processes=[server, router])
    with pytest.raises(ProcessStopError) as raised:
        stack.stop()
    assert str(raised.value) == _router_stop_failure()
    assert stopped == ["vllm-router", "vllm-cpu"] and stack.processes == []


@pytest.fixture
def stubborn_stack(tmp_path: Path, monkeypatch) -> tuple[StackSettings, list[str]]:
    """`local_stack()` with stand-in servers that start at once and whose router cannot be stopped."""
    stopped: list[str] = []
    monkeypatch.setattr(cpu_stack, "wait_healthy", lambda process, url, timeout_s: 0.0)
    monkeypatch.setattr(
        cpu_stack,
        "start_process",
        lambda name, argv, log_path, env=None: _StubbornProcess(name, stopped, name == "vllm-router"),
    )
    return StackSettings(model_path=tmp_path, run_dir=tmp_path / "run"), stopped


def test_an_error_raised_inside_the_stack_is_not_replaced_by_a_failure_to_stop(stubborn_stack):
    settings, stopped = stubborn_stack
    with pytest.raises(RuntimeError) as raised, cpu_stack.local_stack(settings):
        raise RuntimeError("the command failed")
    assert str(raised.value) == "the command failed" and stopped == ["vllm-router", "vllm-cpu"]
    assert raised.value.__notes__ == [f"while stopping the local stack: {_router_stop_failure()}"]


def test_a_failure_to_stop_after_a_clean_exit_is_raised(stubborn_stack):
    settings, stopped = stubborn_stack
    with pytest.raises(ProcessStopError) as raised, cpu_stack.local_stack(settings) as stack:
        assert stack.router_url is not None
    assert str(raised.value) == _router_stop_failure() and stopped == ["vllm-router", "vllm-cpu"]


def _router_stop_failure() -> str:
    return "vllm-router (pid 4242): vllm-router: processes [4242] still run 30 s after SIGKILL"
