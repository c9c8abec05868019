"""`python -m mem_agent.jsonstream --check FILE`: validate a JSON array file item by item, streamed.

The entry point prepare-eval-data.sh calls; the streaming reader is mem_agent.common.jsonstream.
With `--eval` the file is checked as a RULER-HQA eval file by the evaluator's own checker
(mem_agent.evaluation.files.check_eval_file), so the two can never disagree.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.jsonstream import DataFormatError, iter_json_array
from mem_agent.evaluation.files import check_eval_file


def check_file(path: Path, required_keys: Sequence[str]) -> int:
    count = 0
    for index, item in enumerate(iter_json_array(path)):
        if not isinstance(item, dict):
            raise DataFormatError(f"{path}: item {index}: expected an object, got {type(item).__name__}")
        missing = [key for key in required_keys if key not in item]
        if missing:
            raise DataFormatError(f"{path}: item {index}: missing field(s) {', '.join(missing)}")
        count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mem_agent.jsonstream", description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, required=True, help="JSON array file to validate")
    parser.add_argument("--require-keys", default="", help="comma-separated keys every item must have (default: none)")
    parser.add_argument(
        "--eval", action="store_true", help="check it as a RULER-HQA eval file, by the evaluator's rules (default: off)"
    )
    args = parser.parse_args(argv)
    keys = [key for key in args.require_keys.split(",") if key]
    try:
        print(len(check_eval_file(args.check)) if args.eval else check_file(args.check, keys))
    except DataFormatError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
