"""RULER general eval files (`eval_<split>_<length>.json`): their names and their items.

MemAgent's RULER files are JSON arrays of RULER's records: `input` (the question, with RULER's
task wording), `outputs` (the reference strings), `context` (the haystack as text, or for `qa_*`
a list of document indices into the dataset's corpus, data/ruler_corpus.py), and optional
`index`, `length` and `answer_prefix`. RULER's own generator writes the same records one per
line (JSONL); both are read, streamed, one item at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.jsonstream import DataFormatError, iter_json_array
from mem_agent.data.ruler_corpus import corpus_documents, corpus_path, render_indexed

_NAME = re.compile(rf"eval_({'|'.join(RULER_SPLITS)})_([1-9][0-9]*)")


@dataclass(frozen=True)
class RulerName:
    split: str
    length: int  # RULER's max_seq_length, in the tokens of the tokenizer that made the file

    @property
    def label(self) -> str:
        return f"{self.split}_{self.length}"


def ruler_name(path: Path) -> RulerName | None:
    """The split and length of `eval_<split>_<length>.json`; None for any other name."""
    match = _NAME.fullmatch(Path(path).stem)
    return RulerName(match.group(1), int(match.group(2))) if match else None


def ruler_file_name(split: str, length: int) -> str:
    return f"eval_{split}_{length}.json"


def _records(path: Path) -> Iterator[Any]:
    try:
        with Path(path).open("rb") as handle:
            first = handle.read(64).lstrip()[:1]
    except OSError as error:
        raise DataFormatError(f"{path}: cannot read: {error.strerror}") from None
    if first != b"{":
        yield from iter_json_array(path)
        return
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError as error:
                    raise DataFormatError(f"{path}: line {number} is not JSON ({error})") from None


def iter_ruler_records(path: Path, name: RulerName) -> Iterator[tuple[str, str, list[str], str]]:
    """(id, question, references, context text) of each item, validated as it streams past."""
    for position, raw in enumerate(_records(path)):
        where = f"{path}: item {position}"
        if not isinstance(raw, dict):
            raise DataFormatError(f"{where}: expected an object, got {type(raw).__name__}")
        if not isinstance(raw.get("input"), str) or not raw["input"].strip():
            raise DataFormatError(f"{where}: field 'input' must be a non-empty string")
        outputs = raw.get("outputs")
        if not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) and o for o in outputs):
            raise DataFormatError(f"{where}: field 'outputs' must be a non-empty list of non-empty strings")
        yield (
            str(raw.get("index", position)),
            raw["input"],
            list(outputs),
            _context(raw.get("context"), path, name, where),
        )


def _context(context: Any, path: Path, name: RulerName, where: str) -> str:
    if isinstance(context, str):
        if not context.strip():
            raise DataFormatError(f"{where}: field 'context' is empty")
        return context
    indices = isinstance(context, list) and context and all(type(i) is int and i >= 0 for i in context)
    if not indices:
        raise DataFormatError(f"{where}: field 'context' must be text, or (qa_1, qa_2) a list of document indices")
    if name.split not in ("qa_1", "qa_2"):
        raise DataFormatError(f"{where}: field 'context' is a list of indices, which only qa_1 and qa_2 files hold")
    return render_indexed(corpus_documents(corpus_path(path, name.split), name.split), context, where)
