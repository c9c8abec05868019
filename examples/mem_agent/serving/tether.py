"""A command tied to the process that started it: when that process is gone, the command's whole
process group is stopped.

    python -m mem_agent.serving.tether --parent PID [--grace S] -- COMMAND ...

Run by run-eval.sh and `processes.start_process`, not by hand. The exit status is the command's.

A run script can trap SIGTERM and SIGINT and stop what it started, but nothing can catch SIGKILL
(a scheduler's time limit, `kill -9`): the evaluator and the servers it started would run on
without it, holding GPUs and the run folder. So what a script or the local stack starts runs
under a tether: the tether leads its own process group, runs the command as its child in that
group, and checks every POLL_S seconds that the parent it was given still exists. When the parent
is gone it stops the group: SIGTERM to every other process of it, `grace` seconds, then SIGKILL.
Its own end follows the child's, with the child's exit status.

Why a poll of getppid() and not PR_SET_PDEATHSIG on the command: the death signal fires when the
*thread* that forked the command exits, which in a threaded parent (a test, a thread pool) is not
the parent's end, and it reaches the command only, not the engine processes it forks. The poll
sees the process go (its children are re-parented) within POLL_S.

A signal sent to the tether itself (the group stop by the script, or by ManagedProcess.stop, both
of which escalate to SIGKILL themselves) is passed on to the group and the tether waits on: the
sender decides when to escalate, so a server keeps its full grace period. If the tether is killed,
its child gets SIGKILL from the kernel (PR_SET_PDEATHSIG, set in the child before its exec, where
the forking thread is the tether's only one).
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
from mem_agent.serving.processes import running_in_group

POLL_S = 0.1  # how often the parent and the child are looked at: the delay before a stop begins
KILL_WAIT_S = 10.0  # how long SIGKILLed processes may take to be gone before the tether gives up on them
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run_tethered(argv: Sequence[str], parent: int, grace_s: float) -> int:
    """Run `argv` tied to `parent`; return the status the tether should exit with (the child's,
    128 + N for a child ended by signal N)."""
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)  # stopping "our group" must never reach the caller's group
    received: list[int] = []
    for stop in _STOP_SIGNALS:
        signal.signal(stop, lambda signum, frame: received.append(signum))
    if os.getppid() != parent:
        print(f"tether: parent {parent} is gone before {argv[0]} started: not starting it", file=sys.stderr)
        return 1
    child = subprocess.Popen(list(argv), close_fds=False, preexec_fn=_die_with_tether(os.getpid()))
    passed_on = 0
    while child.poll() is None:
        time.sleep(POLL_S)
        for stop in received[passed_on:]:
            _signal_others(stop)
        passed_on = len(received)
        if os.getppid() != parent:
            print(
                f"tether: parent {parent} is gone: stopping {argv[0]} (pid {child.pid}) and its group", file=sys.stderr
            )
            stop_own_group(grace_s)
            child.wait()
            break
    code = child.returncode
    return 128 - code if code < 0 else code


def stop_own_group(grace_s: float) -> None:
    """SIGTERM every other process of the tether's group, SIGKILL what still runs after `grace_s`."""
    _signal_others(signal.SIGTERM)
    if _wait_others_gone(grace_s):
        return
    _signal_others(signal.SIGKILL)
    if not _wait_others_gone(KILL_WAIT_S):
        print(f"tether: processes {_others()} outlived SIGKILL by {KILL_WAIT_S:.0f} s", file=sys.stderr)


def _others() -> list[int]:
    return [pid for pid in running_in_group(os.getpgrp()) if pid != os.getpid()]


def _signal_others(number: int) -> None:
    for pid in _others():
        with contextlib.suppress(ProcessLookupError):  # exited since the look
            os.kill(pid, number)


def _wait_others_gone(timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _others():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


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
