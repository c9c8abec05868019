"""run-eval's launch of a checked plan, in the process run-eval.sh `exec`s (so a signal sent to the
script reaches it): the run folder's lock held throughout, every session it started stopped at the
end, on SIGTERM, SIGINT or SIGHUP (exit 128 + the signal) and, through their tethers, on SIGKILL.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.guarded_files import check_outputs, open_lock
from mem_agent.common.printable import printable, shell_line
from mem_agent.common.run_folder import LOCK_FD_ENV, hold_descriptor, lock_path
from mem_agent.common.usage import UsageError
from mem_agent.launch.convert import Conversion, convert
from mem_agent.launch.eval_settings import EvalSettings
from mem_agent.launch.serving import Group, Server
from mem_agent.serving.cpu_stack import STACK_LOGS
from mem_agent.serving.processes import ManagedProcess, ServerStartError, wait_healthy

SERVER_LOGS = "servers"  # the servers' logs, in the run folder
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
Step = str | tuple[str, list[str]]  # a line for a person, or a command (its name, its words) run in the foreground


class _Signalled(Exception):
    def __init__(self, number: int) -> None:
        super().__init__(f"signal {number}")
        self.number = number


@dataclass(frozen=True)
class EvalPlan:
    """A checked run (launch/evaluate.py), in the order it runs: the conversion, the steps (the demo's
    data), the servers wave by wave (each wave started together, healthy before the next), then the
    evaluator, which the CPU stack runs where `stack` names it."""

    settings: EvalSettings
    run_dir: str  # OUTPUT_ROOT/SAVE_FILE: locked; server logs in servers/
    evaluate: list[str]
    steps: tuple[Step, ...] = ()
    servers: tuple[list[Server], ...] = ()
    stack: tuple[str, ...] = ()
    conversion: Conversion | None = None


def launch(plan: EvalPlan) -> int:
    """Run `plan`: under the run folder's lock, every session it starts stopped at the end or on a signal."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)  # a test's stand-in stdout may have none
    if reconfigure is not None:
        reconfigure(line_buffering=True)  # ours and the children's lines in order
    if plan.settings.dry_run:
        return _execute(plan, None, ())
    for number in _STOP_SIGNALS:
        signal.signal(number, _raise_signalled)
    group = Group(plan.settings.serve_stop_timeout)
    try:
        return _execute(plan, group, (_hold_run_folder(Path(plan.run_dir)),))
    except UsageError as error:  # a held folder, a lock or a log that is a link
        print(printable(f"error: {error}"), file=sys.stderr)
        return 2
    except ServerStartError as error:
        print(printable(f"error: {error}"), file=sys.stderr)
        return 1
    except _Signalled as signalled:
        return 128 + signalled.number
    finally:
        group.stop()


def _execute(plan: EvalPlan, group: Group | None, lock: tuple[int, ...]) -> int:
    """The plan's commands in order, each printed instead where there is no `group` (a dry run); the
    evaluator (and the stack running it) keeps the run folder's `lock`."""
    settings, run_dir = plan.settings, Path(plan.run_dir)

    def run(name: str, argv: Sequence[str], pass_fds: Sequence[int] = ()) -> int:
        if group is None:
            print(shell_line(argv))
            return 0
        return group.run(name, argv, pass_fds)

    if plan.conversion is not None and (code := convert(plan.conversion, lambda argv: run("convert", argv))):
        return code
    for step in plan.steps:
        if isinstance(step, str):
            print(printable(step))
        elif code := run(*step):
            return code
    for wave in plan.servers:
        started = [(_start(group, run_dir, name, argv), url) for name, argv, url in wave]
        for process, url in started:
            if process is not None:
                seconds = wait_healthy(process, f"{url}/health", settings.serve_timeout, settings.health_interval)
                print(f"{process.name} is up at {url} after {seconds:.0f} s", flush=True)
    if plan.stack and group is not None:  # the stack writes its logs where it is told: no link on the way there
        check_outputs([run_dir / SERVER_LOGS / name for name in STACK_LOGS], root=run_dir)
    evaluate = [*plan.stack, "--", *plan.evaluate] if plan.stack else plan.evaluate
    return run("local_stack" if plan.stack else "evaluator", evaluate, lock)


def _start(group: Group | None, run_dir: Path, name: str, argv: list[str]) -> ManagedProcess | None:
    if group is None:
        print(shell_line(argv))
        return None
    log = run_dir / SERVER_LOGS / f"{name}.log"
    process = group.start(name, argv, log, log_root=run_dir)
    print(printable(f"started {name} (pid {process.pid}, log {log})"))
    return process


def _hold_run_folder(folder: Path) -> int:
    """The run folder's lock, through a descriptor this process keeps for its life and passes to the
    evaluator, which runs under it (run_folder.LOCK_FD_ENV) instead of refusing itself."""
    descriptor = open_lock(lock_path(folder))
    hold_descriptor(descriptor, folder, os.getpid(), "run-eval.sh", "choose another SAVE_FILE")
    os.environ[LOCK_FD_ENV] = str(descriptor)
    return descriptor


def _raise_signalled(number: int, frame: object) -> None:
    """The first stop signal unwinds the launch (its `finally` stops every session); later ones are
    ignored, so that the stop it started, which ends in SIGKILL by itself, is not cut short."""
    for other in _STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise _Signalled(number)
