"""The Ray head a training launch starts, and nothing else of Ray, stopped when the launch ends.

`ray stop` kills every Ray process of the node, other users' clusters included, so it is never
used. Instead `ray start --head --block` leads a session of its own: its GCS, raylet, dashboard
and workers all stay in that session (the raylet gives each worker a process group of its own, so
a process group would miss them; a job's driver gets a session of its own from Ray and is ended
by Ray when the head goes). SIGTERM to the leader's process group makes Ray drain and stop
exactly this head; whatever of the session still runs after the grace period gets SIGKILL.

The head is started by a keeper (`python -m mem_agent.launch ray-head`), a small process in a
session of its own that watches the launcher the way serving/tether.py watches its parent: when
the launcher is gone, even killed by SIGKILL, which nothing can trap, the keeper stops the head's
session. A stop asked for by the launcher (SIGTERM to the keeper) does the same. If the keeper
itself is killed, the head gets SIGTERM from the kernel (PR_SET_PDEATHSIG). KEEP_RAY=1 starts the
head without a keeper: it outlives the launch by design.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.console import command_parser
from mem_agent.common.guarded_files import check_output, open_append_log
from mem_agent.common.numbers import integer, number
from mem_agent.common.usage import UsageError, split_command
from mem_agent.serving.processes import living_processes

POLL_S = 0.1  # how often the keeper looks at its parent and the head
KILL_WAIT_S = 10.0  # how long SIGKILLed processes may take to be gone
_PR_SET_PDEATHSIG = 1


def session_processes(session: int) -> list[int]:
    """PIDs of the session's processes that have not exited (a zombie has: only its status is left)."""
    return [pid for pid, _group, sid in living_processes() if sid == session]


def stop_session(leader: int, grace_s: float) -> bool:
    """SIGTERM the leader's process group, SIGKILL what of its session still runs after `grace_s`;
    True once nothing of the session runs."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGTERM)
    if _wait_gone(leader, grace_s):
        return True
    for pid in session_processes(leader):
        print(f"ray-head: pid {pid} still runs {grace_s:.0f} s after SIGTERM: SIGKILL", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if _wait_gone(leader, KILL_WAIT_S):
        return True
    print(f"ray-head: processes {session_processes(leader)} outlived SIGKILL", file=sys.stderr)
    return False


def _wait_gone(session: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while session_processes(session):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def signal_on_parent_death(number: int) -> Callable[[], None] | None:
    """What a child runs before its exec: signal `number` when the thread that started it ends
    (Linux), and no start at all when its parent is already gone. Looked up before the fork."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return set_death_signal


def keep(argv: Sequence[str], *, parent: int, grace_s: float, log_path: Path, cwd: Path) -> int:
    """The keeper: start the head, print its pid, stop its session when asked or when `parent` is gone."""
    asked: list[int] = []
    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(stop, lambda signum, frame: asked.append(signum))
    if os.getppid() != parent:
        return 1
    try:
        head = _in_own_session(argv, cwd, log_path, signal_on_parent_death(signal.SIGTERM))
    except OSError as error:
        print(f"error: cannot start {argv[0]}: {error}", file=sys.stderr)
        return 1
    except UsageError as error:  # its log is a link, a FIFO, a hard link
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(head.pid, flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the launcher reads one line only
    while head.poll() is None and not asked and os.getppid() == parent:
        time.sleep(POLL_S)
    stopped = stop_session(head.pid, grace_s)  # also after the head ended on its own: its children go too
    code = head.wait()
    return code if stopped else 1


class HeadStartError(RuntimeError):
    """The keeper could not start the head (its own message is on stderr)."""


@dataclass
class RayHead:
    """A head started by the launcher: its session, and the keeper that stops it (None with KEEP_RAY=1)."""

    session: int
    process: subprocess.Popen[bytes]  # the keeper, or the head itself when it is kept
    log_path: Path
    grace_s: float
    kept: bool

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.kept:
            print(
                f"leaving the Ray head running (KEEP_RAY=1); stop it with: kill -TERM -- -{self.session}",
                file=sys.stderr,
            )
            return
        print(f"stopping the Ray head this launch started (session {self.session})", file=sys.stderr)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=self.grace_s + KILL_WAIT_S + 5)
        except subprocess.TimeoutExpired:
            print(f"warning: the Ray head's keeper (pid {self.process.pid}) has not finished its stop", file=sys.stderr)


def _in_own_session(
    argv: Sequence[str], cwd: Path, log_path: Path, preexec: Callable[[], None] | None = None
) -> subprocess.Popen[bytes]:
    """`argv` started in a session of its own, its output appended to `log_path`."""
    with open_append_log(log_path) as log:
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,
        )


def start_head(argv: Sequence[str], *, log_path: Path, cwd: Path, grace_s: float, kept: bool) -> RayHead:
    """Start `argv` (`ray start --head ... --block`) from `cwd` (the workers of a job without a working_dir
    run in the folder their raylet was started from, and the trainers' scripts rely on that)."""
    check_output(log_path)  # refused here, in one line, rather than by the keeper
    if kept:
        head = _in_own_session(argv, cwd, log_path)
        return RayHead(head.pid, head, log_path, grace_s, kept=True)
    keeper_argv = [sys.executable, "-m", "mem_agent.launch", "ray-head", "--parent", str(os.getpid())]
    keeper_argv += ["--grace", str(grace_s), "--log", str(log_path), "--cwd", str(cwd), "--", *argv]
    keeper = subprocess.Popen(keeper_argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True)
    assert keeper.stdout is not None
    line = keeper.stdout.readline().strip()
    keeper.stdout.close()
    if not line.isdigit():
        keeper.wait()
        raise HeadStartError(f"the Ray head did not start (see {log_path})")
    return RayHead(int(line), keeper, log_path, grace_s, kept=False)


def main(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """`python -m mem_agent.launch ray-head --parent PID --grace S --log FILE --cwd DIR -- ray start ...`"""
    options, command = split_command(list(argv))
    parser = command_parser("mem_agent.launch.ray_head", prog="python -m mem_agent.launch ray-head")
    parser.add_argument("--parent", type=integer(1), required=True, help="the launcher's PID: its end stops the head")
    parser.add_argument("--grace", type=number(0), required=True, help="seconds from SIGTERM to SIGKILL")
    parser.add_argument("--log", type=Path, required=True, help="the head's log file")
    parser.add_argument("--cwd", type=Path, required=True, help="the folder the head is started from")
    args = parser.parse_args(options)
    if not command:
        print("error: no command: give it after --", file=sys.stderr)
        return 2
    return keep(command, parent=args.parent, grace_s=args.grace, log_path=args.log, cwd=args.cwd)
