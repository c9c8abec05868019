"""Write a synthetic multi-hop QA set (HotpotQA layout, invented facts) for demos and CI.

    python -m mem_agent.synthetic_qa --out runs/demo/synthetic_qa.json --num-questions 64 --seed 0

The questions and how they are made: mem_agent/data/synthetic.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.numbers import SEED_LIMIT, integer, seed
from mem_agent.data.synthetic import SyntheticRequest, write_synthetic_set


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.synthetic_qa", __doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output JSON file")
    parser.add_argument(
        "--num-questions", type=integer(1), default=128, help="questions to generate, at most 100,000 (default: 128)"
    )
    parser.add_argument("--seed", type=seed, default=0, help=f"random seed, 0 to {SEED_LIMIT} (default: 0)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return command_status(lambda: write_synthetic_set(SyntheticRequest(args.out, args.num_questions, args.seed)))


if __name__ == "__main__":
    raise SystemExit(main())
