"""The checkout's train.py is imported and run in a child process, its import under a time bound.

Importing train.py runs the checkout's code, which can do anything at import time: call
`sys.exit(0)`, raise KeyboardInterrupt, block on a cluster or on input, call `os._exit`, or change
the process for good (signal handlers, sys.modules, and our own stand-ins: in-process Ray and
placeholder modules). So the import and the step run in a child process (multiprocessing,
"spawn": a fresh interpreter, no forked locks or threads), and this process only waits for its
messages:

- an exit or an interrupt raised while train.py is imported (or later in the step) is caught in
  the child and comes back as a FAIL at the line that raised it (failures.stage);
- a child that ends without a verdict (`os._exit`, a crash) is a FAIL naming its exit status;
- an import that has not finished after `import_timeout_s` (counted from the child's start) is
  a FAIL; the child's process group is killed. A progress line goes to stderr while it waits.

Why not a thread with a time bound: a thread that blocks cannot be stopped, `signal.signal` at
import time fails outside the main thread, an `os._exit` would end the preflight itself, and
the stand-ins would stay installed in this process. The child leads its own process group (what
train.py starts at import is killed with it, and a Ctrl-C in the terminal reaches this process,
which then stops the child, instead of the child reporting the user's interrupt as train.py's);
it ends itself when this process is gone. Its stdout is its stderr: stdout carries only the
preflight's verdict.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

from mem_agent.preflight.failures import CheckFailed, describe, shown_path
from mem_agent.preflight.step import StepReport, StepRequest, run_step

PROGRESS_S = 10.0  # at most this long between two progress lines
PARENT_POLL_S = 0.5
STOP_WAIT_S = 5.0
EXIT_GRACE_S = 2.0  # a child with a verdict sent: its time to exit before its group is killed


class Imported:
    """The child's message once train.py is imported."""


def _end_with_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="preflight-parent-watch", daemon=True).start()


def _child_main(connection: Connection, request: StepRequest, parent: int) -> None:
    """The child: import train.py and run the step; every outcome is one message (never a traceback)."""
    os.setpgid(0, 0)
    _end_with_parent(parent)
    os.dup2(2, 1)
    try:
        connection.send(run_step(request, lambda: connection.send(Imported())))
    except CheckFailed as failure:
        connection.send(failure)
    except BaseException as error:  # ours, not the checkout's: still one FAIL line, where it was raised
        found, detail = describe(error, request.root)
        connection.send(CheckFailed("preflight", found or "mem_agent.preflight", detail))
    finally:
        connection.close()


def _stop(process: multiprocessing.process.BaseProcess, grace_s: float) -> None:
    """The child's whole process group, whatever it is doing, once the child has had `grace_s` to
    end on its own (a child that sent its verdict exits normally, so its exit handlers run: a
    coverage run records it)."""
    process.join(grace_s)
    if process.pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    process.join(STOP_WAIT_S)


def _ended_without_verdict(process: multiprocessing.process.BaseProcess, train: str, imported: bool) -> CheckFailed:
    process.join(STOP_WAIT_S)
    stage = "step" if imported else "train"
    return CheckFailed(stage, train, f"the process running it ended with exit status {process.exitcode} and no verdict")


def _wait_for_verdict(
    process: multiprocessing.process.BaseProcess,
    reader: Connection,
    train: str,
    import_timeout_s: float,
    progress: Callable[[str], None],
) -> StepReport:
    started = time.monotonic()
    imported = False
    while True:
        elapsed = time.monotonic() - started
        if imported:
            wait = PROGRESS_S
        elif elapsed < import_timeout_s:
            wait = min(PROGRESS_S, import_timeout_s / 2, import_timeout_s - elapsed)
        else:
            detail = f"importing it did not finish within {import_timeout_s:g} s (--import-timeout): it blocks at "
            raise CheckFailed("train", train, detail + "import time (waiting for a cluster, a lock or input?)")
        if not reader.poll(wait):
            if imported or time.monotonic() - started < import_timeout_s:
                doing = "running the rollout step of" if imported else "importing"
                progress(f"preflight: still {doing} {train} after {time.monotonic() - started:.0f} s")
            continue
        try:
            message = reader.recv()
        except EOFError:
            raise _ended_without_verdict(process, train, imported) from None
        if isinstance(message, CheckFailed):
            raise message
        if not isinstance(message, Imported):
            return message
        imported = True


def run_in_child(request: StepRequest, import_timeout_s: float, progress: Callable[[str], None]) -> StepReport:
    """The step's report from a child process; a CheckFailed for every way it can go wrong."""
    context = multiprocessing.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(writer, request, os.getpid()), name="mem_agent-preflight")
    process.start()
    writer.close()  # the child holds the only writer: its end is an EOF here
    train = shown_path(request.launch.entry, request.root)
    grace_s = 0.0
    try:
        report = _wait_for_verdict(process, reader, train, import_timeout_s, progress)
        grace_s = EXIT_GRACE_S
        return report
    finally:
        reader.close()
        _stop(process, grace_s)
        sys.stderr.flush()
