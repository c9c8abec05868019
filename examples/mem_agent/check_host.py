"""Preflight: one rollout step of our hooks through your own slime or vime checkout, as train.py runs it.

    python -m mem_agent.check_host --trainer-root ~/slime --url http://127.0.0.1:30000 --protocol sglang
    python -m mem_agent.check_host --trainer-root ~/vime --local-stack

Run it on a laptop before spending GPU hours. It imports and runs the checkout's train.py (in a
child process, its import under --import-timeout) with exactly the flags our launch script
would submit, scaled to one rollout of a few prompts, and prints one PASS line listing what it
stood in for, or the first incompatibility in one line with the checkout file and line it came
from. Exit status: 0 PASS, 1 FAIL, 2 a mistake in how it was called (or a launch setting the
script refuses). How: mem_agent/preflight/ (pipeline.py first).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mem_agent.common.console import add_flags, command_parser, parsed
from mem_agent.common.usage import UsageError
from mem_agent.preflight.checks import CheckFailed
from mem_agent.preflight.pipeline import PreflightOptions, run_preflight


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mem_agent.check_host",
        description="Run one small rollout step of the mem_agent hooks through a slime or vime checkout.",
    )
    add_flags(parser, PreflightOptions)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = parsed(PreflightOptions, build_parser().parse_args(argv))
    try:
        print(run_preflight(options, lambda line: print(line, file=sys.stderr, flush=True)))
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except CheckFailed as failure:
        print(failure)
        return 1
    except KeyboardInterrupt:
        print("preflight: interrupted; nothing of it is left running", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
