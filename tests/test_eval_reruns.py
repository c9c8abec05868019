"""Reruns into one output folder are honest: reused results are reported as reused, summary.json
keeps the facts of the runs that produced them, and results made with other settings are refused.

The evaluator runs for real (tokenizer, client, scheduling, files) against the latency stand-in
from the benchmarks, an HTTP server that answers at once: these tests are about bookkeeping, not
the model, so they need no vLLM stack.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.latency_server import make_app
from mem_agent import eval_ruler_hqa
from mem_agent.eval_report import check_reuse, reuse_problems
from mem_agent.eval_results import read_results
from support.background_app import BackgroundApp

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm"]


class _InstantServer(BackgroundApp):
    def make_app(self):
        return make_app(tokens=8, delay_s=0.0)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    app = _InstantServer().start()
    yield app.url
    app.stop()


@pytest.fixture(scope="module")
def data_root(make_eval_files) -> Path:
    return make_eval_files(6, questions=3)


def _evaluate(server: str, data_root: Path, out: Path, *extra: str) -> int:
    argv = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", server]
    return eval_ruler_hqa.main([*argv, *FAST, "--no-plot", *extra])


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_a_rerun_with_nothing_left_keeps_the_facts_of_the_run_that_did_the_work(server, data_root, tmp_path, capsys):
    """The second run sends no request; it must not overwrite `seconds` and `requests` with its zeros."""
    assert _evaluate(server, data_root, tmp_path) == 0
    first = _summary(tmp_path)
    assert first["run"]["items_run"] == 3 and first["run"]["requests"] > 0 and first["earlier_runs"] == []
    capsys.readouterr()
    assert _evaluate(server, data_root, tmp_path) == 0
    out = capsys.readouterr().out
    assert "resuming eval_6.json: 3 done (results of earlier runs, reused)" in out
    assert "nothing new to run: all 3 results come from earlier runs" in out
    second = _summary(tmp_path)
    assert second["run"] == first["run"] and second["earlier_runs"] == []
    assert second["results"][0]["reused"] == 3 and first["results"][0]["reused"] == 0


def test_a_run_that_adds_results_is_recorded_beside_the_earlier_one(server, data_root, tmp_path):
    assert _evaluate(server, data_root, tmp_path, "--limit", "2") == 0
    first = _summary(tmp_path)["run"]
    assert _evaluate(server, data_root, tmp_path) == 0
    summary = _summary(tmp_path)
    assert summary["earlier_runs"] == [first]
    assert (summary["run"]["items_run"], summary["run"]["items_reused"]) == (1, 2)
    assert summary["results"][0]["items"] == 3 and len(read_results(tmp_path / "results_6.jsonl")) == 3


def test_summary_stores_typed_values(server, data_root, tmp_path):
    """Numbers as numbers, switches as booleans, choices by the names the settings use."""
    assert _evaluate(server, data_root, tmp_path, "--limit", "1") == 0
    run = _summary(tmp_path)["run"]
    config = run["config"]
    assert config["chunk_tokens"] == 256 and config["max_memory_tokens"] == 16
    assert config["thinking"] is False and config["rememr1_alpha"] == 0.8 and config["mode"] == "memagent"
    assert run["sampling"]["temperature"] == 0.7 and run["sampling"]["seed"] is None
    assert run["data"] == {"6": 3} and isinstance(run["seconds"], float)


def test_results_made_with_other_settings_are_refused_before_anything_runs(server, data_root, tmp_path, capsys):
    assert _evaluate(server, data_root, tmp_path, "--limit", "1") == 0
    before = (tmp_path / "results_6.jsonl").read_text()
    capsys.readouterr()
    assert _evaluate(server, data_root, tmp_path, "--max-memory", "32", "--temperature", "1.0") == 2
    err = capsys.readouterr().err
    assert "holds results made with other settings" in err and err.count("\n") == 1
    assert "config.max_memory_tokens 16 -> 32" in err and "sampling.temperature 0.7 -> 1.0" in err
    assert "--force" in err and (tmp_path / "results_6.jsonl").read_text() == before
    assert _evaluate(server, data_root, tmp_path, "--max-memory", "32", "--force") == 0
    assert _summary(tmp_path)["run"]["config"]["max_memory_tokens"] == 32


def test_the_check_flag_refuses_the_same_mismatch_without_a_server(server, data_root, tmp_path, capsys):
    """run-eval.sh calls --check before it starts vLLM, so a mismatch costs no server start."""
    assert _evaluate(server, data_root, tmp_path, "--limit", "1") == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    check = ["--output-dir", str(tmp_path), "--check", *FAST]
    assert eval_ruler_hqa.main(check) == 0
    assert eval_ruler_hqa.main([*check, "--max-final", "4"]) == 2
    assert "config.max_final_tokens 8 -> 4" in capsys.readouterr().err
    assert eval_ruler_hqa.main([*check, "--max-final", "4", "--force"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "a check writes nothing"


def test_reuse_compares_the_older_all_strings_layout_with_typed_values(tmp_path):
    """summary.json files written before values were typed still let their results be reused."""
    (tmp_path / "results_6.jsonl").write_text('{"id": "0", "status": "completed"}\n')
    old = {"config": {"chunk_tokens": "256", "thinking": "False", "mode": "memagent"}, "sampling": {"seed": None}}
    (tmp_path / "summary.json").write_text(json.dumps({"results": [], "run": old}))
    now = {"config": {"chunk_tokens": 256, "thinking": False, "mode": "memagent"}, "sampling": {"seed": None}}
    assert check_reuse(tmp_path, now) == [old]
    changed = {"config": {"chunk_tokens": 512, "thinking": False, "mode": "rememr1"}}
    assert reuse_problems(old, changed) == ["config.chunk_tokens 256 -> 512", "config.mode memagent -> rememr1"]


def test_results_without_a_summary_are_reused_with_a_note(tmp_path, capsys):
    (tmp_path / "results_6.jsonl").write_text('{"id": "0", "status": "completed"}\n')
    assert check_reuse(tmp_path, {"config": {}}) == []
    assert "holds results but no summary.json" in capsys.readouterr().out
