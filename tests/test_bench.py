"""The benchmarks still run: each one in its quick mode, on the real parts it measures.

Quick mode uses small sizes, so the figures here are not those of docs/benchmarks.md (those come from
`python -m bench.run_all`, full mode); these tests check that every benchmark runs to the end,
measures what it says and that the report reads its results. No timing target is asserted.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest

from bench import (
    bench_chunking,
    bench_jsonstream,
    bench_linear,
    bench_memory,
    bench_over_1m,
    bench_overhead,
    bench_scheduling,
    bench_startup,
    run_all,
)


def test_chunking_benchmark_times_our_path_against_the_raw_encode(measured):
    result = bench_chunking.run(quick=True)
    measured(f"quick chunking: {result['context_tokens']} tokens, ours / raw encode = {result['ratio']}")
    assert result["context_tokens"] >= 100_000
    assert result["raw_encode_s"] > 0 and result["tokenize_and_chunk_s"] > 0
    assert math.isclose(result["ratio"], result["tokenize_and_chunk_s"] / result["raw_encode_s"], rel_tol=0.02)
    tokens = [point["tokens"] for point in result["series"]]
    assert tokens == sorted(tokens) and len(tokens) == 3
    assert -1.0 <= result["r2"] <= 1.0


def test_scheduling_benchmark_meets_the_lower_bound_it_reports():
    result = bench_scheduling.run(quick=True, questions=32)
    assert [case["slots"] for case in result["cases"]] == [32, 64, 128]
    for case in result["cases"]:
        # No schedule can beat the bound: a measured time under it would mean the bound is wrong.
        assert case["pipelined_priority_s"] >= case["lower_bound_s"] * 0.98
        assert case["lockstep_s"] >= case["lower_bound_s"] * 0.98


def test_over_1m_benchmark_runs_index_and_text_layouts_and_fits_a_line(measured):
    result = bench_over_1m.run(quick=True)
    index, text = result["memory"]["index_layout"], result["memory"]["text_layout"]
    measured(f"quick over 1M: peak RSS {index['peak_rss_gib']} GiB (index) vs {text['peak_rss_gib']} GiB (text)")
    assert index["exit_status"] == text["exit_status"] == 0
    assert index["items_completed"] == text["items_completed"] == result["memory"]["questions"] == 8
    assert index["mean_context_tokens"] > 40_000  # 400 documents of ~137 tokens
    assert index["peak_rss_gib"] > 0 and result["memory"]["token_ratio"] > 3
    assert result["time_per_token"]["largest_tokens"] > 100_000 and len(result["time_per_token"]["points"]) == 10


def test_memory_benchmark_runs_the_evaluator_over_every_question(measured):
    result = bench_memory.run(quick=True)
    measured(f"quick memory: peak RSS {result['peak_rss_gib']} GiB, file {result['file_gib']} GiB")
    assert result["exit_status"] == 0
    assert result["items_completed"] == result["questions"] == 8
    assert result["mean_context_tokens"] > 40_000  # 400 documents of ~140 tokens
    assert result["peak_rss_gib"] > 0
    assert result["requests"] > result["questions"] * 2  # several memory turns and an answer each


def test_startup_benchmark_times_each_path_and_its_floor(measured):
    result = bench_startup.run(quick=True)
    medians = result["median_s"]
    measured(
        f"quick start-up: first request after {medians['evaluator']} s (evaluator), {medians['run_document']} s"
        f" (run_document), {medians['minimal']} s (minimal loop); hook in a host {medians['hook_in_host']} s"
    )
    paths = {"evaluator", "run_document", "hook", "hook_in_host"}
    assert set(medians) == paths | {"minimal", "minimal_load"}
    assert all(len(times) == result["rounds"] == 1 for times in result["first_request_s"].values())
    assert all(seconds > 0 for seconds in medians.values())
    for path, floor in bench_startup.FLOORS.items():
        assert math.isclose(result["over_floor"][path], medians[path] / medians[floor], abs_tol=0.02)


def test_jsonstream_benchmark_reads_the_file_with_each_reader(measured):
    result = bench_jsonstream.run(quick=True)
    measured(
        f"quick eval-file read: {result['mb_per_s']} MB/s, peak {result['peak_rss_mib']} MiB, {result['file_mb']} MB"
    )
    assert set(result["seconds"]) == set(bench_jsonstream.READERS) == {"ours", "ijson", "json_load"}
    assert all(len(times) == result["rounds"] == 1 for times in result["seconds"].values())
    assert all(peak > 0 for peak in result["peak_rss_mib"].values())
    ratio = result["ours_time_over_json_load"]
    assert math.isclose(ratio, result["mb_per_s"]["json_load"] / result["mb_per_s"]["ours"], rel_tol=0.05)


def test_instant_server_records_each_arrival_and_a_failing_client_is_an_error():
    with bench_startup.InstantServer() as server:
        with pytest.raises(RuntimeError, match="exited 3 after 0 requests"):
            bench_startup.first_request_s(server, [sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ))
        send = f"import urllib.request as u; u.urlopen(u.Request('{server.url}/v1/completions', b'{{}}')).read()"
        assert bench_startup.first_request_s(server, [sys.executable, "-c", send], dict(os.environ)) > 0
        assert len(server.arrivals) == 1


@pytest.mark.server
def test_overhead_benchmark_replays_the_workflow_requests_directly(stack, measured):
    result = bench_overhead.run(stack.router_url, quick=True)
    measured(f"quick overhead: workflow / direct = {result['ratio']} (one run, not a median)")
    assert result["requests_per_run"] == result["questions"] * (result["chunks_per_question"] + 1)
    assert len(result["workflow_s"]) == len(result["direct_s"]) == len(result["round_ratios"]) == 1
    assert result["ratio"] == result["round_ratios"][0] > 0, "the figure is the median of the per-round ratios"


@pytest.mark.server
def test_linear_benchmark_fits_time_against_chunks(stack):
    result = bench_linear.run(stack.router_url, quick=True)
    assert [point["chunks"] for point in result["points"]] == [1, 2, 4]
    assert result["seconds_per_chunk"] > 0


def test_report_checks_every_target_and_flags_a_missed_one():
    results = {
        "overhead": {"ratio": 1.01},
        "scheduling": {
            "cases": [
                {"slots": 32, "priority_over_bound": 1.04},
                {"slots": 128, "priority_over_bound": 1.07, "speedup_vs_lockstep": 1.8},
            ]
        },
        "chunking": {"ratio": 1.2, "r2": 0.999},
        "memory": {"peak_rss_gib": 1.1},
        "linear": {"r2": 0.99},
        "jsonstream": {"ours_time_over_json_load": 0.9, "json_load_peak_over_ours": 3.0},
        "startup": {
            "median_s": {"evaluator": 4.5, "run_document": 6.5, "hook_in_host": 0.8},
            "target_s": 6.0,
            "host_target_s": 1.5,
        },
    }
    met = {(check.benchmark, check.figure): check.met for check in run_all.checks(results)}
    assert met == {
        ("1 client overhead", "workflow / direct, median per round"): True,
        ("2 scheduling", "pipelined / lower bound, C=32"): True,
        ("2 scheduling", "pipelined / lower bound, C=128"): False,
        ("2 scheduling", "lock-step / pipelined, C=128"): True,
        ("3 chunking", "tokenise+chunk / raw encode"): False,
        ("3 chunking", "R^2 of time vs tokens"): True,
        ("4 memory", "evaluator peak RSS (GiB)"): True,
        ("5 linear cost", "R^2 of time vs chunks"): True,
        ("6 start-up", "evaluator: first request (s)"): True,
        ("6 start-up", "run_document: first request (s)"): False,
        ("6 start-up", "hook in a host: agent ready (s)"): True,
        ("8 eval file read", "streamed / json.load, time"): True,
        ("8 eval file read", "json.load / streamed, peak RSS"): False,
    }


def test_run_all_writes_its_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "bench.json"
    assert run_all.main(["--quick", "--only", "chunking", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["mode"] == "quick"
    assert set(document["results"]) == {"chunking"}
    assert document["machine"]["cores"] >= 1
    printed = capsys.readouterr().out
    assert "tokenise+chunk / raw encode" in printed
    assert "quick mode" in printed, "quick figures must say they are rough"


def test_run_all_rejects_an_unknown_benchmark_name(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        run_all.main(["--only", "speed"])
    assert exit_info.value.code == 2
    assert "speed" in capsys.readouterr().err
