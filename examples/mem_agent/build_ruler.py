"""Build RULER general-task eval files with our own generator, sized by the policy's tokenizer.

    mem-agent build-ruler --out-dir data/ruler --splits niah_single_1 vt --lengths 8192 16384 \\
        --tokenizer /models/Qwen3-4B [--essay essays.txt] [--squad squad.json] [--hotpot hotpotqa_dev.json]

One `eval_<split>_<length>.json` per split and length, in the layout the evaluator reads; an
existing file is kept, never replaced. The essay haystack's sentences come from `--essay`, a text
you supply (RULER uses Paul Graham's essays); qa_1 needs `--squad` (SQuAD 2.0 layout) and qa_2
`--hotpot` (HotpotQA rows). How the files are made: data/ruler_build.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.console import command_parser, command_status
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.numbers import SEED_LIMIT, integer, seed
from mem_agent.data.ruler_build import RulerBuildRequest, write_ruler_files


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.build_ruler", __doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", type=Path, required=True, help="folder for eval_<split>_<length>.json")
    parser.add_argument("--splits", nargs="+", choices=RULER_SPLITS, default=list(RULER_SPLITS), metavar="SPLIT")
    # --lengths and --num-samples: positive and bounded, checked with the sources (data/ruler_build.check_request)
    parser.add_argument(
        "--lengths",
        type=integer(),
        nargs="+",
        required=True,
        help="tokens per item, e.g. 8192 16384 (at most 4,194,304)",
    )
    parser.add_argument("--tokenizer", required=True, help="the policy's tokenizer (a model folder)")
    parser.add_argument(
        "--num-samples",
        type=integer(),
        default=128,
        help="items per file, at most 10,000 (default: 128, as MemAgent's)",
    )
    parser.add_argument("--seed", type=seed, default=42, help=f"generator seed, 0 to {SEED_LIMIT} (default: 42)")
    parser.add_argument("--essay", type=Path, help="a text file: the essay haystack's sentences")
    parser.add_argument("--squad", type=Path, help="SQuAD 2.0 layout JSON (qa_1)")
    parser.add_argument("--hotpot", type=Path, help="HotpotQA rows, JSON (qa_2)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    request = RulerBuildRequest(
        args.out_dir,
        tuple(dict.fromkeys(args.splits)),
        tuple(dict.fromkeys(args.lengths)),
        args.tokenizer,
        args.num_samples,
        args.seed,
        args.essay,
        args.squad,
        args.hotpot,
    )
    return command_status(lambda: write_ruler_files(request), mistakes=(DataFormatError,), where=request.out_dir)


if __name__ == "__main__":
    raise SystemExit(main())
