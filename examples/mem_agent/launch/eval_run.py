"""run-eval.sh's launch: one process from the run folder's lock to the last process stopped.

    python -m mem_agent.launch eval-run LAUNCH_ARGS... --serve SERVER... -- EVALUATOR...

run-eval.sh `exec`s it once `python -m mem_agent.launch eval` has checked every setting and built
the arrays (launch/evaluate.py), so the script's PID is this process and a signal sent to the
script reaches it directly. It holds the run folder's lock for the whole run (common/run_folder.py;
a second run is refused in one line naming the first's PID), converts first with CONVERT=1, makes
the demo's data, starts what serves (GPU servers, vllm-router, or the CPU stack), waits for health,
runs the evaluator, and stops every process group it started: at the end, on SIGTERM, SIGINT or
SIGHUP (exit 128 + the signal), and, when it is killed with SIGKILL, through each group's tether.
With nothing left to run it starts no server. With --dry-run it prints the commands instead.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mem_agent.common.console import command_parser
from mem_agent.common.guarded_files import check_outputs, open_lock
from mem_agent.common.numbers import integer
from mem_agent.common.printable import printable, shell_line
from mem_agent.common.run_folder import LOCK_FD_ENV, hold_descriptor, lock_path
from mem_agent.common.usage import UsageError, split_command
from mem_agent.launch.serving import CPU_STACK, GpuLayout, Group
from mem_agent.serving.cpu_stack import STACK_LOGS
from mem_agent.serving.processes import ManagedProcess, ServerStartError

MEM_AGENT_DIR = Path(__file__).resolve().parents[1]
SERVER_LOGS = "servers"  # the servers' logs, in the run folder
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Signalled(Exception):
    def __init__(self, number: int) -> None:
        super().__init__(f"signal {number}")
        self.number = number


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mem_agent.launch.eval_run", __doc__.splitlines()[0], prog="python -m mem_agent.launch eval-run"
    )
    parser.add_argument("--python", required=True, help="the interpreter of the commands run (run-eval.sh's PYTHON)")
    parser.add_argument("--run-dir", required=True, help="OUTPUT_ROOT/SAVE_FILE: locked; server logs in servers/")
    parser.add_argument("--serving", choices=["demo", "url", "gpu", "cpu"], required=True)
    parser.add_argument("--left-to-run", default="?", help="items without a result; 0: nothing is served")
    parser.add_argument("--serve-timeout", type=integer(1), required=True, help="seconds to wait for health")
    parser.add_argument("--stop-timeout", type=integer(1), required=True, help="seconds from SIGTERM to SIGKILL")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, start nothing")
    parser.add_argument("--convert", metavar="SINGLE_ITER", help="run convert-to-hf.sh for this iteration first")
    parser.add_argument("--url", help="--serving url: the running server or router")
    parser.add_argument("--model", help="--serving cpu: the model folder the CPU stack serves")
    parser.add_argument("--demo-questions", type=integer(1), help="--serving demo: synthetic questions per length")
    parser.add_argument("--demo-lengths", nargs="+", default=[], help="--serving demo: the document counts")
    parser.add_argument("--gpus", default="", help="--serving gpu: the node's GPUs, comma-separated")
    parser.add_argument("--dp", type=integer(1), default=1)
    parser.add_argument("--tp", type=integer(1), default=1)
    parser.add_argument("--dp-mode", choices=["vllm", "router"], default="vllm")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=integer(1, 65535), default=8000)
    parser.add_argument("--health-interval", type=integer(1), default=5)
    parser.add_argument("--router", default="vllm-router", help="the vllm-router binary (DP_MODE=router)")
    return parser


class _Launch:
    def __init__(self, args: argparse.Namespace, serve: list[str], evaluate: list[str]) -> None:
        self.args, self.serve, self.evaluate = args, serve, evaluate
        self.group = Group(args.stop_timeout)
        self.lock: tuple[int, ...] = ()  # the run folder's lock, kept by the evaluator (and the stack running it)

    def execute(self) -> int:
        args = self.args
        if args.convert is not None:
            convert = ["env", f"SINGLE_ITER={args.convert}", "bash", str(MEM_AGENT_DIR / "convert-to-hf.sh")]
            if code := self._run("convert", convert):
                return code
        elif args.left_to_run == "0":
            print(printable(f"nothing left to run in {args.run_dir}: every item has a result, so no server is started"))
            return self._run("evaluator", self.evaluate, locked=True)
        serve = {"demo": self._demo, "url": self._url, "gpu": self._gpus, "cpu": self._cpu}[args.serving]
        return serve()

    def _run(self, name: str, argv: Sequence[str], *, locked: bool = False) -> int:
        if self.args.dry_run:
            print(shell_line(argv))
            return 0
        return self.group.run(name, argv, self.lock if locked else ())

    def _start(self, name: str, argv: Sequence[str]) -> ManagedProcess | None:
        if self.args.dry_run:
            print(shell_line(argv))
            return None
        log = Path(self.args.run_dir) / SERVER_LOGS / f"{name}.log"
        process = self.group.start(name, argv, log, log_root=Path(self.args.run_dir))
        print(printable(f"started {name} (pid {process.pid}, log {log})"))
        return process

    def _healthy(self, process: ManagedProcess | None, url: str) -> None:
        if process is not None:
            self.group.wait_healthy(process, url, self.args.serve_timeout, self.args.health_interval)

    def _url(self) -> int:
        return self._run("evaluator", [*self.evaluate, "--url", self.args.url], locked=True)

    def _gpus(self) -> int:
        args = self.args
        layout = GpuLayout(tuple(args.gpus.split(",")), args.dp, args.tp, args.dp_mode, args.host, args.port)
        if args.dry_run:
            print(printable(f"dry run: {layout.describe()}"))
        started = [(r, self._start(r.name, layout.server_command(r, self.serve))) for r in layout.replicas()]
        for replica, process in started:
            self._healthy(process, replica.url(args.host))
        if layout.behind_router:
            self._healthy(self._start("vllm_router", layout.router_command(args.router)), layout.url)
        return self._run("evaluator", [*self.evaluate, "--url", layout.url], locked=True)

    def _cpu(self) -> int:
        print(printable(f"no GPU found: serving {self.args.model} with vLLM's CPU build (slow beyond small models)"))
        return self._cpu_stack(["--model", self.args.model])

    def _cpu_stack(self, model: list[str]) -> int:
        """The local stack (vLLM's CPU build behind vllm-router) runs the evaluator with the stack's
        MEM_ROUTER_URL and MEM_MODEL_PATH, its defaults for --url and --tokenizer, and stops both after."""
        timeout = ["--start-timeout", str(self.args.serve_timeout)]
        servers = Path(self.args.run_dir) / SERVER_LOGS
        if not self.args.dry_run:  # the stack writes its logs where it is told: no link on the way there
            check_outputs([servers / name for name in STACK_LOGS], root=Path(self.args.run_dir))
        stack = [self.args.python, *CPU_STACK, "exec", *model, "--run-dir", str(servers), *timeout]
        return self._run("local_stack", [*stack, "--", *self.evaluate], locked=True)

    def _demo(self) -> int:
        args, python = self.args, self.args.python
        data, questions = f"{args.run_dir}/data", args.demo_questions
        print("demo: synthetic multi-hop QA made by mem_agent.synthetic_qa (real HotpotQA is not downloaded here)")
        raw = f"{data}/synthetic_qa.json"
        if Path(raw).is_file():
            print(printable(f"demo: reusing {raw} (made by an earlier run)"))
        elif code := self._run(
            "synthetic_qa",
            [python, "-m", "mem_agent.synthetic_qa", "--out", raw, "--num-questions", str(4 * questions)],
        ):
            return code
        reuse = [n for n in args.demo_lengths if Path(data, f"eval_{n}.json").is_file()]
        build = [n for n in args.demo_lengths if n not in reuse]
        if reuse:
            print(
                printable(
                    f"demo: reusing {' '.join(f'eval_{n}.json' for n in reuse)} in {data} (made by an earlier run)"
                )
            )
        if build:
            # text layout at every length: the demo's synthetic set is too small a corpus for index files
            builder = [
                python,
                "-m",
                "mem_agent.build_long_context",
                "--input",
                raw,
                "--layout",
                "text",
                "--num-docs",
                *build,
            ]
            if code := self._run(
                "build_long_context", [*builder, "--num-questions", str(questions), "--out-dir", data]
            ):
                return code
        return self._cpu_stack([])


def main(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    words, evaluate = split_command(argv)
    ours, serve = (
        (words[: words.index("--serve")], words[words.index("--serve") + 1 :]) if "--serve" in words else (words, [])
    )
    args = build_parser().parse_args(ours)
    if not evaluate:
        print("error: no evaluator command: give it after --", file=sys.stderr)
        return 2
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # ours and the children's lines in order
    launch = _Launch(args, serve, evaluate)
    if args.dry_run:
        return launch.execute()
    for number in _STOP_SIGNALS:
        signal.signal(number, _raise_signalled)
    try:
        launch.lock = (_hold_run_folder(Path(args.run_dir)),)
        return launch.execute()
    except UsageError as error:  # a held folder, a lock that is a link
        print(printable(f"error: {error}"), file=sys.stderr)
        return 2
    except ServerStartError as error:
        print(printable(f"error: {error}"), file=sys.stderr)
        return 1
    except _Signalled as signalled:
        return 128 + signalled.number
    finally:
        launch.group.stop()


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
