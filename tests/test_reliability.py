"""Faults, crashes and limits: nothing is lost, nothing is counted twice, and every failure says why.

Faults are injected by a real HTTP proxy between our client and the real router (500/503, resets,
stalls past the timeout, truncated or invalid JSON, token/logprob arrays of different lengths).
The figures each test measures are printed in the run's "measured figures" summary, in every
run: the data is our synthetic set, sized like the real sample's (an evaluation item of 40
synthetic documents is about 1,750 tokens, 4 chunks of 512; a training document of 3 synthetic
rows about 1,200 tokens, 5 chunks of 256).
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import document_text
from hypothesis import given, settings
from hypothesis import strategies as st

from mem_agent import eval_ruler_hqa, rollout
from mem_agent.agent.chunking import plan_chunks
from mem_agent.custom_convert import convert_samples_to_train_data
from mem_agent.evaluation.results import read_results
from mem_agent.host.clients import close_clients
from mem_agent.tokenization.tokenizer import encode
from support.fault_proxy import TRANSIENT_FAULTS, fault_proxy, random_faults
from support.host.args import host_args
from support.host.data_source import DataSource
from support.host.rollout_loop import RolloutState, generate_and_rm_group, sampling_params
from support.host.sample import Sample
from support.host.train_data import check_train_data, flatten_rollout
from support.proc_state import still_running
from support.scripts import SCRIPTS, run_script, script_env, start_until_first_result

QUESTIONS = 50
DOCS = 40
FAST = ["--chunk-tokens", "512", "--max-memory", "16", "--max-final", "16", "--temperature", "1.0", "--top-p", "1.0"]


@pytest.fixture(scope="module")
def eval_file(make_eval_files):
    return make_eval_files(DOCS, questions=QUESTIONS) / f"eval_{DOCS}.json"


def _accounting(path) -> tuple[Counter, list[str]]:
    records = read_results(path)
    ids = [record["id"] for record in records]
    return Counter(record["status"] for record in records), ids


@pytest.mark.server
def test_evaluator_under_20_percent_faults_accounts_for_every_item(stack, eval_file, tmp_path, monkeypatch, measured):
    monkeypatch.setenv("MEM_REQUEST_TIMEOUT", "30")  # 50 questions queue on a 2-core CPU server
    plan = random_faults(0.2, TRANSIENT_FAULTS, seed=7)
    with fault_proxy(stack.router_url, plan, stall_s=40.0) as proxy:
        argv = ["--data", str(eval_file), "--output-dir", str(tmp_path), "--url", proxy.url, "--protocol", "vllm"]
        code = eval_ruler_hqa.main([*argv, "--tokenizer", str(stack.model_path), *FAST])
    records = read_results(tmp_path / f"results_{DOCS}.jsonl")
    statuses, ids = _accounting(tmp_path / f"results_{DOCS}.jsonl")
    duplicates = len(ids) - len(set(ids))
    by_kind = ", ".join(f"{kind}={count}" for kind, count in sorted(proxy.injected.items()))
    measured(
        f"evaluator faults: requests={proxy.requests} faults_injected={proxy.faults_injected} ({by_kind}) "
        f"completed={statuses['completed']}/{QUESTIONS} failed={statuses['failed']} duplicates={duplicates} "
        f"exit={code}"
    )
    assert sorted(ids, key=int) == [str(i) for i in range(QUESTIONS)] and duplicates == 0, "every item, once"
    assert statuses["completed"] + statuses["failed"] == QUESTIONS
    assert all(r["error"] for r in records if r["status"] == "failed"), "every failure says why"
    # The plan is seeded and each question sends at least one request, so the faults of its first
    # QUESTIONS draws were injected whatever the timing: the run did meet faults of those kinds.
    replay = random_faults(0.2, TRANSIENT_FAULTS, seed=7)
    first = Counter(fault for fault in (replay(number) for number in range(QUESTIONS)) if fault is not None)
    assert first and proxy.faults_injected >= first.total() and set(first) <= set(proxy.injected)
    assert code == (1 if statuses["failed"] else 0), "the exit status tells whether anything failed"
    summary = json.loads((tmp_path / "summary.json").read_text())["results"][0]
    assert summary["items"] == QUESTIONS and summary["failed"] == statuses["failed"]


@pytest.mark.server
def test_without_retries_failures_are_recorded_with_reasons_and_count_as_wrong(
    stack, eval_file, tmp_path, monkeypatch, measured
):
    monkeypatch.setenv("MEM_MAX_RETRIES", "0")
    monkeypatch.setenv("MEM_REQUEST_TIMEOUT", "30")
    with fault_proxy(stack.router_url, random_faults(0.2, TRANSIENT_FAULTS, seed=3), stall_s=40.0) as proxy:
        argv = ["--data", str(eval_file), "--output-dir", str(tmp_path), "--url", proxy.url, "--protocol", "vllm"]
        code = eval_ruler_hqa.main([*argv, "--limit", "20", "--tokenizer", str(stack.model_path), *FAST])
    records = read_results(tmp_path / f"results_{DOCS}.jsonl")
    failed = [r for r in records if r["status"] == "failed"]
    measured(f"no retries: requests={proxy.requests} faults={proxy.faults_injected} failed_items={len(failed)}/20")
    assert code == 1 and failed and len(records) == 20
    assert all(
        r["error"] and ("HTTP 5" in r["error"] or "failed" in r["error"] or "bad response" in r["error"])
        for r in failed
    )
    summary = json.loads((tmp_path / "summary.json").read_text())["results"][0]
    completed = [r for r in records if r["status"] == "completed"]
    assert summary["sub_em"] == pytest.approx(100 * sum(r["sub_em"] for r in completed) / 20)

    rerun = ["--data", str(eval_file), "--output-dir", str(tmp_path), "--url", stack.router_url, "--protocol", "vllm"]
    assert eval_ruler_hqa.main([*rerun, "--limit", "20", "--tokenizer", str(stack.model_path), *FAST]) == 0
    statuses, ids = _accounting(tmp_path / f"results_{DOCS}.jsonl")
    assert statuses == Counter(completed=20) and len(set(ids)) == 20, "a rerun redoes exactly the failed items"


@pytest.mark.server
def test_training_hook_under_faults_never_trains_a_half_trajectory(
    stack, synthetic_rows, monkeypatch, measured, fresh_settings
):
    monkeypatch.setenv("MEM_CHUNK_TOKENS", "256")
    monkeypatch.setenv("MEM_MAX_MEMORY", "12")
    monkeypatch.setenv("MEM_MAX_FINAL", "12")
    monkeypatch.setenv("MEM_MAX_RETRIES", "1")
    monkeypatch.setenv("MEM_REQUEST_TIMEOUT", "4")
    rollout.reset_caches()
    rows = []
    for first in range(0, 12, 3):  # a question, with two other rows' paragraphs as more distractors
        row = synthetic_rows[first]
        metadata = {"context": document_text(synthetic_rows[first : first + 3]), "ground_truth": [row["answer"]]}
        rows.append({"prompt": row["question"], "label": row["answer"], "metadata": metadata})
    with fault_proxy(stack.router_url, random_faults(0.25, TRANSIENT_FAULTS, seed=11), stall_s=8.0) as proxy:
        args = host_args(proxy.url, hf_checkpoint=str(stack.model_path), n_samples_per_prompt=4)

        async def go():
            try:
                state, params = RolloutState.for_args(args), sampling_params(args)
                groups = DataSource(rows, 4).get_samples(len(rows))
                return await asyncio.gather(*(generate_and_rm_group(state, group, params) for group in groups))
            finally:
                await close_clients()

        output = asyncio.run(go())
    samples = flatten_rollout(output)
    data = convert_samples_to_train_data(args, samples)
    check_train_data(data, rollout_counted=True)
    by_rollout: dict[int, set] = {}
    for sample in samples:
        by_rollout.setdefault(sample.rollout_id, set()).add(sample.status)
    broken = [rid for rid, statuses in by_rollout.items() if statuses & {Sample.Status.FAILED, Sample.Status.ABORTED}]
    for position, sample in enumerate(samples):
        if sample.rollout_id in broken:
            assert sample.status in (Sample.Status.FAILED, Sample.Status.ABORTED), (
                "the whole trajectory, not part of it"
            )
            assert set(data["loss_masks"][position]) == {0} and data["rewards"][position] == 0.0
    measured(
        f"training faults: requests={proxy.requests} faults_injected={proxy.faults_injected} "
        f"trajectories={len(by_rollout)} failed_or_aborted={len(broken)} rows={len(samples)}"
    )
    assert len(by_rollout) == 16 and proxy.faults_injected > 0


@pytest.mark.server
def test_killing_the_evaluator_five_times_still_ends_with_one_line_per_item(stack, eval_file, tmp_path, measured):
    argv = [sys.executable, "-m", "mem_agent.eval_ruler_hqa", "--data", str(eval_file), "--output-dir", str(tmp_path)]
    argv += ["--url", stack.router_url, "--protocol", "vllm", "--tokenizer", str(stack.model_path), "--limit", "24"]
    argv += ["--questions-in-flight", "4", *FAST]
    results = tmp_path / f"results_{DOCS}.jsonl"
    rng = random.Random(5)
    kills = []
    for round_number in range(5):
        before = _lines(results)
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if round_number == 0:
            time.sleep(rng.uniform(0.5, 3.0))  # during start-up, before any result
        else:  # mid-run: after at least one new result, at a random moment
            deadline = time.monotonic() + 300
            while _lines(results) <= before and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.1)
            time.sleep(rng.uniform(0.0, 1.5))
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills.append(_lines(results))
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr[-2000:]
    statuses, ids = _accounting(results)
    measured(f"kill -9 x5: lines after each kill={kills} final={len(ids)} duplicates={len(ids) - len(set(ids))}")
    assert sorted(ids, key=int) == [str(i) for i in range(24)] and statuses == Counter(completed=24)
    assert all(json.loads(line) for line in results.read_text().splitlines())
    assert kills[-1] > kills[1] > 0, "later kills landed mid-run, after results were written"


def _lines(path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_partial_last_line_from_a_crash_is_repaired_on_resume(tmp_path):
    from mem_agent.evaluation.results import ResultStore

    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "0", "status": "completed"}\n{"id": "1", "status": "compl')
    store = ResultStore.open(path)
    assert store.report.repaired_partial_line and store.done == {"0"}
    assert path.read_bytes() == b'{"id": "0", "status": "completed"}\n'


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=0, max_size=3000), chunk_tokens=st.integers(1, 400), max_chunks=st.integers(0, 6))
def test_chunking_any_unicode_covers_the_kept_tokens_exactly(tokenizer, text, chunk_tokens, max_chunks):
    ids = encode(tokenizer, text)
    plan = plan_chunks(ids, chunk_tokens, max_chunks)
    chunks = [plan.chunk(i) for i in range(plan.num_chunks)]
    assert all(0 < len(chunk) <= chunk_tokens for chunk in chunks)
    kept = np.concatenate(chunks) if chunks else ids[:0]
    assert len(kept) + plan.dropped_tokens == len(ids)
    if plan.dropped_tokens == 0:
        assert np.array_equal(kept, ids)
    else:
        cap = max_chunks * chunk_tokens
        assert np.array_equal(kept, np.concatenate([ids[: cap // 2], ids[len(ids) - (cap - cap // 2) :]]))


def _descendants(root: int) -> dict[int, str]:
    """Every running process below `root` (children, their children, ...) with its command line."""
    parents: dict[int, int] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            lines[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found and still_running(child):
                found[child] = lines[child]
                frontier.append(child)
    return found


@pytest.mark.server
def test_run_eval_on_the_cpu_stack_killed_with_sigkill_leaves_no_server_and_a_rerun_completes(
    tiny_model_path, make_eval_files, tmp_path, measured
):
    """The user's case: run-eval.sh (vLLM's CPU build behind vllm-router, the evaluator) killed with
    `kill -9` mid-run. No trap runs; the local stack's tether sees the script gone and stops the
    stack and the evaluator, and the servers' own tethers back that up. Then the rerun resumes."""
    data = make_eval_files(8, questions=4, out=tmp_path / "data")
    env = {
        "MODEL_PATH": str(tiny_model_path),
        "DATA_ROOT": str(data),
        "LENGTH": "8",
        "OUTPUT_ROOT": str(tmp_path / "runs"),
        "QUESTIONS_IN_FLIGHT": "1",
        "EXTRA_EVAL_ARGS": "--no-plot --chunk-tokens 256 --max-memory 16 --max-final 8",
    }
    results = tmp_path / "runs" / tiny_model_path.name / "results_8.jsonl"
    script = start_until_first_result(script_env(env, home=tmp_path), tmp_path, results, timeout_s=600)
    running = _descendants(script.pid)
    assert any("vllm.entrypoints.openai.api_server" in line for line in running.values()), running
    assert any("vllm-router" in line for line in running.values()) and results.read_bytes().count(b"\n") < 4
    killed = time.monotonic()
    script.send_signal(signal.SIGKILL)
    script.wait()
    while left := [pid for pid in running if still_running(pid)]:
        assert time.monotonic() - killed < 120, {pid: running[pid] for pid in left}
        time.sleep(0.05)
    seconds = time.monotonic() - killed
    measured(f"run-eval.sh on the CPU stack, kill -9 mid-run: {len(running)} processes gone after {seconds:.1f} s")
    rerun = run_script(SCRIPTS / "run-eval.sh", env, cwd=tmp_path, home=tmp_path, timeout=900)
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]
    assert "resuming eval_8.json" in rerun.stdout
    ids = [record["id"] for record in read_results(results)]
    assert sorted(ids, key=int) == [str(i) for i in range(4)], "one line per item"
