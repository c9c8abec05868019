"""Shared fixtures: the real Qwen3 tokenizer, real HotpotQA data, one real local vLLM stack.

The stack (tiny Qwen3 on vLLM's CPU build behind vllm-router) is started once per test session
and stopped by PID at the end; its logs are kept under the session's temporary folder and their
path is printed when a server fails to start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem_agent import rollout
from mem_agent.local_stack import LocalStack, StackSettings, local_stack
from mem_agent.tiny_model import ensure_tiny_qwen3
from mem_agent.tokenizer import BUNDLED_QWEN3, load_tokenizer

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MEM_SHARED_DATA", str(PROJECT_ROOT.parent / "shared" / "data")))
HOTPOT_SAMPLE = SHARED_DATA / "hotpot_dev_distractor_sample70.json"


@pytest.fixture(scope="session")
def tokenizer():
    return load_tokenizer(BUNDLED_QWEN3)


@pytest.fixture(scope="session")
def hotpot_rows() -> list[dict]:
    """The 70 real HotpotQA dev questions; only our machines and CI have them."""
    if not HOTPOT_SAMPLE.is_file():
        pytest.skip(f"real HotpotQA sample not found at {HOTPOT_SAMPLE} (set MEM_SHARED_DATA)")
    return json.loads(HOTPOT_SAMPLE.read_text())


@pytest.fixture(scope="session")
def tiny_model_path() -> Path:
    return ensure_tiny_qwen3()


@pytest.fixture(scope="session")
def stack(tiny_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    run_dir = tmp_path_factory.mktemp("local_stack")
    with local_stack(StackSettings(model_path=tiny_model_path, run_dir=run_dir)) as running:
        yield running


@pytest.fixture
def fresh_settings() -> Iterator[None]:
    """The hooks read MEM_* once per process and cache agents and clients: a test that changes the
    environment starts with nothing cached and leaves nothing cached, even when it fails."""
    rollout.reset_caches()
    yield
    rollout.reset_caches()


def server_flags(stack: LocalStack) -> list[str]:
    """The CLI flags that point a command at the session's stack, with the tiny model's tokenizer."""
    return ["--url", stack.router_url, "--protocol", "vllm", "--tokenizer", str(stack.model_path)]


_MEASURED_KEY = pytest.StashKey[list[str]]()


@pytest.fixture
def measured(request: pytest.FixtureRequest):
    """Record a figure a test measured; all of them are printed at the end of the run (also in CI,
    where test output is captured), under "measured figures"."""
    lines = request.config.stash.setdefault(_MEASURED_KEY, [])

    def record(text: str) -> None:
        lines.append(f"{request.node.name}: {text}")

    return record


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    lines = config.stash.get(_MEASURED_KEY, [])
    if lines:
        terminalreporter.section("measured figures")
        for line in lines:
            terminalreporter.write_line(line)
