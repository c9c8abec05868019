"""Shared fixtures: the real Qwen3 tokenizer, QA data, one real local vLLM stack.

Data: every behaviour is tested on our own synthetic multi-hop QA set (`synthetic_rows`,
`synthetic_file`), which a fresh clone makes by itself. Where the real HotpotQA sample exists
(`../shared/data`, or MEM_SHARED_DATA), a test that asks for `qa_rows` / `qa_file` also runs on
it, as an extra case marked `real_data`; where it does not, those cases are not collected at all,
so a fresh clone reports 0 skipped (and support/suite_policy.py turns any skip into a failure).
A test picks `qa_rows` where real text is worth its time (tokenising, parsing, one end-to-end
run) and `synthetic_rows` where the behaviour does not depend on the text.

The stack (tiny Qwen3 on vLLM's CPU build behind vllm-router) is started once per test session
and stopped by PID at the end; its logs are kept under the session's temporary folder and their
path is printed when a server fails to start.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from mem_agent import build_long_context, rollout
from mem_agent.data import synthetic
from mem_agent.serving.cpu_stack import LocalStack, StackSettings, local_stack
from mem_agent.serving.tiny_model import ensure_tiny_qwen3
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, load_tokenizer

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MEM_SHARED_DATA", str(PROJECT_ROOT.parent / "shared" / "data")))
HOTPOT_SAMPLE = SHARED_DATA / "hotpot_dev_distractor_sample70.json"
SYNTHETIC_QUESTIONS = 70  # as many as the real sample holds
SYNTHETIC_SEED = 0
# The data sources a `qa_rows` / `qa_file` test runs on: ours always, the real sample where present.
QA_SOURCES = ("synthetic", "hotpot") if HOTPOT_SAMPLE.is_file() else ("synthetic",)

pytest_plugins = ["support.suite_policy"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Module scope: a module runs all its synthetic cases, then its real ones; tests never move
    # across modules (session scope would regroup the whole run around the data source).
    if "qa_source" in metafunc.fixturenames:
        params = [pytest.param(s, id=s, marks=[pytest.mark.real_data] if s == "hotpot" else []) for s in QA_SOURCES]
        metafunc.parametrize("qa_source", params, scope="module")


@functools.cache
def _hotpot_rows() -> list[dict]:
    return json.loads(HOTPOT_SAMPLE.read_text())


@functools.cache
def _synthetic_rows() -> list[dict]:
    return synthetic.generate(SYNTHETIC_QUESTIONS, SYNTHETIC_SEED)


def document_text(rows: Sequence[dict]) -> str:
    """The rows' paragraphs as one plain document ("title\ntext" blocks, blank lines between).

    One synthetic row makes about 400 tokens and one real row about 1,350: a test that needs a
    number of chunks joins as many rows as that takes, whichever source it runs on.
    """
    return "\n\n".join(
        f"{title}\n{''.join(sentences)}"
        for row in rows
        for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True)
    )


@pytest.fixture(scope="session")
def tokenizer():
    return load_tokenizer(BUNDLED_QWEN3)


@pytest.fixture(scope="session")
def synthetic_rows() -> list[dict]:
    """Our own multi-hop QA set (HotpotQA's layout, invented facts, seeded): always available."""
    return _synthetic_rows()


@pytest.fixture(scope="session")
def synthetic_file(synthetic_rows: list[dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic set as a JSON file, for commands that read one."""
    path = tmp_path_factory.mktemp("synthetic_qa") / "synthetic_qa.json"
    path.write_text(json.dumps(synthetic_rows))
    return path


@pytest.fixture(scope="session")
def make_eval_files(synthetic_file: Path, tmp_path_factory: pytest.TempPathFactory):
    """RULER-HQA eval files built by our builder: `make_eval_files(*num_docs, questions=N)` returns
    the folder holding eval_<n>.json for each n, made from `source` (default: the synthetic set)
    into `out` (default: a new temporary folder)."""

    def make(*num_docs: int, questions: int, source: Path | None = None, out: Path | None = None) -> Path:
        root = out or tmp_path_factory.mktemp("ruler_hqa")
        argv = ["--input", str(source or synthetic_file), "--num-docs", *map(str, num_docs)]
        argv += ["--num-questions", str(questions), "--out-dir", str(root)]
        assert build_long_context.main(argv) == 0
        return root

    return make


@pytest.fixture(scope="module")
def qa_rows(qa_source: str) -> list[dict]:
    """QA rows in HotpotQA's layout: the synthetic set, and the real sample as an extra case."""
    return _synthetic_rows() if qa_source == "synthetic" else _hotpot_rows()


@pytest.fixture(scope="module")
def qa_file(qa_source: str, synthetic_file: Path) -> Path:
    """The file `qa_rows` came from."""
    return synthetic_file if qa_source == "synthetic" else HOTPOT_SAMPLE


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


@pytest.fixture(scope="module")
def instant_server() -> Iterator[str]:
    """The URL of an InstantServer (support/instant_server.py), one per test module."""
    from support.instant_server import InstantServer

    app = InstantServer().start()
    yield app.url
    app.stop()
