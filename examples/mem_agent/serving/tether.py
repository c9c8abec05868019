"""A command tied to the process that started it: when that process is gone, the command's whole
session is stopped.

    python -m mem_agent.serving.tether --parent PID [--grace S] -- COMMAND ...

Run by `processes.start_process`, not by hand. The exit status is the command's.

A launcher can trap SIGTERM and SIGINT and stop what it started, but nothing can catch SIGKILL
(a scheduler's time limit, `kill -9`): the servers, the evaluator or the Ray head it started would
run on without it, holding GPUs and the run folder. So what a launch starts runs under a tether:
the tether leads a session of its own (start_process starts it in one), runs the command as its
child, and checks every POLL_S seconds that the parent it was given still exists. When the parent
is gone, or the command has ended, it stops the rest of its session with `processes.stop_all`:
SIGTERM, `grace` seconds, SIGKILL. A session, not a group: vLLM's engine stays in its server's
group, but Ray's raylet gives each worker a group of its own, in the head's session. Its own end
follows the child's, with the child's exit status.

Why a poll of getppid() and not PR_SET_PDEATHSIG on the command: the death signal fires when the
*thread* that forked the command exits, which in a threaded parent (a test, a thread pool) is not
the parent's end, and it reaches the command only, not the engine processes it forks. The poll
sees the process go (its children are re-parented) within POLL_S.

A stop by the launcher (`ManagedProcess.stop`, `stop_all` of the session) signals every process of
the session, the tether included: the tether takes the signal without ending, so the command keeps
its full grace period, and waits on. If the tether is killed, its child gets SIGKILL from the
kernel (PR_SET_PDEATHSIG, set in the child before its exec, where the forking thread is the
tether's only one).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from mem_agent.common.console import command_parser
from mem_agent.common.numbers import integer, number
from mem_agent.common.usage import split_command
from mem_agent.serving.processes import stop_all

POLL_S = 0.1  # how often the parent and the child are looked at: the delay before a stop begins
_PR_SET_PDEATHSIG = 1


def run_tethered(argv: Sequence[str], parent: int, grace_s: float) -> int:
    """Run `argv` tied to `parent`; return the status the tether should exit with (the child's,
    128 + N for a child ended by signal N)."""
    with contextlib.suppress(PermissionError):  # it leads its session (or its group) already
        os.setsid()  # stopping "our session" must never reach the caller's
    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(stop, lambda signum, frame: None)  # not SIG_IGN: the command would inherit it
    if os.getppid() != parent:
        print(f"tether: parent {parent} is gone before {argv[0]} started: not starting it", file=sys.stderr)
        return 1
    child = subprocess.Popen(list(argv), close_fds=False, preexec_fn=_die_with_tether(os.getpid()))
    while child.poll() is None and os.getppid() == parent:
        time.sleep(POLL_S)
    if child.returncode is None:
        print(f"tether: parent {parent} is gone: stopping {argv[0]} (pid {child.pid}) and its session", file=sys.stderr)
    left = stop_all([os.getpid()], grace_s)  # also after the command's own end: what it left goes too
    if left:
        print(f"tether: processes {left} outlived SIGKILL", file=sys.stderr)
    code = child.wait()
    return 128 - code if code < 0 else code


def _die_with_tether(tether: int):
    """What the child runs before its exec: SIGKILL when the tether dies (Linux), and no start at all
    when it is already gone. The libc function is looked up here, before the fork."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != tether:
            os._exit(1)

    return set_death_signal


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mem_agent.serving.tether",
        description="Run COMMAND in its own process group, stopped with it when process --parent is gone.",
    )
    parser.add_argument("--parent", type=integer(1), required=True, help="PID whose end stops the command (required)")
    parser.add_argument(
        "--grace",
        type=number(0),
        default=30.0,
        help="seconds between SIGTERM and SIGKILL once the parent is gone (default: %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv, command = split_command(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if not command:
        print("error: no command: give it after --", file=sys.stderr)
        return 2
    return run_tethered(command, args.parent, args.grace)


if __name__ == "__main__":
    raise SystemExit(main())
