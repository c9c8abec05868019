"""Child servers that are started, watched and stopped by their own PID.

Every server we start gets its own process group and a log file (never a pipe nobody drains,
which stalls a chatty server once the pipe buffer fills). Stopping signals that group only:
vLLM forks an engine process, and stopping the API server's PID alone would orphan it, while a
broad `pkill` would hit other users' jobs on a shared node.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK = "127.0.0.1"


class ServerStartError(RuntimeError):
    """A server did not become healthy; the message carries the tail of its log."""


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, max_lines: int = 40) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-max_lines:])


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes] = field(repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after `grace_s`."""
        if self.popen.poll() is None:
            _signal_group(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=grace_s)
        # The leader may be gone while a forked engine still runs in the group.
        _signal_group(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def start_process(
    name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None
) -> ManagedProcess:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
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
