"""RULER-HQA eval files: which ones to run, and their items, validated as they stream past.

An eval file is a JSON array of items with `context`, `input` (the question), `answers` and an
optional `index` (MemAgent's `eval_<N>.json`, N documents per context). A 6400-document file is
about 450 MB, so it is never loaded whole: items are read one at a time, and a malformed one stops
the run with its file, position and field (exit 2) instead of being scored as wrong.

Beyond 10,000 documents (MemAgent's eval_12800/25600.json) `context` is a list of positions in the
HotpotQA dev corpus (data/hotpot_corpus.py), read from `--corpus` (default: hotpotqa_dev.json beside
the eval file); the item keeps the positions and its text is rebuilt only when it is tokenised.
Every position must lie in the corpus; an item that names its corpus (`corpus_documents`,
`corpus_sha256`, as our builder writes) must be given that corpus, and one that does not (MemAgent's
own files) a corpus of the dev file's 66,635 documents.

    python -m mem_agent.evaluation.files --check eval_50.json
        prints the item count, or a one-line error (exit 2) by the rules the evaluator reads the
        file with, as prepare-eval-data.sh (launch/eval_data.py) checks every file it finds, fetches
        or builds.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.jsonstream import DataFormatError, iter_json_array
from mem_agent.common.usage import UsageError
from mem_agent.data.hotpot_corpus import CORPUS_NAME, HOTPOTQA_DEV_DOCUMENTS, Corpus, read_corpus
from mem_agent.evaluation.ruler_items import RulerName, iter_ruler_records, ruler_file_name, ruler_name

if TYPE_CHECKING:
    from mem_agent.evaluation.request import EvalRequest

RULER_HQA_LENGTHS = (50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600)


@dataclass(frozen=True)
class EvalFile:
    path: Path
    label: str  # "50" for eval_50.json: the number of documents per context
    limit: int | None = None  # only the first `limit` items
    corpus: Path | None = None  # for index contexts (default: hotpotqa_dev.json beside the file)

    @property
    def results_name(self) -> str:
        return f"results_{self.label}.jsonl"

    @property
    def corpus_path(self) -> Path:
        return self.corpus if self.corpus is not None else self.path.parent / CORPUS_NAME

    @property
    def ruler(self) -> RulerName | None:
        """The RULER general split and length (eval_<split>_<length>.json); None for RULER-HQA."""
        return ruler_name(self.path)


@dataclass
class EvalItem:
    file: EvalFile
    item_id: str
    question: str
    answers: list[str]
    context: str  # the text; empty once tokenised, or for an index item until `text()` builds it
    positions: np.ndarray | None = None  # an index item's documents in the corpus
    corpus: Corpus | None = None

    def text(self) -> str:
        """The context as the agent reads it: an index item's documents rendered here, on demand."""
        if self.positions is None or self.corpus is None:
            return self.context
        return self.corpus.render(self.positions.tolist())


def load_corpus(path: Path) -> Corpus:
    """The corpus, read once per process while the file is unchanged (the check before a run and
    the run share it)."""
    try:
        stat = path.stat()
    except OSError:
        raise DataFormatError(
            f"{path}: not found: index-layout eval files need the HotpotQA dev corpus (--corpus FILE,"
            f" by default {CORPUS_NAME} beside the eval file; prepare-eval-data.sh fetches it)"
        ) from None
    return _read_corpus_once(path.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=2)
def _read_corpus_once(path: Path, mtime_ns: int, size: int) -> Corpus:
    return read_corpus(path)


def label_of(path: Path) -> str:
    if (name := ruler_name(path)) is not None:
        return name.label
    match = re.fullmatch(r"eval_(\d+)", path.stem)
    return match.group(1) if match else path.stem


def iter_items(file: EvalFile) -> Iterator[EvalItem]:
    """Items of an eval file, validated as they stream past; a bad one stops the run (exit 2)."""
    if file.ruler is not None:
        for position, (item_id, question, outputs, context) in enumerate(iter_ruler_records(file.path, file.ruler)):
            if file.limit is not None and position >= file.limit:
                return
            yield EvalItem(file, item_id, question, outputs, context)
        return
    for position, raw in enumerate(iter_json_array(file.path)):
        if file.limit is not None and position >= file.limit:
            return
        where = f"{file.path}: item {position}"
        if not isinstance(raw, dict):
            raise DataFormatError(f"{where}: expected an object, got {type(raw).__name__}")
        if not isinstance(raw.get("input"), str):
            raise DataFormatError(f"{where}: field 'input' must be a string")
        answers = raw.get("answers")
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
            raise DataFormatError(f"{where}: field 'answers' must be a non-empty list of strings")
        item = EvalItem(file, str(raw.get("index", position)), raw["input"], list(answers), "")
        if isinstance(raw.get("context"), list):
            item.corpus = load_corpus(file.corpus_path)
            item.positions = _positions(raw, item.corpus, where)
        elif not isinstance(raw.get("context"), str):
            raise DataFormatError(f"{where}: field 'context' must be a string or a list of document positions")
        elif not raw["context"].strip():
            raise DataFormatError(f"{where}: field 'context' is empty")
        else:
            item.context = raw["context"]
        yield item


def _positions(raw: dict[str, Any], corpus: Corpus, where: str) -> np.ndarray:
    """An index item's positions, each checked to lie in `corpus`, and the corpus checked to be its own."""
    context = raw["context"]
    if not context or not all(type(p) is int for p in context):
        raise DataFormatError(f"{where}: field 'context' must be a non-empty list of integer document positions")
    positions = np.asarray(context, dtype=np.int64)
    size, named = len(corpus), raw.get("corpus_documents", HOTPOTQA_DEV_DOCUMENTS)
    if named != size:
        raise DataFormatError(f"{where}: points into a corpus of {named} documents; {corpus.path} holds {size}")
    sha = raw.get("corpus_sha256")
    if sha is not None and sha != corpus.sha256:
        raise DataFormatError(f"{where}: points into a corpus of sha256 {sha}; {corpus.path} has {corpus.sha256}")
    if positions.min() < 0 or positions.max() >= size:
        bad = int(positions[(positions < 0) | (positions >= size)][0])
        outside = f"outside {corpus.path} ({size} documents)"
        raise DataFormatError(f"{where}: field 'context' holds position {bad}, {outside}")
    return positions


def check_eval_file(path: Path, corpus: Path | None = None) -> list[str]:
    """The item ids of a whole eval file, every item checked by the rules the run reads it with.

    The one checker of eval files: the evaluator (also its `--check`, before any server starts)
    and prepare-eval-data.sh (launch/eval_data.py, in-process; `python -m mem_agent.evaluation.files
    --check FILE` for a person) both call it.
    Streamed, one item in memory at a time; a file with no items is an error, since a run over it
    would report success having evaluated nothing."""
    path = Path(path)
    try:
        if path.stat().st_size == 0:
            raise DataFormatError(f"{path}: is empty (0 bytes): an eval file is a JSON array of items")
    except OSError as error:
        raise DataFormatError(f"{path}: cannot read: {error.strerror}") from None
    ids = [item.item_id for item in iter_items(EvalFile(path, label_of(path), corpus=corpus))]
    if not ids:
        raise DataFormatError(f"{path}: holds no items (an empty array)")
    return ids


def corpus_of(file: EvalFile) -> str | None:
    """The sha256 of the corpus an index-layout file's first item is rebuilt from; None for text files."""
    for item in iter_items(EvalFile(file.path, file.label, 1, file.corpus)):
        return item.corpus.sha256 if item.corpus is not None else None
    return None


def file_sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks (a 6400-document file is ~450 MB): summary.json records
    it, so results are only reused, and runs only compared, over the same data."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def resolve_files(request: EvalRequest, *, allow_missing: bool = False) -> list[EvalFile]:
    """The files the arguments name. With `allow_missing` (the evaluator's --check, run before
    the demo makes its data) files and a --data-root not made yet, or none named, are no error."""
    paths = list(request.data)
    root = request.data_root
    if root is not None:
        if not root.is_dir() and not (allow_missing and request.lengths and not root.exists()):
            raise UsageError(f"--data-root {root} is not a folder")
        lengths = request.lengths or [n for n in RULER_HQA_LENGTHS if (root / f"eval_{n}.json").is_file()]
        paths += [root / f"eval_{n}.json" for n in lengths]
    paths += _ruler_paths(request, allow_missing)
    if not paths and not allow_missing:
        raise UsageError(
            "nothing to evaluate: pass --data FILE ..., --data-root DIR or --ruler-root DIR (see prepare-eval-data.sh)"
        )
    missing = [str(path) for path in paths if not path.is_file()]
    if missing and not allow_missing:
        raise UsageError(f"eval file(s) not found: {', '.join(missing)}")
    files = [EvalFile(path, label_of(path), request.limit, request.corpus) for path in paths]
    if len({file.label for file in files}) != len(files):
        raise UsageError("two eval files would share one results file; give files with distinct names")
    return files


def _ruler_paths(request: EvalRequest, allow_missing: bool) -> list[Path]:
    """--ruler-root's files: every split x length asked for, or without either list every
    eval_<split>_<length>.json the folder holds (splits in RULER's order, then lengths)."""
    root = request.ruler_root
    if root is None:
        return []
    if not root.is_dir():
        if allow_missing and request.ruler_splits and request.ruler_lengths and not root.exists():
            return [root / ruler_file_name(s, n) for s in request.ruler_splits for n in request.ruler_lengths]
        raise UsageError(f"--ruler-root {root} is not a folder")
    present = sorted(
        (name for path in root.glob("eval_*.json") if (name := ruler_name(path)) is not None),
        key=lambda name: (RULER_SPLITS.index(name.split), name.length),
    )
    splits = request.ruler_splits or list(dict.fromkeys(name.split for name in present))
    lengths = request.ruler_lengths or sorted({name.length for name in present})
    return [root / ruler_file_name(split, length) for split in splits for length in lengths]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mem_agent.evaluation.files", description="Check a RULER-HQA eval file by the evaluator's rules."
    )
    parser.add_argument("--check", type=Path, required=True, help="eval file to check (eval_<N>.json)")
    parser.add_argument(
        "--corpus", type=Path, default=None, help=f"for index contexts (default: {CORPUS_NAME} beside the file)"
    )
    args = parser.parse_args(argv)
    try:
        print(len(check_eval_file(args.check, args.corpus)))
    except DataFormatError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
