"""The reporting rules reach both evaluation paths (the evaluator CLI and the hooks' evaluation
sample) from MEM_FOLD_UNICODE / MEM_SUB_EM_GUARD, and summary.json records which rules scored a run.

The evaluator and the hook talk to a loopback stand-in for vLLM (support/fixed_answer_server.py) that
answers every request with one fixed text, so the scores are known in advance and no model is needed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem_agent import eval_ruler_hqa, rollout
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3
from support.fixed_answer_server import fixed_answer_server
from support.host.args import host_args
from support.host.rollout_loop import sampling_params
from support.host.sample import Sample

ANSWER = "\\boxed{\u201cVelmont Bridge\u201d}"  # curly quotes: official EM 0, folded EM 1
GOLD = "Velmont Bridge"


@pytest.fixture(scope="module")
def answer_server() -> Iterator[str]:
    with fixed_answer_server(ANSWER) as url:
        yield url


def _evaluate(url: str, tmp_path: Path) -> tuple[dict, dict]:
    data = tmp_path / "eval_2.json"
    items = [
        {"index": i, "input": "Which bridge?", "answers": [GOLD], "context": "The Velmont Bridge."} for i in range(2)
    ]
    data.write_text(json.dumps(items))
    out = tmp_path / "out"
    argv = ["--data", str(data), "--output-dir", str(out), "--url", url, "--protocol", "vllm", "--no-plot"]
    assert eval_ruler_hqa.main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    return summary["run"], summary["results"][0]


@pytest.mark.usefixtures("fresh_settings")
def test_the_evaluator_scores_officially_by_default_and_records_the_rules(answer_server, tmp_path, monkeypatch):
    monkeypatch.delenv("MEM_FOLD_UNICODE", raising=False)
    run, result = _evaluate(answer_server, tmp_path)
    assert run["scoring"] == {"fold_unicode": False, "empty_guard": False, "empty_answers": "left out"}
    assert run["config"]["fold_unicode"] is False
    assert (result["em"], result["sub_em"]) == (0.0, 100.0)


@pytest.mark.usefixtures("fresh_settings")
def test_mem_fold_unicode_changes_the_evaluators_scores_and_is_recorded(answer_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MEM_FOLD_UNICODE", "1")
    run, result = _evaluate(answer_server, tmp_path)
    assert run["scoring"] == {"fold_unicode": True, "empty_guard": False, "empty_answers": "left out"}
    assert (result["em"], result["sub_em"], result["f1"]) == (100.0, 100.0, 100.0)


def _hook_evaluation_scores(url: str) -> dict:
    args = host_args(url, hf_checkpoint=BUNDLED_QWEN3, n_samples_per_prompt=1)
    sample = Sample(
        group_index=0, index=0, prompt="Which bridge?", label=GOLD, metadata={"context": "The Velmont Bridge."}
    )
    row = asyncio.run(rollout.generate(args, sample, sampling_params(args), evaluation=True))
    return row.metadata["mem_agent"]


@pytest.mark.usefixtures("fresh_settings")
def test_the_hooks_evaluation_sample_honours_the_reporting_rules(answer_server, monkeypatch):
    official = _hook_evaluation_scores(answer_server)
    assert (official["em"], official["sub_em"], official["extracted"]) == (0.0, 1.0, "\u201cVelmont Bridge\u201d")
    monkeypatch.setenv("MEM_FOLD_UNICODE", "1")
    rollout.reset_caches()
    folded = _hook_evaluation_scores(answer_server)
    assert (folded["em"], folded["sub_em"], folded["f1"]) == (1.0, 1.0, 1.0)
