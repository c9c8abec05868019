"""Write a synthetic multi-hop QA set (HotpotQA layout, invented facts): the command over
mem_agent.data.synthetic_qa.

    python -m mem_agent.synthetic_qa --out runs/demo/synthetic_qa.json --num-questions 64 --seed 0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.jsonstream import write_json_array_atomic
from mem_agent.data.synthetic_qa import generate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mem_agent.synthetic_qa",
        description="Write a synthetic multi-hop QA set (HotpotQA layout, invented facts) for demos and CI.",
    )
    parser.add_argument("--out", type=Path, required=True, help="output JSON file")
    parser.add_argument("--num-questions", type=int, default=128, help="questions to generate (default: 128)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.num_questions <= 0:
        print(f"error: --num-questions {args.num_questions} must be a positive integer", file=sys.stderr)
        return 2
    try:
        count = write_json_array_atomic(args.out, generate(args.num_questions, args.seed))
    except OSError as error:
        print(f"error: cannot write {args.out}: {error.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {count} synthetic questions to {args.out} (invented facts, seed {args.seed})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
