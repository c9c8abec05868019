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
place at the end; an existing output is kept unless `--force`. A malformed row stops the run with
a one-line error naming file, row and field (exit 2); rows with an empty answer are skipped and
counted. Runs as `python -m mem_agent.prepare_data` or as `python examples/mem_agent/prepare_data.py`.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run by its path: mem_agent is the folder beside this file's own
    import sys as _sys
    from pathlib import Path as _Path

    # sys.path[0] is this file's folder, whose modules would shadow top-level names: replace it.
    _sys.path[0] = str(_Path(__file__).resolve().parent.parent)

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
from mem_agent.data.authors_layout import AuthorsRow, Layout, LayoutGuard, parse_authors_row
from mem_agent.data.contexts import choose_documents, render_context
from mem_agent.data.qa_rows import Paragraph, QaRow, parse_row
from mem_agent.data.row_sources import SourceRow, datasets_rows, file_rows, hub_rows
from mem_agent.data.train_rows import authors_output_row, output_row
from mem_agent.tokenization.tokenizer import TokenizerNotFoundError, encode, load_tokenizer


@dataclass
class Summary:
    written: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    context_tokens: list[int] = field(default_factory=list)
    short_rows: int = 0  # fewer documents than --num-docs: the filler pool ran out (metadata.num_docs says so)
    reused_fillers: int = 0  # the pool was too small to keep every filler distinct


@dataclass(frozen=True)
class ReadRow:
    row: QaRow | AuthorsRow
    source: str
    index: int  # the row's position in its file


def raw_rows(args: argparse.Namespace) -> Iterator[SourceRow]:
    """Rows, each with its file, from whichever source was given."""
    if args.hf_dataset and args.hf_config:
        yield from datasets_rows(args.hf_dataset, args.hf_config, args.split)
    elif args.hf_dataset:
        yield from hub_rows(args.hf_dataset, args.split, args.hf_revision)
    else:
        yield from file_rows(args.input)


def iter_rows(args: argparse.Namespace, summary: Summary) -> Iterator[ReadRow]:
    """Parsed rows in the layout of their file; rows without an answer or a document are counted."""
    guards: dict[str, LayoutGuard] = {}
    for position, found in enumerate(raw_rows(args)):
        guard = guards.setdefault(found.source, LayoutGuard(found.source))
        row: QaRow | AuthorsRow
        if guard.check(found.raw, found.where) is Layout.AUTHORS:
            if args.num_docs:
                raise DataFormatError(
                    f"{found.source} is in MemAgent's training layout, whose contexts are already built: "
                    "--num-docs does not apply (drop it)"
                )
            row = parse_authors_row(found.raw, found.where, found.index)
        else:
            row = parse_row(found.raw, found.where, position)
        if not row.answers:
            summary.skipped["empty answer"] += 1
            continue
        if isinstance(row, QaRow) and not row.paragraphs:
            summary.skipped["no paragraphs"] += 1
            continue
        yield ReadRow(row, found.source, found.index)


def iter_questions(args: argparse.Namespace, summary: Summary) -> Iterator[QaRow]:
    """The raw QA rows (the filler pool's source)."""
    for read in iter_rows(args, summary):
        if isinstance(read.row, QaRow):
            yield read.row


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
        for read in tqdm(iter_rows(args, summary), desc="rows", unit="row", total=args.max_rows, disable=None):
            out = _training_row(args, read, pool, summary)
            handle.write(json.dumps(out, ensure_ascii=False) + "\n")
            summary.written += 1
            if tokenizer is not None:
                summary.context_tokens.append(len(encode(tokenizer, out["metadata"]["context"])))
            if args.max_rows and summary.written >= args.max_rows:
                break
        if not summary.written:  # raising here keeps any earlier output file untouched
            raise DataFormatError(f"no usable rows in the source ({_skipped_in_words(summary.skipped)})")


def _training_row(args: argparse.Namespace, read: ReadRow, pool: Sequence[Paragraph], summary: Summary) -> dict:
    row = read.row
    if isinstance(row, AuthorsRow):
        return authors_output_row(row, read.source, read.index)
    rng = random.Random(f"{args.seed}:{row.row_id}")
    if args.num_docs:
        documents, reused = choose_documents(row, pool, args.num_docs, rng)
        summary.reused_fillers += int(reused)
        summary.short_rows += int(len(documents) < args.num_docs)
    else:
        documents = list(row.paragraphs)
    return output_row(row, render_context(documents), len(documents))


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
