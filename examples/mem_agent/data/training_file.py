"""QA rows -> the trainer's JSONL for MemAgent training (the work of `python -m mem_agent.prepare_data`,
whose docstring describes the rows, the sources and the contexts).

Two passes over the source when `num_docs` asks for fillers: the first draws a seeded reservoir of
`pool_size` distinct paragraphs (memory stays bounded on the 90K-row train set), the second writes
the rows. Output goes to a temporary file renamed into place at the end, so a failed run keeps any
earlier output untouched, and never to the input itself (the same file by inode, `--force` or not).
A row that repeats an earlier one is named and left out unless `--keep-repeats`
(data/repeated_rows.py). Every problem of the request is reported at once, each by its flag.
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
from mem_agent.common.input_files import check_output, input_file, shown
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.paths import refuse_writing_inputs
from mem_agent.common.usage import UsageError, gather
from mem_agent.data.authors_layout import AuthorsRow, Layout, LayoutGuard, parse_authors_row
from mem_agent.data.contexts import MAX_CONTEXT_DOCUMENTS, choose_documents, render_context
from mem_agent.data.qa_rows import Paragraph, QaRow, parse_row
from mem_agent.data.repeated_rows import Repeats
from mem_agent.data.row_sources import HUB_ANSWER_S, SourceRow, datasets_rows, file_rows, hub_rows
from mem_agent.data.train_rows import authors_output_row, output_row
from mem_agent.tokenization.tokenizer import encode, load_given_tokenizer

__all__ = ["Summary", "TrainingFileRequest", "write_training_file"]

MAX_HUB_TIMEOUT_S = 86_400.0  # bound: --hub-timeout, a day


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
    keep_repeats: bool = False  # write a row that repeats an earlier one (it is named either way)


def write_training_file(request: TrainingFileRequest) -> Summary:
    """Check the request, write the rows and print the summary. UsageError: every problem of the
    flags at once; DataFormatError: the first of the source (nothing is written then); OSError:
    the file it hit."""
    _check_request(request)
    summary = Summary(Repeats(request.keep_repeats))
    tokenizer = load_given_tokenizer(request.tokenizer) if request.tokenizer else None
    pool = paragraph_pool(request) if request.num_docs else []
    write_rows(request, pool, tokenizer, summary)
    print_summary(request, summary)
    return summary


@dataclass
class Summary:
    repeats: Repeats
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
    """Parsed rows in the layout of their file; rows without an answer or a document are counted,
    and rows that repeat an earlier one named (and left out unless kept)."""
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
        if summary.repeats.is_dropped(row.content(), found.where):
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
    for row in iter_questions(request, Summary(Repeats(keep=True))):
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
    print(f"wrote {summary.written} rows to {shown(request.output)}")
    for reason, count in sorted(summary.skipped.items()):
        print(f"skipped {count} rows: {reason}")
    if repeats := summary.repeats.summary():
        print(repeats)
    if summary.short_rows or summary.reused_fillers:
        print(
            f"filler pool too small: {summary.short_rows} rows have fewer than {request.num_docs} documents,"
            f" {summary.reused_fillers} reuse fillers (raise --pool-size or use a larger source)"
        )
    if summary.context_tokens:
        p50, p90, p99 = np.percentile(summary.context_tokens, [50, 90, 99])
        print(f"context tokens: p50 {p50:,.0f}  p90 {p90:,.0f}  p99 {p99:,.0f}  max {max(summary.context_tokens):,}")


def _check_request(request: TrainingFileRequest) -> None:
    """Every problem of the flags at once, each by its flag (one UsageError)."""
    gather(lambda: _check_numbers(request), lambda: _check_source(request), lambda: _check_output(request))


def _check_numbers(request: TrainingFileRequest) -> None:
    problems = []
    if not 0 <= request.num_docs <= MAX_CONTEXT_DOCUMENTS:  # bound: MAX_CONTEXT_DOCUMENTS
        problems.append(f"--num-docs {request.num_docs} must be from 0 to {MAX_CONTEXT_DOCUMENTS:,}")
    if request.pool_size <= 0:
        problems.append(f"--pool-size {request.pool_size} must be positive")
    if request.max_rows is not None and request.max_rows <= 0:
        problems.append(f"--max-rows {request.max_rows} must be positive")
    if not 0 < request.hub_timeout_s <= MAX_HUB_TIMEOUT_S:  # bound: a wait past it overflows the thread's clock
        problems.append(
            f"--hub-timeout {request.hub_timeout_s:g} must be positive, at most {MAX_HUB_TIMEOUT_S:g} seconds"
        )
    if problems:
        raise UsageError(problems)


def _check_source(request: TrainingFileRequest) -> None:
    """A local input is a regular file; a hub dataset's name is not a local path (the hub library
    would answer that with its repository-id rules, which say nothing of --input)."""
    if request.input is not None:
        input_file(request.input, "--input")
        return
    name = str(request.hf_dataset)
    try:
        local = Path(name).expanduser()
        kind = "folder" if local.is_dir() else "file" if local.exists() else None
    except OSError:  # a name no file system holds: not a local path
        kind = None
    if kind is not None:
        use = "give one of its data files" if kind == "folder" else "give it"
        raise UsageError(
            f"--hf-dataset {shown(name)} is a local {kind}, not a hub dataset: {use} with --input"
            " (a JSON, JSON Lines or parquet file)"
        )
    if name.startswith(("/", ".", "~")) or "\\" in name:  # a hub id is namespace/name
        raise UsageError(f"--hf-dataset {shown(name)} is a path, and nothing is there: a local file goes to --input")


def _check_output(request: TrainingFileRequest) -> None:
    """The output's folder must exist (a mistyped path is reported, never made), and the output
    is never the input."""
    output = request.output
    check_output(output, "--output")
    if output.is_dir():
        raise UsageError(f"--output {shown(output)} is a folder, not a file")
    if request.input is not None:
        refuse_writing_inputs({"--output": [output]}, {"--input": request.input})
    if output.exists() and not request.force:
        raise UsageError(f"refusing to overwrite {shown(output)} (pass --force)")
    if not output.parent.is_dir():
        raise UsageError(f"--output {shown(output)}: folder {shown(output.parent)} does not exist (make it first)")
