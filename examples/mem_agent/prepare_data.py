"""HotpotQA (or 2WikiMultiHopQA) -> the trainer's JSONL for MemAgent training.

    python -m mem_agent.prepare_data --input hotpot_train_v1.1.json --output data/train.jsonl --num-docs 200

Each output line: `{"prompt": question, "label": first answer, "metadata": {"context": documents,
"ground_truth": all answers, "num_docs": n, "id": row id}}`, which the trainer reads with
`--input-key prompt --label-key label --metadata-key metadata`; the hooks find the document in
`metadata.context` and score against `metadata.ground_truth`.

Contexts are rendered like RULER-HQA's ("Document i:" + title + text). By default a row keeps its
own paragraphs; `--num-docs N` adds paragraphs of other rows up to N, as MemAgent's training data
(about 200 documents, ~30K tokens) does. Those fillers come from a seeded reservoir of
`--pool-size` paragraphs collected in a first pass, so memory stays bounded on the 90K-row train set.

MemAgent's own training and dev data (`BytedTsinghua-SIA/hotpotqa`, verl's row layout with
`prompt`, `context`, `reward_model`) is read as published: its contexts are already built and are
kept byte for byte with every ground truth, and each row records its file and row in
`metadata.source` (see mem_agent/data/authors_layout.py). A file's layout is recognised from its
first row; a file that mixes layouts stops at the first odd row.

Sources: a JSON array or JSON Lines file, a parquet file, or a Hugging Face dataset
(`--hf-dataset BytedTsinghua-SIA/hotpotqa --hf-split train`, or `dev`; files are fetched with
huggingface_hub, see mem_agent/data/row_sources.py; `--hf-config` reads a dataset's named
configuration through `datasets`, e.g. `--hf-dataset hotpot_qa --hf-config distractor`). These
need the `data` extra, installed by scripts/bootstrap.sh. Output goes to a temporary file renamed into
place at the end; an existing output is kept unless `--force`, and the input is never written over.
A malformed row stops the run with a one-line error naming file, row and field (exit 2); rows
with an empty answer are skipped and counted; a row that repeats an earlier one (the same
question, answers and documents) is named and left out unless `--keep-repeats`. Runs as
`python -m mem_agent.prepare_data` or as `python examples/mem_agent/prepare_data.py`.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run by its path: mem_agent is the folder beside this file's own
    import sys as _sys
    from pathlib import Path as _Path

    # sys.path[0] is this file's folder, whose modules would shadow top-level names: replace it.
    _sys.path[0] = str(_Path(__file__).resolve().parent.parent)

import argparse
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.numbers import SEED_LIMIT, integer, number, seed
from mem_agent.data.row_sources import HUB_ANSWER_S
from mem_agent.data.training_file import TrainingFileRequest, write_training_file


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.prepare_data", __doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input", type=Path, help="JSON array, JSON Lines or .parquet file of QA rows or MemAgent's training rows"
    )
    source.add_argument(
        "--hf-dataset", help="Hugging Face dataset, e.g. BytedTsinghua-SIA/hotpotqa (needs hub access; default: none)"
    )
    parser.add_argument(
        "--hf-config", default=None, help="named dataset configuration, read through datasets (default: none)"
    )
    parser.add_argument(
        "--split",
        "--hf-split",
        dest="split",
        default="train",
        help="hub dataset split: train, dev (= validation), or a word of its files' names (default: train)",
    )
    parser.add_argument(
        "--hf-revision", default=None, help="hub dataset branch, tag or commit (default: the main branch)"
    )
    parser.add_argument("--output", type=Path, required=True, help="JSONL file to write")
    parser.add_argument(
        "--num-docs", type=integer(0), default=0, help="documents per context, 0 = own paragraphs only (default: 0)"
    )
    parser.add_argument(
        "--pool-size", type=integer(1), default=200_000, help="filler paragraphs kept in memory (default: 200000)"
    )
    parser.add_argument("--max-rows", type=integer(1), default=None, help="stop after this many rows (default: all)")
    parser.add_argument(
        "--seed", type=seed, default=42, help=f"seed for fillers and their order, 0 to {SEED_LIMIT} (default: 42)"
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="model folder or bundled:qwen3: report context token percentiles (default: none, no token counts)",
    )
    parser.add_argument(
        "--hub-timeout",
        type=number(0, above=True),
        default=HUB_ANSWER_S,
        metavar="SECONDS",
        help="how long to wait for the hub's first answer (default: %(default)g)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file (default: refuse)")
    parser.add_argument(
        "--keep-repeats",
        action="store_true",
        help="write a row that repeats an earlier one (default: leave it out; either way it is named)",
    )
    return parser


def _request(args: argparse.Namespace) -> TrainingFileRequest:
    return TrainingFileRequest(
        output=args.output,
        input=args.input,
        hf_dataset=args.hf_dataset,
        hf_config=args.hf_config,
        split=args.split,
        hf_revision=args.hf_revision,
        num_docs=args.num_docs,
        pool_size=args.pool_size,
        max_rows=args.max_rows,
        seed=args.seed,
        tokenizer=args.tokenizer,
        force=args.force,
        hub_timeout_s=args.hub_timeout,
        keep_repeats=args.keep_repeats,
    )


def main(argv: Sequence[str] | None = None) -> int:
    request = _request(build_parser().parse_args(argv))
    return command_status(lambda: write_training_file(request), mistakes=(DataFormatError,), where=request.output)


if __name__ == "__main__":
    raise SystemExit(main())
