"""Compare evaluation runs: accuracy per length, one overlaid plot, and paired differences.

    python -m mem_agent.compare runs/memagent runs/direct
    python -m mem_agent.compare runs/a runs/b runs/c --metric f1 --labels base rl rl-long

Each RUN is an evaluator output folder (summary.json and results_<N>.jsonl). Prints a table of the
metric per length for every run, then for each pair of runs the mean per-question difference on
the questions both answered, with a 95% bootstrap interval; writes the plot and the numbers to
--output-dir. Runs over different data (an eval file's sha256) or scoring rules are refused
unless --force. Exit status: 0 compared, 2 bad usage or runs that cannot be compared.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from mem_agent.common.atomic_files import write_text_atomic
from mem_agent.common.console import program_name
from mem_agent.common.usage import UsageError
from mem_agent.observability.compare import (
    METRICS,
    EvalRun,
    comparison_problems,
    length_table,
    load_eval_run,
    paired_difference,
    pairs_table,
    plot_runs,
    unchecked_data,
)

PLOT_NAME = "compare.png"
NUMBERS_NAME = "compare.json"


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
    try:
        if len(args.runs) < 2:
            raise UsageError("give two or more runs to compare")
        if args.labels is not None and len(args.labels) != len(args.runs):
            raise UsageError(f"--labels names {len(args.labels)} runs but {len(args.runs)} were given")
        if args.resamples <= 0:
            raise UsageError(f"--resamples {args.resamples} must be a positive integer")
        labels = args.labels or [None] * len(args.runs)
        runs = [load_eval_run(path, label) for path, label in zip(args.runs, labels, strict=True)]
        runs = runs if args.labels else _named(runs)
        problems = comparison_problems(runs)
        if problems and not args.force:
            raise UsageError(f"runs cannot be compared: {'; '.join(problems)} (pass --force to compare anyway)")
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in unchecked_data(runs):
        print(f"note: {path}/summary.json records no data sha256 (an older run): its data was not checked")
    for problem in problems:
        print(f"warning (--force): {problem}")
    differences = [
        d
        for first, second in itertools.combinations(runs, 2)
        for d in paired_difference(first, second, args.metric, seed=args.seed, resamples=args.resamples)
    ]
    print(length_table(runs, args.metric))
    print()
    print(pairs_table(differences, args.metric))
    args.output_dir.mkdir(parents=True, exist_ok=True)
    numbers = {
        "metric": args.metric,
        "runs": {run.name: str(run.path) for run in runs},
        "pairs": [{k: _finite(v) for k, v in asdict(d).items()} for d in differences],
    }
    write_text_atomic(
        args.output_dir / NUMBERS_NAME, json.dumps(numbers, indent=2, allow_nan=False, default=str) + "\n"
    )
    plot_runs(runs, args.metric, args.output_dir / PLOT_NAME)
    print(f"plot: {args.output_dir / PLOT_NAME}  numbers: {args.output_dir / NUMBERS_NAME}")
    return 0


def _named(runs: list[EvalRun]) -> list[EvalRun]:
    """Runs named by mode and folder name, and by path where two folders share a name."""
    names = [run.name for run in runs]
    return [replace(run, name=f"{run.mode}: {run.path}") if names.count(run.name) > 1 else run for run in runs]


def _finite(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else value


if __name__ == "__main__":
    raise SystemExit(main())
