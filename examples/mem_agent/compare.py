"""Compare evaluation runs: accuracy per length, one overlaid plot, and paired differences.

    python -m mem_agent.compare runs/memagent runs/direct
    python -m mem_agent.compare runs/a runs/b runs/c --metric f1 --labels base rl rl-long

    python -m mem_agent.compare runs/memagent --paper memagent-v1-ruler-hqa:RL-MemAgent-7B

Each RUN is an evaluator output folder (summary.json and results_<label>.jsonl) of any suite
(RULER-HQA, RULER, LongBench QA). Prints a table per suite of each cell's metric and items for
every run (and the share of context a direct run cut), then for each pair of runs, per cell both
hold and per suite (its shared items pooled), the mean per-item difference on the items both
answered, with a 95% bootstrap interval, each run's mean on those items and its own full-set
figure; then the settings that differ and, per pair, the items one run scored above the other,
with the `view` command that opens them. Writes the plot and the numbers to --output-dir. Warns
when item sets differ, a suite is in one run only, or a folder is given twice. Runs over different
data (an eval file's sha256) or scoring rules are refused unless --force, runs without an item in
common always. With --paper (one run is enough) the runs are also set beside a published table
(evaluation/paper_tables.json: MemAgent's, with their sources): per column the run's number, items
and 95% interval, the paper's number, items and interval, the difference, whether the run read
the paper's files, and each run's protocol differences.
Exit status: 0 compared, 1 an I/O failure (a full disk), 2 bad usage or runs that cannot be
compared.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.numbers import SEED_LIMIT, integer, seed
from mem_agent.observability.comparison import METRICS, ComparisonRequest
from mem_agent.observability.paper_comparison import compare_with_papers

# Each interval draws resamples x items indices: 10,000 (the default) is plenty, a million is the most taken.
MAX_RESAMPLES = 1_000_000


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.compare", __doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="evaluation output folders, two or more")
    parser.add_argument("--labels", nargs="+", default=None, help="names for the runs (default: mode: folder name)")
    parser.add_argument(
        "--metric",
        choices=METRICS,
        default="headline",
        help="headline: each cell's own metric (RULER-HQA sub_em, RULER string_match_all or sub_em, LongBench"
        " qa_f1); sub_em, em, f1 or strict: that metric for RULER-HQA, the headline elsewhere; ruler_average:"
        " the headline, as --paper memagent-v1-ruler-average takes it (default: %(default)s)",
    )
    parser.add_argument(
        "--output-dir", type=Path, default=Path("runs/compare"), help="plot and numbers folder (default: %(default)s)"
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help=f"bootstrap seed, 0 to {SEED_LIMIT} (default: %(default)s)"
    )
    parser.add_argument(
        "--resamples",
        type=integer(1, MAX_RESAMPLES),
        default=10_000,
        help=f"bootstrap resamples per interval, at most {MAX_RESAMPLES:,} (default: %(default)s)",
    )
    parser.add_argument("--force", action="store_true", help="compare runs over different data or scoring rules")
    parser.add_argument(
        "--paper",
        action="append",
        default=[],
        metavar="TABLE[:ROW]",
        help="also set the runs beside a published table, e.g. memagent-v1-ruler-hqa or"
        " memagent-v1-ruler-hqa:RL-MemAgent-7B (repeatable; the tables: docs/evaluation.md)",
    )
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
    return command_status(lambda: _compare(request, args.paper))


def _compare(request: ComparisonRequest, papers: list[str]) -> None:
    try:
        compare_with_papers(request, papers)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (| head): every file is written, the rest is unwanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's own flush is quiet


if __name__ == "__main__":
    raise SystemExit(main())
