"""Eval files of every suite: which ones a run names, their items, and the one identity rule.

Each suite (evaluation/suites/) says how its files are named, found and read; this module holds
what is the same for all of them. `check_eval_file` reads a file in full by its suite's rules before
any server starts, and decides how its items are named: by the file's own ids where those are
unique, else by their position in the file (said once: MemAgent's merged RULER chunks restart
`index` at 0, RULER's niah records put the needle's position there), so that no two items ever share
a result. Items identical in question, document and answers are named as duplicates; both run.

    python -m mem_agent.evaluation.files --check eval_50.json
        prints the item count, or a one-line error (exit 2) by the rules the evaluator reads the
        file with, as prepare-eval-data.sh (evaluation/hqa_files.py) checks every file it finds, fetches
        or builds.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.guarded_files import open_regular
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.usage import UsageError
from mem_agent.data.hotpot_corpus import CORPUS_NAME
from mem_agent.evaluation.results import question_key
from mem_agent.evaluation.suites import SUITES, EvalFile, EvalItem, cell_of, suite_named
from mem_agent.evaluation.suites.base import repeated
from mem_agent.evaluation.suites.ruler_hqa import RULER_HQA_LENGTHS

if TYPE_CHECKING:
    from mem_agent.evaluation.request import EvalRequest

__all__ = ["RULER_HQA_LENGTHS", "EvalFile", "EvalItem", "FileItems", "check_eval_file", "iter_items"]


def eval_file(path: Path, limit: int | None = None, corpus: Path | None = None) -> EvalFile:
    return EvalFile(Path(path), cell_of(path), limit, corpus)


def iter_items(file: EvalFile) -> Iterator[EvalItem]:
    """Items of an eval file, validated as they stream past (a bad one stops the run, exit 2), each
    named by the file's identity rule (`file.by_position`, decided by `check_eval_file`)."""
    suite = suite_named(file.cell.suite)
    for position, item in enumerate(suite.read(file)):
        if file.limit is not None and position >= file.limit:
            return
        item.item_id = str(position) if file.by_position or item.own_id is None else item.own_id
        yield item


@dataclass(frozen=True)
class FileItems:
    """A whole file read by its suite: the name of every item, in file order, and what the
    identity rule had to say (empty: the file's own ids name its items)."""

    file: EvalFile  # `by_position` set where the file's own ids cannot name its items
    ids: list[str]
    notes: list[str]
    asks: list[str]  # each item's question_key, in file order: what a result reused for it must carry


def read_file_items(file: EvalFile) -> FileItems:
    """Every item of `file` checked by its suite's rules; one DataFormatError for the first bad one.
    Streamed, one item in memory at a time; a file with no items is an error, since a run over it
    would report success having evaluated nothing."""
    path = file.path
    try:
        if path.stat().st_size == 0:
            raise DataFormatError(f"{path}: is empty (0 bytes): an eval file holds items")
    except OSError as error:
        raise DataFormatError(f"{path}: cannot read: {error.strerror}") from None
    own: list[str | None] = []
    asks: list[str] = []
    first_seen: dict[str, int] = {}
    same: list[tuple[int, int]] = []
    for position, item in enumerate(iter_items(dataclasses.replace(file, limit=None, by_position=True))):
        own.append(item.own_id)
        asks.append(question_key(item.question, item.answers))
        key = hashlib.sha1(repr(item.identity()).encode("utf-8", "surrogatepass")).hexdigest()
        if key in first_seen:
            same.append((first_seen[key], position))
        else:
            first_seen[key] = position
    if not own:
        raise DataFormatError(f"{path}: holds no items")
    notes = []
    if repeated(own):
        distinct = len({value for value in own if value is not None})
        notes.append(
            f"{path.name}: its own ids name {distinct} of its {len(own)} items (repeated or missing),"
            " so every item is named by its position in the file (0, 1, ...)"
        )
        file = dataclasses.replace(file, by_position=True)
    if same:
        pairs = ", ".join(f"{a} and {b}" for a, b in same[:5]) + (" ..." if len(same) > 5 else "")
        notes.append(
            f"{path.name}: {len(same)} item(s) repeat an earlier one's question, document and answers"
            f" (positions {pairs}); each is run and counted"
        )
    ids = [str(n) for n in range(len(own))] if file.by_position else [str(value) for value in own]
    return FileItems(file, ids, notes, asks)


def check_eval_file(path: Path, corpus: Path | None = None) -> list[str]:
    """The item names of a whole eval file, every item checked by the rules the run reads it with.

    The one checker of eval files: the evaluator (also its `--check`, before any server starts)
    and prepare-eval-data.sh (evaluation/hqa_files.py, in-process; `python -m mem_agent.evaluation.files
    --check FILE` for a person) both call it."""
    return read_file_items(eval_file(path, corpus=corpus)).ids


def corpus_of(file: EvalFile) -> str | None:
    """The sha256 of the corpus an index-layout file's first item is rebuilt from; None for text files."""
    for item in iter_items(dataclasses.replace(file, limit=1)):
        return item.corpus.sha256 if item.corpus is not None else None
    return None


def file_sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks (a 6400-document file is ~450 MB): summary.json records
    it, so results are only reused, and runs only compared, over the same data."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def resolve_files(request: EvalRequest, *, allow_missing: bool = False) -> list[EvalFile]:
    """The files the arguments name: --data, then each suite's own flags. With `allow_missing` (the
    evaluator's --check, run before the demo makes its data) files and folders not made yet, or
    none named, are no error."""
    paths = list(request.data)
    for suite in SUITES:
        paths += suite.find(request, allow_missing=allow_missing)
    if not paths and not allow_missing:
        raise UsageError(
            "nothing to evaluate: pass --data FILE ..., --data-root DIR, --ruler-root DIR or --longbench-root DIR"
            " (see prepare-eval-data.sh)"
        )
    missing = [str(path) for path in paths if not path.is_file()]
    if missing and not allow_missing:
        raise UsageError(f"eval file(s) not found: {', '.join(missing)}")
    files = [eval_file(path, request.limit, request.corpus) for path in paths]
    labels = [file.label for file in files]
    if len(set(labels)) != len(files):
        twice = sorted({label for label in labels if labels.count(label) > 1})
        raise UsageError(
            f"two eval files would share one results file (results_{twice[0]}.jsonl); give files with distinct names"
        )
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("mem_agent.evaluation.files", "Check an eval file of any suite by the evaluator's rules.")
    parser.add_argument("--check", type=Path, required=True, help="eval file to check (eval_<N>.json, ...)")
    parser.add_argument(
        "--corpus", type=Path, default=None, help=f"for index contexts (default: {CORPUS_NAME} beside the file)"
    )
    args = parser.parse_args(argv)
    return command_status(lambda: print(len(check_eval_file(args.check, args.corpus))), mistakes=(DataFormatError,))


if __name__ == "__main__":
    raise SystemExit(main())
