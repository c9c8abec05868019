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

Sources: a JSON array or JSON Lines file, a parquet file (needs pyarrow: pip install
'mem-agent[data]'), or a Hugging Face dataset (`--hf-dataset hotpot_qa --hf-config distractor
--split train`, needs `datasets` and hub access). Output goes to a temporary file renamed into
place at the end; an existing output is kept unless `--force`. A malformed row stops the run with
a one-line error naming file, row and field (exit 2); rows with an empty answer are skipped and
counted.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from mem_agent.common.atomic_files import atomic_output
from mem_agent.common.console import program_name
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.data.contexts import choose_documents, render_context
from mem_agent.data.qa_rows import Paragraph, QaRow, iter_raw_rows, parse_row
from mem_agent.data.train_rows import output_row
from mem_agent.tokenization.tokenizer import TokenizerNotFoundError, encode, load_tokenizer


@dataclass
class Summary:
    written: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    context_tokens: list[int] = field(default_factory=list)
    short_rows: int = 0  # fewer documents than --num-docs: the filler pool ran out (metadata.num_docs says so)
    reused_fillers: int = 0  # the pool was too small to keep every filler distinct


def raw_rows(args: argparse.Namespace) -> Iterator[tuple[str, Any]]:
    """(where, raw row) from whichever source was given."""
    if args.hf_dataset:
        yield from _hf_rows(args.hf_dataset, args.hf_config, args.split)
    elif args.input.suffix == ".parquet":
        yield from _parquet_rows(args.input)
    else:
        yield from ((f"{args.input}: {where}", raw) for where, raw in iter_raw_rows(args.input))


def _parquet_rows(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataFormatError(f"{path}: reading parquet needs pyarrow: pip install 'mem-agent[data]'") from None
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as error:
        raise DataFormatError(f"{path}: cannot read as parquet: {error}") from None
    index = 0
    for batch in table.iter_batches(batch_size=1024):
        for raw in batch.to_pylist():
            yield f"{path}: row {index}", raw
            index += 1


def _hf_rows(name: str, config: str | None, split: str) -> Iterator[tuple[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise DataFormatError("--hf-dataset needs the datasets package: pip install 'mem-agent[data]'") from None
    try:
        stream = datasets.load_dataset(name, config, split=split, streaming=True)
        for index, raw in enumerate(stream):
            yield f"{name}/{split}: row {index}", raw
    except (OSError, ValueError, ConnectionError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DataFormatError(f"cannot load {name} ({split}) from the Hugging Face hub: {first_line}") from None


def iter_questions(args: argparse.Namespace, summary: Summary) -> Iterator[QaRow]:
    for position, (where, raw) in enumerate(raw_rows(args)):
        row = parse_row(raw, where, position)
        if not row.answers:
            summary.skipped["empty answer"] += 1
            continue
        if not row.paragraphs:
            summary.skipped["no paragraphs"] += 1
            continue
        yield row


def paragraph_pool(args: argparse.Namespace, size: int, seed: int) -> list[Paragraph]:
    """A seeded reservoir sample of distinct paragraphs over the whole source (first pass)."""
    rng = random.Random(seed)
    pool: list[Paragraph] = []
    seen_titles: set[str] = set()
    for row in iter_questions(args, Summary()):
        for paragraph in row.paragraphs:
            if paragraph.title in seen_titles:
                continue
            seen_titles.add(paragraph.title)
            if len(pool) < size:
                pool.append(paragraph)
            elif (slot := rng.randrange(len(seen_titles))) < size:
                pool[slot] = paragraph
    return pool


def write_rows(args: argparse.Namespace, pool: Sequence[Paragraph], tokenizer: Any, summary: Summary) -> None:
    with atomic_output(args.output) as handle:
        for row in tqdm(iter_questions(args, summary), desc="rows", unit="row", total=args.max_rows, disable=None):
            rng = random.Random(f"{args.seed}:{row.row_id}")
            if args.num_docs:
                documents, reused = choose_documents(row, pool, args.num_docs, rng)
                summary.reused_fillers += int(reused)
                summary.short_rows += int(len(documents) < args.num_docs)
            else:
                documents = list(row.paragraphs)
            context = render_context(documents)
            handle.write(json.dumps(output_row(row, context, len(documents)), ensure_ascii=False) + "\n")
            summary.written += 1
            if tokenizer is not None:
                summary.context_tokens.append(len(encode(tokenizer, context)))
            if args.max_rows and summary.written >= args.max_rows:
                break
        if not summary.written:  # raising here keeps any earlier output file untouched
            raise DataFormatError(f"no usable rows in the source ({_skipped_in_words(summary.skipped)})")


def _skipped_in_words(skipped: Counter[str]) -> str:
    """`3 rows skipped: empty answer; 1 row skipped: no paragraphs`, or `the source has no rows`."""
    if not skipped:
        return "the source has no rows"
    return "; ".join(
        f"{count} {'row' if count == 1 else 'rows'} skipped: {reason}" for reason, count in sorted(skipped.items())
    )


def print_summary(args: argparse.Namespace, summary: Summary) -> None:
    print(f"wrote {summary.written} rows to {args.output}")
    for reason, count in sorted(summary.skipped.items()):
        print(f"skipped {count} rows: {reason}")
    if summary.short_rows or summary.reused_fillers:
        print(
            f"filler pool too small: {summary.short_rows} rows have fewer than {args.num_docs} documents,"
            f" {summary.reused_fillers} reuse fillers (raise --pool-size or use a larger source)"
        )
    if summary.context_tokens:
        p50, p90, p99 = np.percentile(summary.context_tokens, [50, 90, 99])
        print(f"context tokens: p50 {p50:,.0f}  p90 {p90:,.0f}  p99 {p99:,.0f}  max {max(summary.context_tokens):,}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("mem_agent.prepare_data"),
        description="Convert HotpotQA-style rows into the trainer's JSONL (prompt, label, metadata.context).",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", type=Path, help="JSON array, JSON Lines or .parquet file of QA rows")
    source.add_argument("--hf-dataset", help="Hugging Face dataset name, e.g. hotpot_qa (needs hub access)")
    parser.add_argument("--hf-config", default=None, help="dataset config, e.g. distractor (default: none)")
    parser.add_argument("--split", default="train", help="dataset split (default: train)")
    parser.add_argument("--output", type=Path, required=True, help="JSONL file to write")
    parser.add_argument(
        "--num-docs", type=int, default=0, help="documents per context, 0 = own paragraphs only (default: 0)"
    )
    parser.add_argument(
        "--pool-size", type=int, default=200_000, help="filler paragraphs kept in memory (default: 200000)"
    )
    parser.add_argument("--max-rows", type=int, default=None, help="stop after this many rows (default: all)")
    parser.add_argument("--seed", type=int, default=42, help="seed for fillers and their order (default: 42)")
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="model folder or bundled:qwen3: report context token percentiles (default: none, no token counts)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file (default: refuse)")
    return parser


def _tokenizer(path: str) -> Any:
    try:
        return load_tokenizer(path)
    except TokenizerNotFoundError as error:
        raise DataFormatError(f"--tokenizer {path}: {error}") from None
    except (OSError, ValueError) as error:  # a folder without usable tokenizer files
        message = " ".join(str(error).split()) or type(error).__name__  # the whole message, on one line
        raise DataFormatError(f"--tokenizer {path}: cannot load a tokenizer: {message}") from None


def _check_arguments(args: argparse.Namespace) -> None:
    """Every problem of the flags at once, each by its flag. The output's folder must exist: a
    mistyped path is reported, never made."""
    problems = []
    if args.num_docs < 0:
        problems.append(f"--num-docs {args.num_docs} must be >= 0")
    if args.pool_size <= 0:
        problems.append(f"--pool-size {args.pool_size} must be positive")
    if args.max_rows is not None and args.max_rows <= 0:
        problems.append(f"--max-rows {args.max_rows} must be positive")
    if args.output.is_dir():
        problems.append(f"--output {args.output} is a folder, not a file")
    elif args.output.exists() and not args.force:
        problems.append(f"refusing to overwrite {args.output} (pass --force)")
    elif not args.output.parent.is_dir():
        problems.append(f"--output {args.output}: folder {args.output.parent} does not exist (make it first)")
    if problems:
        raise DataFormatError("; ".join(problems))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    summary = Summary()
    try:
        _check_arguments(args)
        tokenizer = _tokenizer(args.tokenizer) if args.tokenizer else None
        pool = paragraph_pool(args, args.pool_size, args.seed) if args.num_docs else []
        write_rows(args, pool, tokenizer, summary)
    except DataFormatError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # mostly the output side (disk full, no permission): name the file it hit
        print(f"error: {error.filename or args.output}: {error.strerror or error}", file=sys.stderr)
        return 2
    print_summary(args, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
