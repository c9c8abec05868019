"""One writer per run folder: a second run on a held folder is refused at once, and a dead holder
never leaves a stale lock (the kernel releases an flock with its holder's last descriptor).

The evaluators here are real processes against real HTTP servers (the scripted engine); the
lock is the real flock on the real folder.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mem_agent.common.run_folder import LOCK_FD_ENV, RunFolderBusy, hold_descriptor, lock_path, lock_run_folder
from mem_agent.evaluation.results import read_results
from support.folder_holder import holder_code, start_holder
from support.scripted_engine import scripted_engine

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm", "--no-plot"]
QUESTIONS = 3


def test_a_second_holder_is_refused_in_one_line_naming_the_first(tmp_path):
    holder = start_holder(tmp_path)
    try:
        with pytest.raises(RunFolderBusy) as refused, lock_run_folder(tmp_path, command="second", instead="go away"):
            pytest.fail("the lock was granted twice")
        message = str(refused.value)
        assert "\n" not in message and f"pid {holder.pid} (holder), started 20" in message
        assert f"stop it (kill {holder.pid}), or go away" in message
    finally:
        holder.kill()
        holder.wait()


def test_a_holder_killed_with_sigkill_leaves_no_stale_lock(tmp_path):
    """The file stays, the lock does not: the next run takes it at once."""
    holder = start_holder(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert lock_path(tmp_path).exists()
    with lock_run_folder(tmp_path, command="next"):
        assert f'"pid": {os.getpid()}' in lock_path(tmp_path).read_text()
    assert lock_path(tmp_path).read_text() == "", "a released lock names no holder"


def test_two_folders_are_held_side_by_side(tmp_path):
    with lock_run_folder(tmp_path / "a", command="a"), lock_run_folder(tmp_path / "b", command="b"):
        assert lock_path(tmp_path / "a").exists() and lock_path(tmp_path / "b").exists()


def test_a_child_runs_under_the_lock_its_parent_passed_down_and_leaves_it_held(tmp_path, monkeypatch):
    """A run script holds the lock through a descriptor its children inherit (_MEM_RUN_LOCK_FD):
    the child is not refused, and its end does not release the parent's lock."""
    tmp_path.mkdir(exist_ok=True)
    descriptor = os.open(lock_path(tmp_path), os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        hold_descriptor(descriptor, tmp_path, pid=4242, command="run-eval.sh", instead="x")
        child = subprocess.run(
            [sys.executable, "-c", holder_code(tmp_path, seconds=0)],
            env={**os.environ, LOCK_FD_ENV: str(descriptor)},
            pass_fds=(descriptor,),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == 0 and child.stdout == "held\n", child.stderr
        with pytest.raises(RunFolderBusy, match=r"pid 4242 \(run-eval.sh\)"), lock_run_folder(tmp_path, command="y"):
            pass
    finally:
        os.close(descriptor)
    with lock_run_folder(tmp_path, command="after"):
        pass


def _evaluator(data_root: Path, out: Path, url: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "mem_agent.eval_ruler_hqa", "--data-root", str(data_root), "--lengths", "6"]
    argv += ["--output-dir", str(out), "--url", url, *FAST]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_evaluators_started_together_on_one_folder_one_runs_the_other_is_refused(
    make_eval_files, tokenizer, tmp_path
):
    """Each has its own server, which holds every request until released: the refused one must exit
    (2, one line naming the other's PID) while the other is still running, having sent nothing."""
    data_root = make_eval_files(6, questions=QUESTIONS)
    with (
        scripted_engine(tokenizer, lambda prompt, seed: "x", hold_from=0) as first_engine,
        scripted_engine(tokenizer, lambda prompt, seed: "x", hold_from=0) as second_engine,
    ):
        runs = {_evaluator(data_root, tmp_path, e.url): e for e in (first_engine, second_engine)}
        deadline = time.monotonic() + 120
        while all(run.poll() is None for run in runs) and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = next(run for run in runs if run.poll() is not None)
        winner = next(run for run in runs if run is not refused)
        assert winner.poll() is None, "the winner is still running when the other is refused"
        _, err = refused.communicate()
        assert refused.returncode == 2 and err.count("\n") == 1, err
        assert re.fullmatch(
            rf"error: {re.escape(str(tmp_path))} is in use by another run: pid {winner.pid} \(python -m"
            r" mem_agent.eval_ruler_hqa\), started \S+; wait for it to end, stop it \(kill \d+\), or choose"
            r" another --output-dir\n",
            err,
        )
        assert runs[refused].requests == [], "refused before sending a request"
        first_engine.release()
        second_engine.release()
        _, err = winner.communicate(timeout=300)
    assert winner.returncode == 0, err[-2000:]
    ids = [record["id"] for record in read_results(tmp_path / "results_6.jsonl")]
    assert sorted(ids) == [str(i) for i in range(QUESTIONS)], "one line per item"


def test_a_folder_held_for_the_life_of_a_process_is_refused_to_others_until_it_exits(tmp_path):
    """For writers with no block to hold the lock in (a trainer hook): holding twice is a no-op."""
    code = (
        "import time; from mem_agent.common.run_folder import hold_run_folder\n"
        f"hold_run_folder({str(tmp_path)!r}, command='hook'); hold_run_folder({str(tmp_path)!r}, command='hook')\n"
        "print('held', flush=True); time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(RunFolderBusy, match=rf"pid {holder.pid} \(hook\)"), lock_run_folder(tmp_path, command="x"):
            pass
    finally:
        holder.kill()
        holder.wait()
    with lock_run_folder(tmp_path, command="after"):
        pass
