"""Child servers that are started, watched and stopped by their own PID.

Every server we start gets a session of its own and a log file (never a pipe nobody drains,
which stalls a chatty server once the pipe buffer fills). Stopping signals that session only:
vLLM forks an engine process and Ray's raylet gives each worker a process group of its own, so
stopping the server's PID, or even its group, would orphan them, while a broad `pkill` (or
`ray stop`) would hit other users' jobs on a shared node. A stop returns only once no process of
the session runs: a signal is delivered when its target is next scheduled, which on a loaded
machine can be well after `kill` returns, and an orphaned child is reaped by init, not by us.
Each session is led by a tether to this process (serving/tether.py), so that our own death, even
by SIGKILL, stops it too; the tether stops it with the same `stop_all`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import open_append_log, read_regular_text
from mem_agent.common.usage import UsageError

LOOPBACK = "127.0.0.1"
STOP_GRACE_S = 15.0  # SIGTERM to SIGKILL, for a stop by us and for one by a tether whose parent we were
KILL_WAIT_S = 30.0  # how long SIGKILLed processes may take to be gone before a stop names them


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

    def stop(self, grace_s: float = STOP_GRACE_S, kill_wait_s: float = KILL_WAIT_S) -> None:
        """`stop_all` of its session; ProcessStopError if something outlives SIGKILL by `kill_wait_s`."""
        left = stop_all([self.pid], grace_s, kill_wait_s)
        self.popen.poll()  # reaped: it is our child
        if left:
            raise ProcessStopError(f"{self.name}: processes {left} still run {kill_wait_s:.0f} s after SIGKILL")


def running_in(leaders: Collection[int], *, sessions: bool = True) -> list[int]:
    """PIDs, ours aside, of the processes still running in the process groups (and with `sessions`,
    the sessions) that `leaders` lead, or led: a group or a session outlives its leader."""
    own, leaders = os.getpid(), set(leaders)
    return [
        pid
        for pid, group, session in living_processes()
        if pid != own and (group in leaders or (sessions and session in leaders))
    ]


def stop_all(leaders: Collection[int], grace_s: float, kill_wait_s: float = KILL_WAIT_S) -> list[int]:
    """SIGTERM every process of the groups `leaders` lead, all at once (N servers that ignore it take
    one grace period, not N), SIGKILL what of their sessions still runs after `grace_s`; [] once
    none runs, else the PIDs that still run `kill_wait_s` after SIGKILL (stuck in the kernel, say).

    SIGTERM goes to the groups only: `ray start --head --block` stops its GCS, raylet and workers
    (other groups of its session) itself, and a SIGTERM to each of them at once left it stuck."""
    _signal_each(running_in(leaders, sessions=False), signal.SIGTERM)
    if _wait_until(lambda: not running_in(leaders), grace_s):
        return []
    print(f"processes {running_in(leaders)} still run {grace_s:g} s after SIGTERM: SIGKILL", file=sys.stderr)
    _signal_each(running_in(leaders), signal.SIGKILL)
    _wait_until(lambda: not running_in(leaders), kill_wait_s)
    return running_in(leaders)


def _signal_each(pids: list[int], number: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # exited since the look
            os.kill(pid, number)


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


def start_process(
    name: str,
    argv: Sequence[str],
    log_path: Path | None,
    env: Mapping[str, str] | None = None,
    *,
    grace_s: float = STOP_GRACE_S,
    pass_fds: Sequence[int] = (),
    log_root: Path | None = None,
    cwd: Path | None = None,
    tethered: bool = True,
) -> ManagedProcess:
    """Start `argv` from `cwd` in a new session under a tether to this process (serving/tether.py):
    if we die, even by SIGKILL, the session is stopped within the tether's poll plus `grace_s`
    (`tethered=False`: a session that outlives us by design). Its output is appended to `log_path`
    (common/guarded_files.py: never through a link at it or at a folder below `log_root`, the run
    folder), or with None goes where ours goes (a command run in the foreground); `pass_fds` are
    descriptors it keeps (a run folder's lock)."""
    options: dict[str, Any] = {"stdin": subprocess.DEVNULL, "env": {**os.environ, **(env or {})}, "cwd": cwd}
    options |= {"start_new_session": True, "pass_fds": tuple(pass_fds)}
    tether = [sys.executable, "-m", "mem_agent.serving.tether", "--parent", str(os.getpid()), "--grace", str(grace_s)]
    command = [*tether, "--", *argv] if tethered else list(argv)
    if log_path is None:
        popen = subprocess.Popen(command, **options)
    else:
        with open_append_log(log_path, log_root) as log:
            popen = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **options)
    return ManagedProcess(name=name, argv=list(argv), log_path=log_path, popen=popen)


def answers(url: str, timeout_s: float = 5.0) -> bool:
    """Whether a GET of `url` answers 200 (never through a proxy: a server we started, a head we submit to)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with contextlib.suppress(urllib.error.URLError, OSError), opener.open(url, timeout=timeout_s) as response:
        return response.status == 200
    return False


def wait_healthy(process: ManagedProcess, url: str, timeout_s: float, interval_s: float = 0.5) -> float:
    """Poll `url` until it answers 200; return the seconds it took.

    Fails fast when the process exits, and on timeout; both errors include the log tail, which
    is where the real cause (a bad flag, an out-of-memory, a port in use) is written.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    while True:
        if not process.alive():
            raise ServerStartError(
                f"{process.name} exited with status {process.popen.returncode} before it was healthy "
                f"(log {process.log_path}):\n{log_tail(process.log_path)}"
            )
        if answers(url):
            return time.monotonic() - start
        if time.monotonic() > deadline:
            raise ServerStartError(
                f"{process.name} was not healthy at {url} after {timeout_s:.0f} s "
                f"(log {process.log_path}):\n{log_tail(process.log_path)}"
            )
        time.sleep(interval_s)


def port_in_use(port: int) -> bool:
    """True when a socket of this node listens on `port` on any address. Binding the wildcard address
    fails then (asking 127.0.0.1 would miss servers that bind the node's own address); SO_REUSEADDR
    keeps connections that merely closed on the port (TIME_WAIT) from counting."""
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this node
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind((address, port))
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    return True
    return False


class Group:
    """The sessions one launch started, stopped together."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.started: list[ManagedProcess] = []

    def start(
        self,
        name: str,
        argv: Sequence[str],
        log: Path | None,
        pass_fds: Sequence[int] = (),
        *,
        log_root: Path | None = None,
        cwd: Path | None = None,
    ) -> ManagedProcess:
        process = start_process(name, argv, log, grace_s=self.grace_s, pass_fds=pass_fds, log_root=log_root, cwd=cwd)
        self.started.append(process)
        return process

    def run(self, name: str, argv: Sequence[str], pass_fds: Sequence[int] = ()) -> int:
        """A command in the foreground (its output is ours), in a tethered session; its exit status."""
        return self.start(name, argv, None, pass_fds).popen.wait()

    def stop(self) -> None:
        """`stop_all` of every session it started; says which processes outlived SIGKILL."""
        left = stop_all([process.pid for process in self.started], self.grace_s)
        for process in self.started:
            process.popen.poll()  # reaped: they are our children
        if left:
            print(f"warning: processes {left} outlived SIGKILL by {KILL_WAIT_S:.0f} s", flush=True)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stopped_together(group: Group) -> Iterator[Group]:
    """A launch's block, its sessions in `group` stopped at its end. The first stop signal ends the block
    as exit status 128 + its number (SystemExit); later ones are ignored, so that the stop it starts,
    which ends in SIGKILL by itself, is not cut short."""

    def exit_on(number: int, frame: object) -> None:
        for other in STOP_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        raise SystemExit(128 + number)

    previous = {number: signal.signal(number, exit_on) for number in STOP_SIGNALS}
    try:
        yield group
    finally:
        for number in STOP_SIGNALS:
            signal.signal(number, signal.SIG_IGN)
        group.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
