"""Our hooks inside the host double, against the scripted engine: the pieces host-flag tests share.

`small_agent()` sets small chunks and turn budgets (so a question takes a few turns) and resets
the hooks' cached settings around a test. `right_for_even_seeds(rows)` is an engine policy:
with the host's deterministic seeds (`rollout_seed + position in the group`), even positions
answer right and odd ones wrong, and questions listed as `hard` are always wrong, so a test
decides which groups have reward contrast.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

from mem_agent import rollout
from mem_agent.host.clients import close_clients
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3
from support.host.args import host_args
from support.host.data_source import DataSource
from support.host.step import StepResult, run_step
from support.scripted_engine import Answer

SMALL_AGENT = {"MEM_CHUNK_TOKENS": "256", "MEM_MAX_MEMORY": "16", "MEM_MAX_FINAL": "16", "MEM_MAX_RETRIES": "0"}
T = TypeVar("T")


@contextmanager
def small_agent(**extra: str) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**SMALL_AGENT, **extra}.items():
            patch.setenv(name, value)
        rollout.reset_caches()
        try:
            yield
        finally:
            rollout.reset_caches()


def right_for_even_seeds(rows: list[dict], hard: Iterable[str] = ()) -> Answer:
    truths = {row["prompt"]: row["label"] for row in rows}
    always_wrong = set(hard)

    def answer(prompt_text: str, seed: int | None) -> str:
        for question, truth in truths.items():
            if question in prompt_text:
                right = question not in always_wrong and (seed or 0) % 2 == 0
                return truth if right else "nobody at all"
        return "unknown"

    return answer


@contextmanager
def host_modules_loaded(backend: str = "vime") -> Iterator[None]:
    """The host's filter_hub module under its real name, as it is inside a running host."""
    from support.host import filters

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, f"{backend}.rollout.filter_hub.base_types", filters)
        yield


def bench_args(url: str, *, backend: str = "vime", n: int = 4, **overrides: Any) -> Any:
    """Host args for our hooks with deterministic per-position seeds (the policy above reads them)."""
    engine = "vllm" if backend == "vime" else "sglang"
    overrides.setdefault(f"{engine}_enable_deterministic_inference", True)
    return host_args(url, backend=backend, hf_checkpoint=BUNDLED_QWEN3, n_samples_per_prompt=n, **overrides)


def step(args: Any, rows: list[dict], *, dp_size: int = 1) -> StepResult:
    source = DataSource(rows, args.n_samples_per_prompt)
    return run_step(args, source, dp_size=dp_size, closers=(close_clients,))


async def until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Poll `condition` (state another thread changes) every 20 ms until it holds."""
    for _ in range(int(timeout_s / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


def run_async(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine in a fresh loop and close our HTTP clients before the loop ends."""

    async def go() -> T:
        try:
            return await factory()
        finally:
            await close_clients()

    return asyncio.run(go())
