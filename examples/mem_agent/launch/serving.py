"""The sessions a launch starts (servers, the evaluator, a Ray head and its job's client), stopped
together. Each runs in a session of its own led by a tether to the launch (serving/tether.py), so
stopping it stops what it forked (vLLM's engines, Ray's workers), and a launch killed with SIGKILL,
which nothing can trap, still has every session stopped by its tether.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mem_agent.serving.processes import KILL_WAIT_S, ManagedProcess, start_process, stop_all

VLLM_SERVER = ("-m", "vllm.entrypoints.openai.api_server")  # after the interpreter: vLLM's OpenAI server
CPU_STACK_MODULE = "mem_agent.local_stack"  # vLLM's CPU build behind vllm-router (serving/cpu_stack.py)
CPU_STACK = ("-m", CPU_STACK_MODULE)  # after the interpreter
Server = tuple[str, list[str], str]  # a server's name (its log: servers/<name>.log), command and URL
Step = str | tuple[str, list[str]]  # a line for a person, or a command (its name, its words) run in the foreground


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
