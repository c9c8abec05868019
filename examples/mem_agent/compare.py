"""Compare evaluation runs: accuracy per length, one overlaid plot, and paired differences.

    python -m mem_agent.compare runs/memagent runs/direct
    python -m mem_agent.compare runs/a runs/b runs/c --metric f1 --labels base rl rl-long

Each RUN is an evaluator output folder (summary.json and results_<N>.jsonl). Prints a table of the
metric per length for every run, then for each pair of runs the mean per-question difference on
the questions both answered, with a 95% bootstrap interval; writes the plot and the numbers to
--output-dir. Runs over different data (an eval file's sha256) or scoring rules are refused
unless --force. Exit status: 0 compared, 1 an I/O failure (a full disk), 2 bad usage or runs
that cannot be compared.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import program_name
from mem_agent.common.usage import UsageError
from mem_agent.observability.comparison import METRICS, ComparisonRequest, compare_runs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name("mem_agent.compare"), description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="evaluation output folders, two or more")
    parser.add_argument("--labels", nargs="+", default=None, help="names for the runs (default: mode: folder name)")
    parser.add_argument("--metric", choices=METRICS, default="sub_em", help="metric compared (default: %(default)s)")
    parser.add_argument(
        "--output-dir", type=Path, default=Path("runs/compare"), help="plot and numbers folder (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: %(default)s)")
    parser.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap resamples per interval (default: %(default)s)"
    )
    parser.add_argument("--force", action="store_true", help="compare runs over different data or scoring rules")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    request = ComparisonRequest(
        runs=tuple(args.runs),
        labels=None if args.labels is None else tuple(args.labels),
        metric=args.metric,
        output_dir=args.output_dir,
        seed=args.seed,
        resamples=args.resamples,
        force=args.force,
    )
    try:
        compare_runs(request)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a full disk, a file that cannot be read: what was there is kept
        print(f"error: {error.filename or '?'}: {error.strerror or error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
