"""Child servers that are started, watched and stopped by their own PID.

Every server we start gets its own process group and a log file (never a pipe nobody drains,
which stalls a chatty server once the pipe buffer fills). Stopping signals that group only:
vLLM forks an engine process, and stopping the API server's PID alone would orphan it, while a
broad `pkill` would hit other users' jobs on a shared node. A stop returns only once no process
of the group runs: a signal is delivered when its target is next scheduled, which on a loaded
machine can be well after `kill` returns, and an orphaned child is reaped by init, not by us.
Each group is led by a tether to this process (serving/tether.py), so that our own death, even
by SIGKILL, stops it too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import open_append_log, read_regular_text
from mem_agent.common.usage import UsageError

LOOPBACK = "127.0.0.1"
STOP_GRACE_S = 15.0  # SIGTERM to SIGKILL, for a stop by us and for one by a tether whose parent we were


class ServerStartError(RuntimeError):
    """A server did not become healthy; the message carries the tail of its log."""


class ProcessStopError(RuntimeError):
    """Processes of a group still ran after SIGKILL (stuck in the kernel, say); the message lists them."""


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path | None, max_lines: int = 40) -> str:
    if path is None:
        return "(no log: its output went to the console)"
    try:
        lines = read_regular_text(path, errors="replace").splitlines()
    except (OSError, UsageError):
        return "(no log)"
    return "\n".join(lines[-max_lines:])


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path | None  # None: its output goes where its starter's goes
    popen: subprocess.Popen[bytes] = field(repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace_s: float = STOP_GRACE_S, kill_wait_s: float = 30.0) -> None:
        """SIGTERM the process group, SIGKILL it if anything still runs after `grace_s`, and return
        once nothing of it runs; ProcessStopError if something outlives SIGKILL by `kill_wait_s`."""
        _signal_group(self.pid, signal.SIGTERM)
        if _wait_until(self._group_gone, grace_s):
            return
        # The leader, or a forked engine it left behind, ignored SIGTERM or was too slow.
        _signal_group(self.pid, signal.SIGKILL)
        if not _wait_until(self._group_gone, kill_wait_s):
            raise ProcessStopError(
                f"{self.name}: processes {running_in_group(self.pid)} of its group still run "
                f"{kill_wait_s:.0f} s after SIGKILL"
            )

    def _group_gone(self) -> bool:
        """The leader is reaped (by us: it is our child) and no other process of its group runs."""
        return self.popen.poll() is not None and not running_in_group(self.pid)


def running_in_group(pgid: int) -> list[int]:
    """PIDs of the group's processes that have not exited (a zombie has: only its status is left).

    Read from /proc, since `killpg(pgid, 0)` also finds zombies, which an orphan stays until init
    reaps it. Without /proc (not Linux), any member found by `killpg` counts as running.
    """
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    return [pid for pid, group, _session in living_processes() if group == pgid]


def living_processes() -> Iterator[tuple[int, int, int]]:
    """(PID, process group, session) of every process that has not exited, from /proc (a zombie has
    exited: only its status is left)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited while we looked
            continue
        state, _ppid, group, session = stat[stat.rindex(")") + 2 :].split()[:4]  # the name may hold ") "
        if state not in ("Z", "X"):
            yield int(entry.name), int(group), int(session)


def _wait_until(done: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval_s)
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def tether_command(grace_s: float = STOP_GRACE_S) -> list[str]:
    """The tether (serving/tether.py) of a command started here: `tether_command() + ["--", *argv]`."""
    return [sys.executable, "-m", "mem_agent.serving.tether", "--parent", str(os.getpid()), "--grace", str(grace_s)]


def start_process(
    name: str,
    argv: Sequence[str],
    log_path: Path | None,
    env: Mapping[str, str] | None = None,
    *,
    grace_s: float = STOP_GRACE_S,
    pass_fds: Sequence[int] = (),
    log_root: Path | None = None,
) -> ManagedProcess:
    """Start `argv` in a new process group under a tether to this process (serving/tether.py): if we
    die, even by SIGKILL, the group is stopped within the tether's poll plus `grace_s`. Its output
    is appended to `log_path` (common/guarded_files.py: never through a link at it or at a folder
    below `log_root`, the run folder), or with None goes where ours goes (a command run in the
    foreground); `pass_fds` are descriptors it keeps (a run folder's lock)."""
    options: dict[str, Any] = {"stdin": subprocess.DEVNULL, "env": {**os.environ, **(env or {})}}
    options |= {"start_new_session": True, "pass_fds": tuple(pass_fds)}
    command = [*tether_command(grace_s), "--", *argv]
    if log_path is None:
        popen = subprocess.Popen(command, **options)
    else:
        with open_append_log(log_path, log_root) as log:
            popen = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **options)
    return ManagedProcess(name=name, argv=list(argv), log_path=log_path, popen=popen)


def wait_healthy(process: ManagedProcess, url: str, timeout_s: float, interval_s: float = 0.5) -> float:
    """Poll `url` until it answers 200; return the seconds it took.

    Fails fast when the process exits, and on timeout; both errors include the log tail, which
    is where the real cause (a bad flag, an out-of-memory, a port in use) is written.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    while True:
        if not process.alive():
            raise ServerStartError(
                f"{process.name} exited with status {process.popen.returncode} before it was healthy "
                f"(log {process.log_path}):\n{log_tail(process.log_path)}"
            )
        with contextlib.suppress(urllib.error.URLError, OSError), opener.open(url, timeout=5) as response:
            if response.status == 200:
                return time.monotonic() - start
        if time.monotonic() > deadline:
            raise ServerStartError(
                f"{process.name} was not healthy at {url} after {timeout_s:.0f} s "
                f"(log {process.log_path}):\n{log_tail(process.log_path)}"
            )
        time.sleep(interval_s)
