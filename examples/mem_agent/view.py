"""Turn a run into one HTML page that shows what the memory agent remembered, chunk by chunk.

    python -m mem_agent.view runs/eval -o eval.html                 # an evaluation folder
    python -m mem_agent.view $SAVE_PATH -o train.html               # a training run (trajectories/)
    python -m mem_agent.view runs/eval/trajectories_50.jsonl -o q.html
    python -m mem_agent.view runs/eval --only wrong --lengths 200   # the wrong answers at 200 docs
    python -m mem_agent.view runs/eval --ids 50:3 50:17             # questions 3 and 17 at 50 docs
    python -m mem_agent.view runs/ruler --only partial --lengths 8192   # partly right, every split at 8K

Per question: each memory with the words it added and dropped since the one before, the final
answer against the gold and its score by its suite's own metric (right, partial or wrong); per
suite its table; for a training run, curves over rollouts. The page is one
file that works offline; large runs are capped (--max-items, --max-turns), failures first, and the
page says what it left out.
Exit status: 0 written, 1 an I/O failure (a full disk), 2 bad usage or an unreadable run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.numbers import integer
from mem_agent.observability.page_selection import OUTCOMES, ViewChoice
from mem_agent.observability.run_page import PageRequest, write_run_page
from mem_agent.observability.viewer import ViewLimits


def build_parser() -> argparse.ArgumentParser:
    defaults = ViewLimits()
    parser = command_parser("mem_agent.view", __doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="a trajectory .jsonl file, an evaluation folder or a training folder")
    parser.add_argument(
        "-o", "--output", type=Path, default=Path("view.html"), help="page to write (default: %(default)s)"
    )
    parser.add_argument(
        "--max-items", type=integer(1), default=defaults.max_items, help="questions on the page (default: %(default)s)"
    )
    parser.add_argument(
        "--max-turns",
        type=integer(1),
        default=defaults.max_turns,
        help="memory turns shown per question, the first and last halves (default: %(default)s)",
    )
    parser.add_argument("--only", choices=OUTCOMES, default=None, help="only the questions with this outcome")
    parser.add_argument(
        "--lengths",
        nargs="+",
        default=(),
        metavar="N",
        help="only these sections of an evaluation: a label (50, niah_single_1_8192) or a length (8192: every split)",
    )
    parser.add_argument(
        "--ids", nargs="+", default=(), metavar="ID", help="only these questions: ID, or LABEL:ID for one section"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing file that is not a page of ours")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    choice = ViewChoice(args.only, tuple(args.lengths), tuple(args.ids))
    request = PageRequest(args.path, args.output, ViewLimits(args.max_items, args.max_turns), choice, args.force)
    return command_status(lambda: write_run_page(request), where=request.output)


if __name__ == "__main__":
    raise SystemExit(main())
