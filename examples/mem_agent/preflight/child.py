"""The checkout's train.py is imported and run in a child process, its import under a time bound.

Importing train.py runs the checkout's code, which can do anything at import time: call
`sys.exit(0)`, raise KeyboardInterrupt, block on a cluster or on input, call `os._exit`, or change
the process for good (signal handlers, sys.modules, and our own stand-ins). So the import and the
step run in a "spawn" child (a fresh interpreter, no forked locks or threads), and this process
only waits for its messages: an exit or an interrupt in the checkout's code comes back as a FAIL
at the line that raised it; a child that ends without a verdict (`os._exit`, a crash) is a FAIL
naming its exit status; an import not finished after `import_timeout_s` is a FAIL, and the child's
process group is killed. A thread could do none of this: a blocked thread cannot be stopped,
`signal.signal` fails outside the main thread, and an `os._exit` would end the preflight itself.

The child leads its own process group (what train.py starts is killed with it, and a Ctrl-C in
the terminal reaches only this process, which stops the child, instead of the child reporting
the user's interrupt as train.py's); it ends itself when this process is gone. Its stdout is its
stderr: stdout carries only the preflight's verdict.
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

from mem_agent.preflight.checks import CheckFailed, shown_path, stage
from mem_agent.preflight.step import StepReport, StepRequest, run_step

PROGRESS_S = 10.0  # at most this long between two progress lines
PARENT_POLL_S = 0.5
STOP_WAIT_S = 5.0
EXIT_GRACE_S = 2.0  # a child with a verdict sent: its time to exit (its exit handlers run) before the kill


def _child_main(connection: Connection, request: StepRequest, parent: int) -> None:
    """The child: import train.py and run the step; every outcome is one message (never a traceback).
    None says that train.py is imported."""
    os.setpgid(0, 0)

    def end_with_parent() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=end_with_parent, name="preflight-parent-watch", daemon=True).start()
    os.dup2(2, 1)
    try:
        with stage("preflight", request.root, "mem_agent.preflight"):  # ours, not the checkout's: still one line
            connection.send(run_step(request, lambda: connection.send(None)))
    except CheckFailed as failure:
        connection.send(failure)
    finally:
        connection.close()


def _verdict(
    process: multiprocessing.process.BaseProcess,
    reader: Connection,
    train: str,
    import_timeout_s: float,
    progress: Callable[[str], None],
) -> StepReport | CheckFailed:
    """The child's verdict; a CheckFailed for an import past its bound or a child gone without one."""
    started = time.monotonic()
    imported = False
    while True:
        left = import_timeout_s - (time.monotonic() - started)
        if not imported and left <= 0:
            detail = f"importing it did not finish within {import_timeout_s:g} s (--import-timeout): it blocks at "
            raise CheckFailed("train", train, detail + "import time (waiting for a cluster, a lock or input?)")
        if reader.poll(PROGRESS_S if imported else min(PROGRESS_S, import_timeout_s / 2, left)):
            try:
                message = reader.recv()
            except EOFError:
                process.join(STOP_WAIT_S)
                detail = f"the process running it ended with exit status {process.exitcode} and no verdict"
                raise CheckFailed("step" if imported else "train", train, detail) from None
            if message is not None:
                return message
            imported = True
        elif imported or time.monotonic() - started < import_timeout_s:
            doing = "running the rollout step of" if imported else "importing"
            progress(f"preflight: still {doing} {train} after {time.monotonic() - started:.0f} s")


def run_in_child(request: StepRequest, import_timeout_s: float, progress: Callable[[str], None]) -> StepReport:
    """The step's report from a child process; a CheckFailed for every way it can go wrong."""
    context = multiprocessing.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(writer, request, os.getpid()), name="mem_agent-preflight")
    process.start()
    writer.close()  # the child holds the only writer: its end is an EOF here
    verdict = None
    try:
        verdict = _verdict(process, reader, shown_path(request.entry, request.root), import_timeout_s, progress)
    finally:
        reader.close()
        process.join(EXIT_GRACE_S if verdict is not None else 0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # the child's whole group, whatever it is doing
        process.join(STOP_WAIT_S)
        sys.stderr.flush()
    if isinstance(verdict, CheckFailed):
        raise verdict
    return verdict
