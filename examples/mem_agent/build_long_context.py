"""Build RULER-HQA-shaped evaluation files of any length from raw multi-hop QA data.

    python -m mem_agent.build_long_context --input hotpot_dev.json --num-docs 50 200 800 --out-dir data/

Each output item is `{"index", "input", "answers", "context", "num_docs"}`, as in MemAgent's
eval_<N>.json. A context holds the question's own paragraphs (its two gold paragraphs and its
distractors) plus paragraphs of other questions until there are N documents, shuffled with a
fixed seed and rendered `Document i:\\n<title>\\n<text>`, joined by blank lines.

Rules, so the files are reproducible and honest:
- the same input, arguments and seed give byte-identical files; each question draws from its own
  seeded generator, so item k does not change when --num-questions grows;
- filler paragraphs never repeat one of the question's own titles, and repeat each other only
  when the pool of distinct paragraphs is smaller than N (then the pool is reused in a fresh
  shuffle, which is reported in the summary);
- with N below the question's own paragraph count, its supporting paragraphs are kept first.
- input with no paragraph outside some question's own (one question, say) is refused: an item
  never claims N documents while holding fewer;
- a row that repeats an earlier one (the same question, answers and paragraphs) is named and left
  out, so no question counts twice in a file's accuracy (`--keep-repeats` keeps it);
- no output is the input itself, `--force` or not.
Items are written one at a time (an eval_6400 file is about 450 MB), to a temporary file that
replaces the output only when complete.

Above 10,000 documents (or with --layout index) a context is written as MemAgent writes its
eval_12800/25600.json: `context` is a list of positions in the input's own documents, de-duplicated
and sorted, so the input is the corpus the evaluator rebuilds the text from (--corpus); see
data/index_files.py for that layout's rules.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.numbers import SEED_LIMIT, integer, seed
from mem_agent.data.ruler_files import LongContextRequest, write_long_context_files


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.build_long_context", __doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, required=True, help="raw QA file: JSON array or JSON Lines")
    parser.add_argument(
        "--num-docs", type=integer(1), nargs="+", required=True, help="documents per context, one file each"
    )
    parser.add_argument("--num-questions", type=integer(1), default=128, help="questions per file (default: 128)")
    parser.add_argument("--seed", type=seed, default=42, help=f"shuffle seed, 0 to {SEED_LIMIT} (default: 42)")
    parser.add_argument("--out-dir", type=Path, required=True, help="folder for eval_<N>.json")
    parser.add_argument("--force", action="store_true", help="overwrite existing output files")
    parser.add_argument(
        "--layout",
        choices=("auto", "text", "index"),
        default="auto",
        help="contexts as text, or as positions in the input's documents (auto: index above 10,000 documents)",
    )
    parser.add_argument(
        "--keep-repeats",
        action="store_true",
        help="write a question that repeats an earlier row (default: leave it out; either way it is named)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    request = LongContextRequest(**{**vars(args), "num_docs": tuple(args.num_docs)})  # the flags are its fields
    return command_status(lambda: write_long_context_files(request), mistakes=(DataFormatError,))


if __name__ == "__main__":
    raise SystemExit(main())
