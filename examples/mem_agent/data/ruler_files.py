"""RULER-HQA-shaped eval_<N>.json files from raw multi-hop QA rows: the work of
`python -m mem_agent.build_long_context`, whose docstring states the rules the files keep.

The questions and the paragraph pool are read once; each length is then one file, written item by
item to a temporary file that replaces the output only when complete, with one summary row
printed per file. An output is never the input itself (the same file by inode, `--force` or
not), and a question that repeats an earlier row is named and left out unless `--keep-repeats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from mem_agent.common.guarded_files import check_outputs
from mem_agent.common.input_files import check_name, check_output, input_file, shown
from mem_agent.common.jsonstream import DataFormatError, write_json_array_atomic
from mem_agent.common.paths import refuse_writing_inputs
from mem_agent.common.usage import UsageError
from mem_agent.data.contexts import MAX_CONTEXT_DOCUMENTS, BuildStats, build_items, load_questions
from mem_agent.data.index_files import INDEX_LAYOUT_ABOVE, write_index_files
from mem_agent.data.qa_rows import Paragraph, QaRow

__all__ = ["LongContextRequest", "write_long_context_files"]


@dataclass(frozen=True)
class LongContextRequest:
    """The raw QA file, the lengths (documents per context, one file each) and where they go."""

    input: Path
    num_docs: tuple[int, ...]
    num_questions: int
    seed: int
    out_dir: Path
    force: bool
    layout: str = "auto"  # text, index (positions in the input's sorted documents), or auto: index above 10,000
    keep_repeats: bool = False  # a question that repeats an earlier row is written all the same

    def is_index(self, num_docs: int) -> bool:
        return self.layout == "index" or (self.layout == "auto" and num_docs > INDEX_LAYOUT_ABOVE)


def write_long_context_files(request: LongContextRequest) -> None:
    """Check the request and the input, then write and report one file per length. A UsageError
    names a problem of the flags or a file that could not be written, a DataFormatError one of the
    input (nothing is written then)."""
    targets = _check_request(request)
    indexed = [(n, t) for n, t in zip(request.num_docs, targets, strict=True) if request.is_index(n)]
    if indexed:
        counts, paths = zip(*indexed, strict=True)
        try:
            write_index_files(request.input, counts, paths, request.num_questions, request.seed, request.keep_repeats)
        except OSError as error:
            raise UsageError(f"cannot write in {request.out_dir}: {error.strerror}") from None
    texts = [(n, t) for n, t in zip(request.num_docs, targets, strict=True) if not request.is_index(n)]
    if texts:
        _write_text_files(request, texts)


def _write_text_files(request: LongContextRequest, texts: list[tuple[int, Path]]) -> None:
    """The text layout: every context's documents written out."""
    loaded = load_questions(request.input, request.num_questions, request.keep_repeats)
    questions, pool = loaded.questions, loaded.pool
    if not questions:
        raise DataFormatError(f"{request.input}: no row with a question and a non-empty answer")
    _check_fillable(request.input, questions, pool, max(n for n, _ in texts))
    print(f"{len(questions)} questions, {len(pool)} distinct paragraphs, {loaded.skipped} rows skipped (empty answer)")
    if repeats := loaded.repeats.summary():
        print(repeats)
    print(f"{'docs':>6} | {'questions':>9} | {'mean chars':>10} | {'max chars':>10} | {'pool reused':>11} | file")
    for num_docs, target in texts:
        try:
            _write_file(target, questions, pool, num_docs, request.seed)
        except OSError as error:
            raise UsageError(f"cannot write {target}: {error.strerror}") from None  # the user's folder


def _check_request(request: LongContextRequest) -> list[Path]:
    """The output paths, once the flags are known to be usable and none of them is the input."""
    text_sizes = [n for n in request.num_docs if not request.is_index(n)]
    if any(n <= 0 for n in request.num_docs) or request.num_questions <= 0:
        raise UsageError("--num-docs and --num-questions must be positive integers")
    if any(n > MAX_CONTEXT_DOCUMENTS for n in text_sizes):  # bound: the index layout is bounded by its corpus
        raise UsageError(
            f"--num-docs {max(text_sizes)}: a context written as text holds at most {MAX_CONTEXT_DOCUMENTS:,}"
            " documents (--layout index writes positions instead)"
        )
    check_name(request.out_dir, "--out-dir")
    input_file(request.input, "--input")
    if request.out_dir.exists() and not request.out_dir.is_dir():
        raise UsageError(f"--out-dir {shown(request.out_dir)} is a file, not a folder")
    targets = [request.out_dir / f"eval_{n}.json" for n in request.num_docs]
    for target in targets:
        check_output(target, "--out-dir")
    refuse_writing_inputs({"--out-dir": targets}, {"--input": request.input})
    existing = [shown(t) for t in targets if t.exists()]
    if existing and not request.force:
        raise UsageError(f"refusing to overwrite {', '.join(existing)} (pass --force)")
    check_outputs(targets)  # a link or a FIFO at any of them: refused before the first is written
    return targets


def _check_fillable(path: Path, questions: Sequence[QaRow], pool: Sequence[Paragraph], num_docs: int) -> None:
    """Refuse input whose contexts cannot reach `num_docs` documents rather than write short ones.

    Every question's own paragraphs are in the pool, so fillers exist exactly when the pool holds
    a title outside the question's own.
    """
    titles = {p.title for p in pool}
    for index, row in enumerate(questions):
        own = {p.title for p in row.paragraphs} & titles
        if len(own) < num_docs and len(titles) == len(own):
            raise DataFormatError(
                f"{path}: question {index} has no paragraphs of other questions to fill {num_docs} documents"
                " (the file needs questions with different paragraphs)"
            )


def _write_file(target: Path, questions: Sequence[QaRow], pool: Sequence[Paragraph], num_docs: int, seed: int) -> None:
    """Write one eval file and print its summary row."""
    stats = BuildStats()
    items = build_items(questions, pool, num_docs, seed, stats)
    write_json_array_atomic(
        target, tqdm(items, total=len(questions), desc=f"eval_{num_docs}", leave=False, disable=None)
    )
    mean = sum(stats.context_chars) / max(len(stats.context_chars), 1)
    print(
        f"{num_docs:>6} | {stats.questions:>9} | {mean:>10,.0f} | {max(stats.context_chars):>10,}"
        f" | {stats.reused_pool:>11} | {target}"
    )
