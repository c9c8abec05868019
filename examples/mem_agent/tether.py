"""Run a command tied to the process that started it: the command over mem_agent.serving.tether.

    python -m mem_agent.tether --parent PID [--grace S] -- COMMAND ...

The command runs in the tether's own process group; when process PID is gone (even killed with
SIGKILL, which no script can trap), the group gets SIGTERM and, after S seconds, SIGKILL. The
exit status is the command's. run-eval.sh starts its servers and the evaluator this way, and the
local stack its vLLM server and router, so a killed run never leaves them running.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mem_agent.common.usage import split_command
from mem_agent.serving.tether import run_tethered


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mem_agent.tether",
        description="Run COMMAND in its own process group, stopped with it when process --parent is gone.",
    )
    parser.add_argument("--parent", type=int, required=True, help="PID whose end stops the command (required)")
    parser.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds between SIGTERM and SIGKILL once the parent is gone (default: %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv, command = split_command(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    problem = "" if command else "no command: give it after --"
    if args.parent <= 0 or args.grace < 0:
        problem = f"--parent {args.parent} must be a PID (> 0) and --grace {args.grace} seconds (>= 0)"
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return run_tethered(command, args.parent, args.grace)


if __name__ == "__main__":
    raise SystemExit(main())
