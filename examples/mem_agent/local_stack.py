"""Start the local inference stack (vLLM's CPU build behind vllm-router, on loopback): the command
over mem_agent.serving.local_stack.

    python -m mem_agent.local_stack exec -- python -m mem_agent.eval_ruler_hqa ...
        starts the stack, runs the command with MEM_ROUTER_URL / MEM_SERVER_URL / MEM_MODEL_PATH
        set, stops the stack and exits with the command's status.
    python -m mem_agent.local_stack serve
        starts the stack and holds it until Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.run_folder import inherited_lock_descriptors
from mem_agent.common.usage import split_command
from mem_agent.serving.local_stack import DEFAULT_START_TIMEOUT_S, StackSettings, local_stack, stack_env
from mem_agent.serving.processes import ProcessStopError, ServerStartError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mem_agent.local_stack",
        description="Start vLLM (CPU build) behind vllm-router on loopback, for demos, tests and benchmarks.",
    )
    parser.add_argument(
        "action",
        choices=["serve", "exec"],
        help="serve: hold until Ctrl-C; exec: run the command given after --",
    )
    parser.add_argument("--model", type=Path, default=None, help="model folder (default: the tiny Qwen3, cached)")
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=Path("runs/local_stack"),
        help="folder for server logs (default: %(default)s)",
    )
    parser.add_argument("--no-router", action="store_true", help="serve vLLM directly, without vllm-router")
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT_S,
        help="seconds to wait for health (default: 600)",
    )
    parser.add_argument("--max-model-len", type=int, default=None, help="vLLM --max-model-len (default: the model's)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv, command = split_command(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.action == "exec" and not command:
        print("error: exec needs a command after --", file=sys.stderr)
        return 2
    if args.model is not None and not (args.model / "config.json").is_file():
        print(f"error: --model {args.model} is not a model folder (no config.json)", file=sys.stderr)
        return 2
    settings = StackSettings(
        model_path=args.model,
        run_dir=args.run_dir,
        start_timeout_s=args.start_timeout,
        with_router=not args.no_router,
        max_model_len=args.max_model_len,
    )
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        with local_stack(settings) as stack:
            env = stack_env(stack)
            for key, value in env.items():
                print(f"{key}={value}", flush=True)
            if args.action == "serve":
                print("local stack is up; Ctrl-C stops it", flush=True)
                while all(process.alive() for process in stack.processes):
                    time.sleep(1)
                print("error: a server of the stack exited; see its log in the run folder", file=sys.stderr)
                return 1
            # The run folder's lock, where a run script passed one down, goes on to the command.
            return subprocess.call(command, env={**os.environ, **env}, pass_fds=inherited_lock_descriptors())
    except (ServerStartError, ProcessStopError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    """SIGTERM (a job scheduler, a wrapping script) unwinds like Ctrl-C, so the stack is stopped."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main())
