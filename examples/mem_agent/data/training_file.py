"""QA rows -> the trainer's JSONL for MemAgent training (the work of `python -m mem_agent.prepare_data`,
whose docstring describes the rows, the sources and the contexts).

Two passes over the source when `num_docs` asks for fillers: the first draws a seeded reservoir of
`pool_size` distinct paragraphs (memory stays bounded on the 90K-row train set), the second writes
the rows. Output goes to a temporary file renamed into place at the end, so a failed run keeps any
earlier output untouched. Every problem of the request is reported at once, each by its flag.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from mem_agent.common.guarded_files import atomic_output
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.data.authors_layout import AuthorsRow, Layout, LayoutGuard, parse_authors_row
from mem_agent.data.contexts import choose_documents, render_context
from mem_agent.data.qa_rows import Paragraph, QaRow, parse_row
from mem_agent.data.row_sources import HUB_ANSWER_S, SourceRow, datasets_rows, file_rows, hub_rows
from mem_agent.data.train_rows import authors_output_row, output_row
from mem_agent.tokenization.tokenizer import TokenizerNotFoundError, encode, load_tokenizer

__all__ = ["Summary", "TrainingFileRequest", "write_training_file"]


@dataclass(frozen=True)
class TrainingFileRequest:
    """What to read, how to build each context, and where to write: one field per prepare_data flag."""

    output: Path
    input: Path | None  # a file, or else hf_dataset names the source
    hf_dataset: str | None
    hf_config: str | None
    split: str
    hf_revision: str | None
    num_docs: int  # 0: each row keeps its own paragraphs
    pool_size: int
    max_rows: int | None
    seed: int
    tokenizer: str | None  # counts context tokens when given
    force: bool
    hub_timeout_s: float = HUB_ANSWER_S  # how long the hub's first answer is awaited


def write_training_file(request: TrainingFileRequest) -> Summary:
    """Check the request, write the rows and print the summary. DataFormatError: every problem of
    the flags at once, or the first of the source (nothing is written then); OSError: the file it hit."""
    summary = Summary()
    _check_request(request)
    tokenizer = _tokenizer(request.tokenizer) if request.tokenizer else None
    pool = paragraph_pool(request) if request.num_docs else []
    write_rows(request, pool, tokenizer, summary)
    print_summary(request, summary)
    return summary


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


def raw_rows(request: TrainingFileRequest) -> Iterator[SourceRow]:
    """Rows, each with its file, from whichever source was given."""
    if request.hf_dataset and request.hf_config:
        yield from datasets_rows(request.hf_dataset, request.hf_config, request.split, request.hub_timeout_s)
    elif request.hf_dataset:
        yield from hub_rows(request.hf_dataset, request.split, request.hf_revision, request.hub_timeout_s)
    else:
        yield from file_rows(request.input)


def iter_rows(request: TrainingFileRequest, summary: Summary) -> Iterator[ReadRow]:
    """Parsed rows in the layout of their file; rows without an answer or a document are counted."""
    guards: dict[str, LayoutGuard] = {}
    for position, found in enumerate(raw_rows(request)):
        guard = guards.setdefault(found.source, LayoutGuard(found.source))
        row: QaRow | AuthorsRow
        if guard.check(found.raw, found.where) is Layout.AUTHORS:
            if request.num_docs:
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


def iter_questions(request: TrainingFileRequest, summary: Summary) -> Iterator[QaRow]:
    """The raw QA rows (the filler pool's source)."""
    for read in iter_rows(request, summary):
        if isinstance(read.row, QaRow):
            yield read.row


def paragraph_pool(request: TrainingFileRequest) -> list[Paragraph]:
    """A seeded reservoir sample of distinct paragraphs over the whole source (first pass)."""
    rng, size = random.Random(request.seed), request.pool_size
    pool: list[Paragraph] = []
    seen_titles: set[str] = set()
    for row in iter_questions(request, Summary()):
        for paragraph in row.paragraphs:
            if paragraph.title in seen_titles:
                continue
            seen_titles.add(paragraph.title)
            if len(pool) < size:
                pool.append(paragraph)
            elif (slot := rng.randrange(len(seen_titles))) < size:
                pool[slot] = paragraph
    return pool


def write_rows(request: TrainingFileRequest, pool: Sequence[Paragraph], tokenizer: Any, summary: Summary) -> None:
    with atomic_output(request.output) as handle:
        for read in tqdm(iter_rows(request, summary), desc="rows", unit="row", total=request.max_rows, disable=None):
            out = _training_row(request, read, pool, summary)
            handle.write(json.dumps(out, ensure_ascii=False) + "\n")
            summary.written += 1
            if tokenizer is not None:
                summary.context_tokens.append(len(encode(tokenizer, out["metadata"]["context"])))
            if request.max_rows and summary.written >= request.max_rows:
                break
        if not summary.written:  # raising here keeps any earlier output file untouched
            raise DataFormatError(f"no usable rows in the source ({_skipped_in_words(summary.skipped)})")


def _training_row(request: TrainingFileRequest, read: ReadRow, pool: Sequence[Paragraph], summary: Summary) -> dict:
    row = read.row
    if isinstance(row, AuthorsRow):
        return authors_output_row(row, read.source, read.index)
    rng = random.Random(f"{request.seed}:{row.row_id}")
    if request.num_docs:
        documents, reused = choose_documents(row, pool, request.num_docs, rng)
        summary.reused_fillers += int(reused)
        summary.short_rows += int(len(documents) < request.num_docs)
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


def print_summary(request: TrainingFileRequest, summary: Summary) -> None:
    print(f"wrote {summary.written} rows to {request.output}")
    for reason, count in sorted(summary.skipped.items()):
        print(f"skipped {count} rows: {reason}")
    if summary.short_rows or summary.reused_fillers:
        print(
            f"filler pool too small: {summary.short_rows} rows have fewer than {request.num_docs} documents,"
            f" {summary.reused_fillers} reuse fillers (raise --pool-size or use a larger source)"
        )
    if summary.context_tokens:
        p50, p90, p99 = np.percentile(summary.context_tokens, [50, 90, 99])
        print(f"context tokens: p50 {p50:,.0f}  p90 {p90:,.0f}  p99 {p99:,.0f}  max {max(summary.context_tokens):,}")


def _tokenizer(path: str) -> Any:
    try:
        return load_tokenizer(path)
    except TokenizerNotFoundError as error:
        raise DataFormatError(f"--tokenizer {path}: {error}") from None
    except (OSError, ValueError) as error:  # a folder without usable tokenizer files
        message = " ".join(str(error).split()) or type(error).__name__  # the whole message, on one line
        raise DataFormatError(f"--tokenizer {path}: cannot load a tokenizer: {message}") from None


def _check_request(request: TrainingFileRequest) -> None:
    """Every problem of the flags at once, each by its flag. The output's folder must exist: a
    mistyped path is reported, never made."""
    problems = []
    if request.num_docs < 0:
        problems.append(f"--num-docs {request.num_docs} must be >= 0")
    if request.pool_size <= 0:
        problems.append(f"--pool-size {request.pool_size} must be positive")
    if request.max_rows is not None and request.max_rows <= 0:
        problems.append(f"--max-rows {request.max_rows} must be positive")
    if not 0 < request.hub_timeout_s < float("inf"):
        problems.append(f"--hub-timeout {request.hub_timeout_s:g} must be a positive number of seconds")
    if request.output.is_dir():
        problems.append(f"--output {request.output} is a folder, not a file")
    elif request.output.exists() and not request.force:
        problems.append(f"refusing to overwrite {request.output} (pass --force)")
    elif not request.output.parent.is_dir():
        problems.append(f"--output {request.output}: folder {request.output.parent} does not exist (make it first)")
    if problems:
        raise DataFormatError("; ".join(problems))
