"""Serving for run-eval.sh: where the replicas of a model go on a GPU node, and the process groups
its launch starts, waits for and stops.

Data-parallel serving, two ways. DP_MODE=vllm: one server whose engine runs DP replicas and balances
requests itself (vLLM's --data-parallel-size; one port, one log). DP_MODE=router: DP independent
servers, replica i on GPUs [i*TP, (i+1)*TP) of the node's list, behind vllm-router: a replica that
fails leaves the others serving, and each has its own log.

Every command the launch starts runs in a session of its own led by a tether to the launch
(serving/tether.py): stopping the session stops what the command forked (vLLM's engine processes,
Ray's workers), and a launch killed with SIGKILL, which nothing can trap, still has every session
stopped by its tether. The names imported from serving/ below (and CPU_STACK's command) are all this room uses of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.serving.processes import KILL_WAIT_S, ManagedProcess, start_process, stop_all, wait_healthy

VLLM_SERVER = ("-m", "vllm.entrypoints.openai.api_server")  # after the interpreter: vLLM's OpenAI server
CPU_STACK_MODULE = "mem_agent.local_stack"  # vLLM's CPU build behind vllm-router (serving/cpu_stack.py)
CPU_STACK = ("-m", CPU_STACK_MODULE)  # after the interpreter


@dataclass(frozen=True)
class Replica:
    name: str  # its log is servers/<name>.log
    devices: str  # CUDA_VISIBLE_DEVICES
    port: int

    def url(self, host: str) -> str:
        return f"http://{host}:{self.port}"


@dataclass(frozen=True)
class GpuLayout:
    """DP replicas of TP GPUs each on a node's GPUs, served at HOST:PORT."""

    gpus: tuple[str, ...]
    dp: int
    tp: int
    dp_mode: str
    host: str
    port: int

    @property
    def behind_router(self) -> bool:
        return self.dp > 1 and self.dp_mode == "router"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ports(self) -> list[int]:
        """Every port it listens on: with the router, PORT, the replicas' PORT+1 ... PORT+DP, metrics PORT+DP+1."""
        return [self.port + offset for offset in range(self.dp + 2 if self.behind_router else 1)]

    def replicas(self) -> list[Replica]:
        if not self.behind_router:
            return [Replica("vllm_server", ",".join(self.gpus[: self.dp * self.tp]), self.port)]
        return [
            Replica(f"vllm_server_{i}", ",".join(self.gpus[i * self.tp : (i + 1) * self.tp]), self.port + 1 + i)
            for i in range(self.dp)
        ]

    def server_command(self, replica: Replica, serve: Sequence[str]) -> list[str]:
        """`serve` (the interpreter, VLLM_SERVER and the flags every replica shares) on its GPUs and port."""
        own = ["--port", str(replica.port)]
        if self.dp > 1 and not self.behind_router:
            own += ["--data-parallel-size", str(self.dp)]
        return ["env", f"CUDA_VISIBLE_DEVICES={replica.devices}", *serve, *own]

    def router_command(self, router: str) -> list[str]:
        workers = [replica.url(self.host) for replica in self.replicas()]
        argv = [router, "--host", self.host, "--port", str(self.port), "--worker-urls", *workers]
        return [
            *argv,
            "--policy",
            "round_robin",
            "--prometheus-host",
            self.host,
            "--prometheus-port",
            str(self.ports[-1]),
        ]

    def describe(self) -> str:
        return (
            f"DP={self.dp} x TP={self.tp} = {self.dp * self.tp} of {len(self.gpus)} GPU(s) ({' '.join(self.gpus)}),"
            f" DP_MODE={self.dp_mode}, serving at {self.url}"
        )


class Group:
    """The sessions one launch started (servers, the evaluator, a Ray head and its job's client),
    stopped together."""

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

    def wait_healthy(self, process: ManagedProcess, url: str, timeout_s: float, interval_s: float) -> None:
        """Until url/health answers; ServerStartError (its log's last lines) on an early exit or timeout."""
        seconds = wait_healthy(process, f"{url}/health", timeout_s, interval_s)
        print(f"{process.name} is up at {url} after {seconds:.0f} s", flush=True)

    def stop(self) -> None:
        """`stop_all` of every session it started; says which processes outlived SIGKILL."""
        left = stop_all([process.pid for process in self.started], self.grace_s)
        for process in self.started:
            process.popen.poll()  # reaped: they are our children
        if left:
            print(f"warning: processes {left} outlived SIGKILL by {KILL_WAIT_S:.0f} s", flush=True)
