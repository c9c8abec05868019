"""A tethered command stops when the process that started it is gone, however that process ended:
SIGKILL cannot be trapped, so the tether (its session's leader) notices the parent's end by itself.

Real processes, real signals; the figures (seconds from the parent's SIGKILL until nothing of the
command runs) are printed in the run's measured figures.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from mem_agent.serving.tether import POLL_S
from support.proc_state import still_running

# A command that forks a child; both ignore SIGTERM (like a stuck engine process) and write their PIDs.
_STUBBORN = """
import os, pathlib, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
path = pathlib.Path(sys.argv[1])
path.with_suffix(".partial").write_text(f"{os.getpid()} {child.pid}")
path.with_suffix(".partial").replace(path)
time.sleep(600)
"""


def _wait_for(path: Path, timeout_s: float = 60.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return [int(pid) for pid in path.read_text().split()]


def _seconds_until_gone(pids: list[int], timeout_s: float) -> float:
    started = time.monotonic()
    while any(still_running(pid) for pid in pids):
        assert time.monotonic() - started < timeout_s, f"still running: {[p for p in pids if still_running(p)]}"
        time.sleep(0.02)
    return time.monotonic() - started


def test_a_parent_killed_with_sigkill_takes_the_whole_group_with_it(tmp_path, measured):
    """The command and its child ignore SIGTERM: they get SIGKILL after the grace, and nothing of the
    group runs within grace + a poll (+ scheduling slack) of the parent's death."""
    script = tmp_path / "stubborn.py"
    script.write_text(_STUBBORN)
    pids_file = tmp_path / "pids"
    python = shlex.quote(sys.executable)
    line = f'{python} -m mem_agent.serving.tether --parent "$$" --grace 1 -- {python} {script} {pids_file} & wait'
    parent = subprocess.Popen(["bash", "-c", line], start_new_session=True)
    command_pid, child_pid = _wait_for(pids_file)
    try:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        seconds = _seconds_until_gone([command_pid, child_pid], timeout_s=30)
    finally:  # whatever a failing test left
        for pid in (command_pid, child_pid):
            if still_running(pid):
                os.kill(pid, signal.SIGKILL)
    measured(f"tether: parent SIGKILLed, SIGTERM-deaf command and child gone after {seconds:.2f} s (grace 1 s)")
    assert 1.0 <= seconds < 1.0 + POLL_S + 5, "SIGKILL after the grace, not before"


def test_a_server_started_by_a_process_that_is_killed_stops_with_it(tmp_path, measured):
    """start_process ties every server to its starter: a local stack killed with SIGKILL leaves none."""
    pid_file = tmp_path / "server.pid"
    starter_code = (
        "import sys, time; from pathlib import Path; from mem_agent.serving.processes import start_process\n"
        # written whole (temp file, then rename): the test reads the PID as soon as the file exists
        'server = \'import os, pathlib, time; p = pathlib.Path(%r); t = p.with_suffix(".partial"); '
        "t.write_text(str(os.getpid())); t.replace(p); time.sleep(600)'\n"
        f"argv = [sys.executable, '-c', server % {str(pid_file)!r}]\n"
        f"start_process('server', argv, Path({str(tmp_path)!r}) / 'log')\n"
        "time.sleep(600)\n"
    )
    starter = subprocess.Popen([sys.executable, "-c", starter_code])
    try:
        (server_pid,) = _wait_for(pid_file)
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait()
        seconds = _seconds_until_gone([server_pid], timeout_s=30)
    finally:
        if pid_file.exists() and still_running(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    measured(f"tether: starter SIGKILLed, its server gone after {seconds:.2f} s")
    assert seconds < POLL_S + 5


def test_the_tether_exits_with_its_commands_status_and_refuses_an_orphan_start(tmp_path):
    tether = [sys.executable, "-m", "mem_agent.serving.tether", "--parent", str(os.getpid()), "--"]
    assert subprocess.run([*tether, sys.executable, "-c", "raise SystemExit(3)"], timeout=60).returncode == 3
    gone = subprocess.run([*tether[:3], "--parent", "1", "--", "true"], capture_output=True, text=True)
    assert gone.returncode == 1 and len(gone.stderr.splitlines()) == 1 and "parent 1 " in gone.stderr
    usage = subprocess.run([*tether[:-1]], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and usage.stderr == "error: no command: give it after --\n"
