"""The RULER-HQA evaluator end to end against the real vLLM server, on RULER-HQA-shaped files built
from our synthetic set (10 documents: about 450 tokens, 30: about 1,300); the full two-length run
also runs on files built from the real HotpotQA sample where it exists."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mem_agent import eval_ruler_hqa
from mem_agent.agent.scoring import score_answer
from mem_agent.evaluation.results import read_results
from support.exits import exit_status
from support.fault_proxy import fault_proxy, scripted

pytestmark = pytest.mark.server

QUESTIONS = 6
FAST = ["--chunk-tokens", "512", "--max-memory", "24", "--max-final", "16", "--temperature", "1.0", "--top-p", "1.0"]


@pytest.fixture(scope="module")
def data_root(make_eval_files) -> Path:
    return make_eval_files(10, 30, questions=QUESTIONS)


@pytest.fixture(scope="module")
def qa_data_root(make_eval_files, qa_file) -> Path:
    return make_eval_files(10, 30, questions=QUESTIONS, source=qa_file)


def _evaluate(stack, data_root, output_dir, *extra: str) -> int:
    argv = ["--data-root", str(data_root), "--lengths", "10", "30", "--output-dir", str(output_dir)]
    argv += ["--url", stack.router_url, "--protocol", "vllm", "--tokenizer", str(stack.model_path), *FAST, *extra]
    return eval_ruler_hqa.main(argv)


def test_two_lengths_give_one_result_per_item_a_table_a_summary_and_a_plot(stack, qa_data_root, tmp_path, capsys):
    assert _evaluate(stack, qa_data_root, tmp_path) == 0
    out = capsys.readouterr().out
    assert "docs | items | failed" in out and "summary:" in out
    for label in ("10", "30"):
        records = read_results(tmp_path / f"results_{label}.jsonl")
        assert sorted(r["id"] for r in records) == [str(i) for i in range(QUESTIONS)]
        for record in records:
            assert record["status"] == "completed", record.get("error")
            rescored = score_answer(record["answer"], record["answers"])
            assert (record["sub_em"], record["em"], record["f1"], record["strict"]) == (
                rescored.sub_em,
                rescored.em,
                rescored.f1,
                rescored.strict,
            )
            assert record["num_chunks"] == -(-record["context_tokens"] // 512)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["label"] for r in summary["results"]] == ["10", "30"]
    assert all(r["items"] == QUESTIONS and r["failed"] == 0 for r in summary["results"])
    ten, thirty = summary["results"]
    assert thirty["mean_context_tokens"] > 2 * ten["mean_context_tokens"]
    assert summary["run"]["requests"] >= 2 * QUESTIONS * 2
    assert (tmp_path / "accuracy_vs_length.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_rerun_skips_finished_items_and_force_redoes_them(stack, data_root, tmp_path, capsys):
    assert _evaluate(stack, data_root, tmp_path, "--limit", "2") == 0
    first = read_results(tmp_path / "results_10.jsonl")
    assert _evaluate(stack, data_root, tmp_path, "--limit", "3") == 0
    second = read_results(tmp_path / "results_10.jsonl")
    assert second[:2] == first and len(second) == 3, "finished items are kept as they were, only item 2 is new"
    assert "resuming eval_10.json: 2 done" in capsys.readouterr().out
    assert _evaluate(stack, data_root, tmp_path, "--limit", "1", "--force") == 0
    assert len(read_results(tmp_path / "results_10.jsonl")) == 1


def test_a_killed_evaluator_resumes_to_exactly_one_line_per_item(stack, data_root, tmp_path):
    argv = [sys.executable, "-m", "mem_agent.eval_ruler_hqa", "--data", str(data_root / "eval_30.json")]
    argv += ["--output-dir", str(tmp_path), "--url", stack.router_url, "--protocol", "vllm"]
    argv += ["--tokenizer", str(stack.model_path), "--questions-in-flight", "2", *FAST]
    results = tmp_path / "results_30.jsonl"
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 2):
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = results.read_text().count("\n")
    assert 2 <= killed_at < QUESTIONS, "killed mid-run"
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    ids = [r["id"] for r in read_results(results)]
    assert sorted(ids) == [str(i) for i in range(QUESTIONS)] and len(ids) == len(set(ids))


def test_several_servers_share_the_work(stack, data_root, tmp_path):
    """Two URLs: each request goes to the less busy one, so two questions in flight use both."""
    with fault_proxy(stack.router_url, scripted()) as first, fault_proxy(stack.server_url, scripted()) as second:
        argv = ["--limit", "2", "--questions-in-flight", "2", "--url", first.url, second.url]
        assert _evaluate(stack, data_root, tmp_path, *argv) == 0
    assert len(read_results(tmp_path / "results_30.jsonl")) == 2
    assert first.exchanges and second.exchanges, "both servers answered requests"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data-root", "/nonexistent"], "--data-root /nonexistent is not a folder"),
        (["--data", "/nonexistent/eval_5.json"], "eval file(s) not found: /nonexistent/eval_5.json"),
        (["--concurrency", "0"], "--concurrency 0 must be a positive integer"),
        (["--top-p", "0"], "--top-p 0 must be a number above 0 and at most 1"),
        ([], "nothing to evaluate"),
    ],
)
def test_usage_mistakes_are_one_line_errors_with_status_2(tmp_path, capsys, args, message, monkeypatch):
    monkeypatch.setenv("MEM_ROUTER_URL", "http://127.0.0.1:9")
    assert exit_status(eval_ruler_hqa.main, ["--output-dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_malformed_item_stops_the_run_with_its_position_before_any_item_runs(stack, tmp_path, capsys):
    """The whole file is checked before the first request: a bad item late in a file never leaves
    a half-made results folder behind."""
    bad = tmp_path / "eval_7.json"
    items = [{"input": "q?", "answers": ["a"], "context": "Document 1:\nT\nText."}, {"input": "q?", "answers": ["a"]}]
    bad.write_text(json.dumps(items))
    code = eval_ruler_hqa.main(
        [
            "--data",
            str(bad),
            "--output-dir",
            str(tmp_path / "out"),
            "--url",
            stack.router_url,
            "--protocol",
            "vllm",
            *FAST,
        ]
    )
    assert code == 2
    assert f"{bad}: item 1: field 'context' must be a string" in capsys.readouterr().err
    assert not (tmp_path / "out").exists(), "nothing is written"
