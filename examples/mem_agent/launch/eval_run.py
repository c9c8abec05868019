"""run-eval's launch: one process from the run folder's lock to the last process stopped.

`mem-agent run-eval` (launch/evaluate.py) checks every setting and plans the run (`EvalPlan`), then
runs it here in the same process; run-eval.sh `exec`s that command, so the script's PID is this
process and a signal sent to the script reaches it directly. It holds the run folder's lock for the
whole run (common/run_folder.py; a second run is refused in one line naming the first's PID),
converts first with CONVERT=1, makes the demo's data, starts what serves (GPU servers, vllm-router,
or the CPU stack), waits for health, runs the evaluator, and stops every session it started:
at the end, on SIGTERM, SIGINT or SIGHUP (exit 128 + the signal), and, when it is killed with
SIGKILL, through each session's tether. With nothing left to run it starts no server. In a dry run it
prints the commands instead.
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
from mem_agent.launch.serving import CPU_STACK, GpuLayout, Group
from mem_agent.serving.cpu_stack import STACK_LOGS
from mem_agent.serving.processes import ManagedProcess, ServerStartError

SERVER_LOGS = "servers"  # the servers' logs, in the run folder
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Signalled(Exception):
    def __init__(self, number: int) -> None:
        super().__init__(f"signal {number}")
        self.number = number


@dataclass(frozen=True)
class EvalPlan:
    """A checked run: its settings, and the commands and layout launch/evaluate.py built from them."""

    settings: EvalSettings
    python: str  # the interpreter of the commands run (run-eval.sh's PYTHON)
    run_dir: str  # OUTPUT_ROOT/SAVE_FILE: locked; server logs in servers/
    serving: str  # demo, url, gpu or cpu
    left_to_run: int | None  # items without a result (None: unknown); 0: nothing is served
    evaluate: list[str]  # the evaluator's command, less --url
    serve: list[str]  # every replica's server command, less its GPUs and port
    model: str = ""  # serving cpu: the model folder the CPU stack serves
    demo_lengths: tuple[str, ...] = ()
    layout: GpuLayout | None = None  # serving gpu
    router: str = ""  # the vllm-router binary (DP_MODE=router)
    conversion: Conversion | None = None  # CONVERT=1: converted first


class _Launch:
    def __init__(self, plan: EvalPlan) -> None:
        self.plan, self.settings = plan, plan.settings
        self.group = Group(plan.settings.serve_stop_timeout)
        self.lock: tuple[int, ...] = ()  # the run folder's lock, kept by the evaluator (and the stack running it)

    def execute(self) -> int:
        plan = self.plan
        if plan.conversion is not None:
            if code := convert(plan.conversion, lambda argv: self._run("convert", argv)):
                return code
        elif plan.left_to_run == 0:
            print(printable(f"nothing left to run in {plan.run_dir}: every item has a result, so no server is started"))
            return self._run("evaluator", plan.evaluate, locked=True)
        serve = {"demo": self._demo, "url": self._url, "gpu": self._gpus, "cpu": self._cpu}[plan.serving]
        return serve()

    def _run(self, name: str, argv: Sequence[str], *, locked: bool = False) -> int:
        if self.settings.dry_run:
            print(shell_line(argv))
            return 0
        return self.group.run(name, argv, self.lock if locked else ())

    def _start(self, name: str, argv: Sequence[str]) -> ManagedProcess | None:
        if self.settings.dry_run:
            print(shell_line(argv))
            return None
        log = Path(self.plan.run_dir) / SERVER_LOGS / f"{name}.log"
        process = self.group.start(name, argv, log, log_root=Path(self.plan.run_dir))
        print(printable(f"started {name} (pid {process.pid}, log {log})"))
        return process

    def _healthy(self, process: ManagedProcess | None, url: str) -> None:
        if process is not None:
            self.group.wait_healthy(process, url, self.settings.serve_timeout, self.settings.health_interval)

    def _url(self) -> int:
        return self._run("evaluator", [*self.plan.evaluate, "--url", self.settings.url], locked=True)

    def _gpus(self) -> int:
        layout = self.plan.layout
        assert layout is not None, "serving gpu has a layout"
        if self.settings.dry_run:
            print(printable(f"dry run: {layout.describe()}"))
        started = [(r, self._start(r.name, layout.server_command(r, self.plan.serve))) for r in layout.replicas()]
        for replica, process in started:
            self._healthy(process, replica.url(layout.host))
        if layout.behind_router:
            self._healthy(self._start("vllm_router", layout.router_command(self.plan.router)), layout.url)
        return self._run("evaluator", [*self.plan.evaluate, "--url", layout.url], locked=True)

    def _cpu(self) -> int:
        print(printable(f"no GPU found: serving {self.plan.model} with vLLM's CPU build (slow beyond small models)"))
        return self._cpu_stack(["--model", self.plan.model])

    def _cpu_stack(self, model: list[str]) -> int:
        """The local stack (vLLM's CPU build behind vllm-router) runs the evaluator with the stack's
        MEM_ROUTER_URL and MEM_MODEL_PATH, its defaults for --url and --tokenizer, and stops both after."""
        timeout = ["--start-timeout", str(self.settings.serve_timeout)]
        servers = Path(self.plan.run_dir) / SERVER_LOGS
        if not self.settings.dry_run:  # the stack writes its logs where it is told: no link on the way there
            check_outputs([servers / name for name in STACK_LOGS], root=Path(self.plan.run_dir))
        stack = [self.plan.python, *CPU_STACK, "exec", *model, "--run-dir", str(servers), *timeout]
        return self._run("local_stack", [*stack, "--", *self.plan.evaluate], locked=True)

    def _demo(self) -> int:
        python, lengths = self.plan.python, self.plan.demo_lengths
        data, questions = f"{self.plan.run_dir}/data", self.settings.demo_questions
        print("demo: synthetic multi-hop QA made by mem_agent.synthetic_qa (real HotpotQA is not downloaded here)")
        raw = f"{data}/synthetic_qa.json"
        if Path(raw).is_file():
            print(printable(f"demo: reusing {raw} (made by an earlier run)"))
        elif code := self._run(
            "synthetic_qa",
            [python, "-m", "mem_agent.synthetic_qa", "--out", raw, "--num-questions", str(4 * questions)],
        ):
            return code
        reuse = [n for n in lengths if Path(data, f"eval_{n}.json").is_file()]
        build = [n for n in lengths if n not in reuse]
        if reuse:
            print(
                printable(
                    f"demo: reusing {' '.join(f'eval_{n}.json' for n in reuse)} in {data} (made by an earlier run)"
                )
            )
        if build:
            # text layout at every length: the demo's synthetic set is too small a corpus for index files
            builder = [python, "-m", "mem_agent.build_long_context", "--input", raw, "--layout", "text"]
            builder += ["--num-docs", *build, "--num-questions", str(questions), "--out-dir", data]
            if code := self._run("build_long_context", builder):
                return code
        return self._cpu_stack([])


def launch(plan: EvalPlan) -> int:
    """Run `plan`: under the run folder's lock, every group it starts stopped at the end or on a signal."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)  # a test's stand-in stdout may have none
    if reconfigure is not None:
        reconfigure(line_buffering=True)  # ours and the children's lines in order
    run = _Launch(plan)
    if plan.settings.dry_run:
        return run.execute()
    for number in _STOP_SIGNALS:
        signal.signal(number, _raise_signalled)
    try:
        run.lock = (_hold_run_folder(Path(plan.run_dir)),)
        return run.execute()
    except UsageError as error:  # a held folder, a lock that is a link
        print(printable(f"error: {error}"), file=sys.stderr)
        return 2
    except ServerStartError as error:
        print(printable(f"error: {error}"), file=sys.stderr)
        return 1
    except _Signalled as signalled:
        return 128 + signalled.number
    finally:
        run.group.stop()


def _hold_run_folder(folder: Path) -> int:
    """The run folder's lock, through a descriptor this process keeps for its life and passes to the
    evaluator, which runs under it (run_folder.LOCK_FD_ENV) instead of refusing itself."""
    descriptor = open_lock(lock_path(folder))
    hold_descriptor(descriptor, folder, os.getpid(), "run-eval.sh", "choose another SAVE_FILE")
    os.environ[LOCK_FD_ENV] = str(descriptor)
    return descriptor


def _raise_signalled(number: int, frame: object) -> None:
    """The first stop signal unwinds the launch (its `finally` stops every group); later ones are
    ignored, so that the stop it started, which ends in SIGKILL by itself, is not cut short."""
    for other in _STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise _Signalled(number)
