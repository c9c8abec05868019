"""Reward and accuracy per rollout of a training run, as CSV and PNG.

    python -m mem_agent.train_summary SAVE_PATH [--output-dir DIR] [--no-plot]

SAVE_PATH is the trainer's --save folder (the launch script's SAVE_PATH): the rollout log hook
(mem_agent.rollout_log) appends every rollout's metrics to SAVE_PATH/trajectories/metrics.jsonl.
Writes train_summary.csv (one row per rollout), eval_summary.csv (one row per evaluation and eval
set, when the run evaluated) and train_summary.png. Safe to run while training goes on.
Exit status: 0 written, 1 an I/O failure (a full disk), 2 bad usage or no metrics yet.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.observability.training_curves import CurvesRequest, summarize_training_run


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.train_summary", __doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="the trainer's --save folder (or its trajectories/ folder)")
    parser.add_argument(
        "--output-dir", type=Path, default=None, help="where to write (default: the folder holding metrics.jsonl)"
    )
    parser.add_argument("--no-plot", action="store_true", help="write the CSV tables only (default: off)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    request = CurvesRequest(args.run_dir, args.output_dir, plot=not args.no_plot)
    return command_status(lambda: summarize_training_run(request))


if __name__ == "__main__":
    raise SystemExit(main())
