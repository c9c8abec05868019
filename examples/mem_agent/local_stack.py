"""Start the local inference stack: vLLM's CPU build behind vllm-router, on loopback.

    python -m mem_agent.local_stack exec -- python -m mem_agent.eval_ruler_hqa ...
        starts the stack, runs the command with MEM_ROUTER_URL / MEM_SERVER_URL / MEM_MODEL_PATH
        set, stops the stack and exits with the command's status.
    python -m mem_agent.local_stack serve
        starts the stack and holds it until Ctrl-C.

The stack itself: mem_agent/serving/cpu_stack.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.numbers import integer, number
from mem_agent.common.usage import split_command
from mem_agent.serving.cpu_stack import DEFAULT_START_TIMEOUT_S, StackRun, StackSettings, run_with_stack
from mem_agent.serving.processes import ProcessStopError, ServerStartError


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.local_stack", __doc__.split("\n\n")[0])
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
        type=number(0, above=True),
        default=DEFAULT_START_TIMEOUT_S,
        help="seconds to wait for health (default: 600)",
    )
    parser.add_argument(
        "--max-model-len", type=integer(1), default=None, help="vLLM --max-model-len (default: the model's)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv, command = split_command(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    settings = StackSettings(
        model_path=args.model,
        run_dir=args.run_dir,
        start_timeout_s=args.start_timeout,
        with_router=not args.no_router,
        max_model_len=args.max_model_len,
    )
    try:
        return command_status(
            lambda: run_with_stack(StackRun(args.action, tuple(command), settings)),
            failures=(ServerStartError, ProcessStopError),
        )
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
