"""The log hooks inside the host double: memory-agent metrics through the host's own logger, stepped
as the host steps its own, counted per trajectory, and trajectory records under --save.

The double's `log_rollout_data` / `log_eval_rollout_data` call our hooks first with the hosts'
exact arguments (slime HEAD rollout_metrics.py:256-259 and :223-226, current vime alike) and log
through the double's `logging_utils.log`, which keeps every call in `LOGGED`. The scripted engine
makes the outcome known in advance: even positions in a group answer right, odd ones wrong, and
a "hard" question is always wrong (its group has no reward contrast).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from mem_agent.common.run_folder import lock_run_folder
from mem_agent.host.clients import close_clients
from mem_agent.observability.trajectory_records import read_records
from support.fake_trainer import write_fake_trainer
from support.hook_bench import SMALL_AGENT, bench_args, right_for_even_seeds, run_async, small_agent
from support.host import observability
from support.host.data_source import DataSource
from support.host.eval_loop import eval_rollout_single_dataset
from support.host.metrics import log_eval_rollout_data
from support.host.rollout_loop import RolloutState
from support.host.step import run_step
from support.real_step import SAMPLES_PER_PROMPT, real_step
from support.scripted_engine import scripted_engine
from support.trainer_rows import trainer_rows

pytestmark = pytest.mark.usefixtures("fresh_settings")
N = 4
PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows(synthetic_rows) -> list[dict]:
    return trainer_rows(synthetic_rows, 3)


@pytest.fixture(autouse=True)
def empty_log():
    observability.LOGGED.clear()
    yield
    observability.LOGGED.clear()


def _step(tokenizer, rows, *, hard=(), rollout_id=0, env=None, backend="vime", **overrides):
    with small_agent(**(env or {})), scripted_engine(tokenizer, right_for_even_seeds(rows, hard)) as engine:
        overrides.setdefault("global_batch_size", N)
        args = bench_args(engine.url, backend=backend, n=N, rollout_batch_size=len(rows), **overrides)
        source = DataSource(rows, N)
        return args, run_step(args, source, closers=(close_clients,), rollout_id=rollout_id)


def _ours(step_key: str) -> dict:
    calls = [metrics for key, metrics in observability.LOGGED if key == step_key and _has_ours(metrics)]
    assert len(calls) == 1, f"one call of the host's logger with our metrics under {step_key}"
    return calls[0]


def _has_ours(metrics: dict) -> bool:
    return any("/mem_agent/" in key for key in metrics)


@pytest.mark.parametrize("backend", ["vime", "slime"])
def test_a_rollout_logs_per_trajectory_metrics_through_the_hosts_logger_and_keeps_the_hosts_own(
    tokenizer, rows, backend
):
    """Our hook returns False: the host logs its own metrics too. Ours weigh each trajectory once,
    however many turns it has, and a group without reward contrast is counted per trajectory."""
    hard = {rows[0]["prompt"]}
    _, result = _step(tokenizer, rows[:2], hard=hard, backend=backend)
    assert result.log is not None and "rollout/response_len/mean" in result.log, "the host's own metrics stay"
    ours = _ours("rollout/step")
    assert ours["rollout/step"] == result.log["rollout/step"] == 0
    by_trajectory = defaultdict(list)
    for sample in result.samples:
        by_trajectory[sample.rollout_id].append(sample)
    rewards = [turns[-1].reward for turns in by_trajectory.values()]
    assert ours["rollout/mem_agent/trajectories"] == 2 * N == len(rewards)
    assert ours["rollout/mem_agent/reward/mean"] == pytest.approx(sum(rewards) / len(rewards)) == 0.25
    assert ours["rollout/mem_agent/accuracy/strict"] == 0.25 and ours["rollout/mem_agent/accuracy/sub_em"] == 0.25
    counts = [len(turns) for turns in by_trajectory.values()]
    assert ours["rollout/mem_agent/turns/mean"] == pytest.approx(sum(counts) / len(counts))
    assert ours["rollout/mem_agent/turns/max"] == max(counts) >= 2
    assert ours["rollout/mem_agent/zero_contrast/groups"] == 1, "the hard question's group"
    assert ours["rollout/mem_agent/zero_contrast/trajectory_share"] == 0.5
    assert ours["rollout/mem_agent/answer/box_share"] == 1.0, "the engine always closes its box"
    assert ours["rollout/mem_agent/status/failed"] == ours["rollout/mem_agent/status/aborted"] == 0
    memory_rows = [s for s in result.samples if s.metadata["mem_agent"]["turn"] == "memory"]
    lengths = [s.metadata["mem_agent"]["memory_tokens"] for s in memory_rows]
    assert ours["rollout/mem_agent/memory_tokens/mean"] == pytest.approx(sum(lengths) / len(lengths))
    assert ours["rollout/mem_agent/memory_tokens/p95"] <= max(lengths)
    assert not any(key.startswith("rollout/mem_agent/rememr1/") for key in ours), "MemAgent mode: no recall"


def test_our_metrics_are_stepped_like_the_hosts_own_with_the_train_step_option(tokenizer, rows):
    """--wandb-always-use-train-step: both the host and our hook log at the host's optimizer step."""
    _, result = _step(tokenizer, rows[:1], rollout_id=3, wandb_always_use_train_step=True, global_batch_size=2)
    assert result.log is not None and result.log["rollout/step"] == 3 * 1 * N // 2
    assert _ours("rollout/step")["rollout/step"] == 6


def test_records_hold_correct_and_wrong_trajectories_with_the_advantages_the_convert_gave(tokenizer, rows, tmp_path):
    """MEM_TRAJECTORY_COUNT trajectories, both kinds, each turn's memory text, cut flag and the advantage
    of its row in the train data; the metrics line for the training summary goes beside them."""
    env = {"MEM_TRAJECTORY_COUNT": "4"}
    _, result = _step(tokenizer, rows[:2], rollout_id=12, env=env, save=str(tmp_path))
    path = tmp_path / "trajectories" / "rollout_000012.jsonl"
    records = list(read_records(path))
    assert len(records) == 4 and sorted(r.reward for r in records) == [0.0, 0.0, 1.0, 1.0]
    advantage_of = dict(zip(result.data["rollout_ids"], result.data["rewards"], strict=True))
    rows_of = defaultdict(list)
    for sample in result.samples:
        rows_of[str(sample.rollout_id)].append(sample)
    for record in records:
        turns = rows_of[record.item_id]
        assert record.rollout_id == 12 and record.source == "train" and record.question == turns[0].prompt
        assert record.ground_truths and record.ground_truths[0] == turns[0].label
        assert [t.kind for t in record.turns] == [s.metadata["mem_agent"]["turn"] for s in turns]
        assert [t.text for t in record.turns] == [s.response for s in turns], "MemAgent: the memory is the response"
        assert record.advantage == advantage_of[int(record.item_id)]
        assert all(t.advantage == record.advantage for t in record.turns)
        assert record.scores["strict"] == record.reward and record.status == "completed" and record.has_box
        for turn, sample in zip(record.turns, turns, strict=True):
            assert turn.prompt_tokens + turn.response_tokens == len(sample.tokens)
    lines = (tmp_path / "trajectories" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and '"rollout_id":12' in lines[0]


def test_records_are_written_every_n_rollouts_only_and_metrics_every_rollout(tokenizer, rows, tmp_path):
    env = {"MEM_TRAJECTORY_EVERY": "2"}
    _step(tokenizer, rows[:1], rollout_id=3, env=env, save=str(tmp_path))
    assert not list((tmp_path / "trajectories").glob("rollout_*.jsonl")), "rollout 3 is not a multiple of 2"
    assert len((tmp_path / "trajectories" / "metrics.jsonl").read_text().splitlines()) == 1


def test_without_save_nothing_is_written_and_the_metrics_still_go_to_the_logger(tokenizer, rows, tmp_path):
    _, result = _step(tokenizer, rows[:1])
    assert _ours("rollout/step")["rollout/mem_agent/trajectories"] == N and result.data["tokens"]


@pytest.mark.parametrize("backend", ["vime", "slime"])
def test_evaluation_logs_the_same_metrics_per_eval_set_at_the_eval_step(tokenizer, rows, backend):
    """Evaluation hands the host one row per question; its turns travel in `turn_facts`."""
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows)) as engine:
        args = bench_args(engine.url, backend=backend, n=N, n_samples_per_eval_prompt=2)
        data = run_async(lambda: eval_rollout_single_dataset(RolloutState.for_args(args), "hqa", rows))
    log = log_eval_rollout_data(7, args, data, None)
    assert log is not None and log["eval/step"] == 7 and "eval/hqa" in log, "the host's own eval metrics stay"
    ours = _ours("eval/step")
    assert ours["eval/step"] == 7 and ours["eval/hqa/mem_agent/trajectories"] == 2 * len(rows)
    assert ours["eval/hqa/mem_agent/accuracy/strict"] == pytest.approx(sum(data["hqa"]["rewards"]) / (2 * len(rows)))
    turns = [len(s.metadata["mem_agent"]["turn_facts"]) for s in data["hqa"]["samples"]]
    assert ours["eval/hqa/mem_agent/turns/mean"] == pytest.approx(sum(turns) / len(turns)) and min(turns) >= 2
    assert "eval/hqa/mem_agent/memory_tokens/p50" in ours and "eval/hqa/mem_agent/zero_contrast/groups" not in ours


def test_a_second_trainer_on_the_same_save_path_records_nothing_and_says_who_holds_it(
    tokenizer, rows, tmp_path, caplog
):
    """One writer per run folder: SAVE/trajectories/ is held by the first trainer's process for its
    life, so a second one (here: another holder of the lock) writes neither records nor metrics lines
    there, logs an error naming the holder, and still trains and logs to the host."""
    folder = tmp_path / "trajectories"
    folder.mkdir()
    with lock_run_folder(folder, command="the first trainer"):
        _, result = _step(tokenizer, rows[:1], save=str(tmp_path))
    assert result.data["tokens"] and _ours("rollout/step")["rollout/mem_agent/trajectories"] == N
    assert sorted(path.name for path in folder.iterdir()) == [".run.lock"]
    assert "in use by another run" in caplog.text and "the first trainer" in caplog.text


def test_a_disk_error_is_logged_and_training_goes_on(tokenizer, rows, tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    _, result = _step(tokenizer, rows[:1], save=str(blocker))
    assert result.data["tokens"] and str(blocker) in caplog.text
    assert _ours("rollout/step")["rollout/mem_agent/trajectories"] == N


def test_in_rememr1_mode_state_rewards_are_logged_and_records_keep_the_parsed_memory(tokenizer, rows, tmp_path):
    """ReMemR1 memory turns carry state rewards (logged as their mean) and their memory's own text,
    which the records keep instead of the raw response."""
    _, result = _step(tokenizer, rows[:1], env={"MEM_MODE": "rememr1"}, save=str(tmp_path))
    ours = _ours("rollout/step")
    states = [
        s.metadata["mem_agent"]["state_reward"] for s in result.samples if "state_reward" in s.metadata["mem_agent"]
    ]
    assert states and ours["rollout/mem_agent/rememr1/state_reward_mean"] == pytest.approx(sum(states) / len(states))
    assert ours["rollout/mem_agent/rememr1/recall_rate"] == 0.0, "the scripted engine never asks to recall"
    records = list(read_records(tmp_path / "trajectories" / "rollout_000000.jsonl"))
    assert records and all(record.mode == "rememr1" for record in records)
    texts = {
        s.metadata["mem_agent"]["memory_text"] for s in result.samples if s.metadata["mem_agent"]["turn"] == "memory"
    }
    assert {t.text for r in records for t in r.turns if t.kind == "memory"} <= texts
    assert all(t.state_reward is not None for r in records for t in r.turns if t.kind == "memory")


@pytest.mark.server
def test_a_real_step_records_each_memory_as_the_model_wrote_it(stack, synthetic_rows, tokenizer, tmp_path):
    """Against the real model: a record's memory text is the decoded ids the server sent back, its
    token counts are the row's, and its advantage is the one the convert trained with."""
    recorded = real_step(stack.router_url, stack.model_path, trainer_rows(synthetic_rows, 2), save=str(tmp_path))
    result = recorded.result
    records = list(read_records(tmp_path / "trajectories" / "rollout_000000.jsonl"))
    assert len(records) == 2 * SAMPLES_PER_PROMPT, "fewer trajectories than MEM_TRAJECTORY_COUNT: all of them"
    rows_of = defaultdict(list)
    for position, sample in enumerate(result.samples):
        rows_of[str(sample.rollout_id)].append((position, sample))
    for record in records:
        for turn, (position, sample) in zip(record.turns, rows_of[record.item_id], strict=True):
            response = sample.tokens[-sample.response_length :]
            assert turn.response_tokens == len(response) and turn.prompt_tokens == len(sample.tokens) - len(response)
            assert turn.text == tokenizer.decode(response, skip_special_tokens=True)
            assert turn.advantage == result.data["rewards"][position]
            assert turn.cut == (sample.metadata["mem_agent"]["finish_reason"] == "length")
    ours = _ours("rollout/step")
    assert ours["rollout/mem_agent/trajectories"] == 2 * SAMPLES_PER_PROMPT
    assert 0 <= ours["rollout/mem_agent/memory/cut_share"] <= 1 and ours["rollout/mem_agent/memory_tokens/p95"] > 0


@pytest.mark.parametrize(("host", "protocol"), [("slime", "sglang"), ("vime", "vllm")])
def test_the_preflight_runs_the_log_hook_through_the_checkouts_own_log_rollout_data(
    tokenizer, tmp_path, host, protocol
):
    """check_host passes the launch script's hooks, the log hook included: the checkout's
    `log_rollout_data` calls it, and with --save it writes the metrics line and the records."""
    root = write_fake_trainer(tmp_path / host, host)
    save = tmp_path / "save"
    env = {**os.environ, **SMALL_AGENT}
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT / "examples"), str(PROJECT / "tests"), env.get("PYTHONPATH", "")])
    with scripted_engine(tokenizer, lambda prompt_text, seed: "Fromereham") as engine:
        argv = [
            "--trainer-root",
            str(root),
            "--url",
            engine.url,
            "--protocol",
            protocol,
            "--host-flag",
            f"save={json.dumps(str(save))}",
        ]
        result = subprocess.run(
            [sys.executable, "-m", "mem_agent.check_host", *argv], env=env, capture_output=True, text=True, timeout=300
        )
    assert result.returncode == 0 and result.stdout.startswith("PASS"), result.stdout + result.stderr
    line = json.loads((save / "trajectories" / "metrics.jsonl").read_text())
    assert line["kind"] == "rollout" and line["trajectories"] == 4 and line["turns/mean"] >= 2
    assert len(list(read_records(save / "trajectories" / "rollout_000000.jsonl"))) == 4


def test_with_thinking_the_records_keep_the_memory_not_the_thinking(tokenizer, rows, tmp_path):
    """A memory that is not the response verbatim (here: the part after </think>) is decoded in
    generate and carried in the row; the records keep it, not the raw response."""
    with (
        small_agent(MEM_THINKING="1"),
        scripted_engine(tokenizer, lambda text, seed: "<think>plan</think>kept") as engine,
    ):
        args = bench_args(engine.url, n=N, rollout_batch_size=1, global_batch_size=N, save=str(tmp_path))
        result = run_step(args, DataSource(rows[:1], N), closers=(close_clients,))
    memory_rows = [s for s in result.samples if s.metadata["mem_agent"]["turn"] == "memory"]
    assert memory_rows and all(s.metadata["mem_agent"]["memory_text"] == "kept}" for s in memory_rows)
    assert all("plan" in s.response for s in memory_rows), "the row's response still holds the thinking"
    records = list(read_records(tmp_path / "trajectories" / "rollout_000000.jsonl"))
    assert {t.text for r in records for t in r.turns if t.kind == "memory"} == {"kept}"}
