"""The HotpotQA dev corpus that RULER-HQA's index-layout files point into, and their text rebuilt.

For more than 10,000 documents MemAgent's eval files (`eval_12800.json`, `eval_25600.json`) do not
hold text: an item's `context` is a list of positions in the dev file's documents, each
`title + "\\n" + "".join(sentences)` of every row's paragraphs, de-duplicated and sorted (its
`processing.read_hotpotqa`). The text is rebuilt the way its `ruler_hqa_over1m.py` does:
`Document i:\\n<document>` for i from 1, joined by blank lines. The same rule reads any file in
HotpotQA's layout, the synthetic set of data/synthetic.py included.

The corpus is read streamed, row by row (the dev file is ~46 MB of JSON); what stays is the
sorted documents, ~66,635 strings for the real one, and the file's sha256, which an eval file our
builder made names so that a run is refused over a different corpus.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import open_regular
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.data.qa_rows import iter_raw_rows

CORPUS_NAME = "hotpotqa_dev.json"  # the name MemAgent's scripts download the dev file to
HOTPOTQA_DEV_DOCUMENTS = 66635  # documents of hotpot_dev_distractor_v1.json (eval_66635.json is all of them)


@dataclass(frozen=True)
class CorpusQuestion:
    question: str
    answer: str
    documents: tuple[int, ...]  # its own paragraphs, as positions in the sorted corpus


@dataclass(frozen=True)
class Corpus:
    path: Path
    sha256: str
    documents: tuple[str, ...]  # sorted, distinct

    def __len__(self) -> int:
        return len(self.documents)

    def render(self, positions: Sequence[int]) -> str:
        """The context text of an index-layout item (positions already checked to be in range)."""
        return render_documents([self.documents[p] for p in positions])


def render_documents(documents: Sequence[str]) -> str:
    """MemAgent's context text of documents: `Document i:` (from 1) and the document, blank lines between."""
    return "\n\n".join(f"Document {number}:\n{document}" for number, document in enumerate(documents, start=1))


def read_corpus(path: Path) -> Corpus:
    """The sorted documents of a file in HotpotQA's layout; a DataFormatError names a bad row."""
    path = Path(path)
    documents = sorted({doc for row in _rows(path) for doc in row})
    if not documents:
        raise DataFormatError(f"{path}: holds no paragraphs (a HotpotQA file has 'context' in every row)")
    return Corpus(path, _sha256(path), tuple(documents))


def read_questions(path: Path, corpus: Corpus) -> Iterator[CorpusQuestion]:
    """Each row's question, answer and own documents, in file order (the builder's questions)."""
    position = {doc: index for index, doc in enumerate(corpus.documents)}
    for where, raw in iter_raw_rows(path):
        question, answer = raw.get("question"), raw.get("answer")
        if not isinstance(question, str) or not isinstance(answer, str):
            raise DataFormatError(f"{path}: {where}: needs string fields 'question' and 'answer'")
        own = dict.fromkeys(position[doc] for doc in _documents(raw, f"{path}: {where}"))
        yield CorpusQuestion(question, answer, tuple(own))


def _rows(path: Path) -> Iterator[list[str]]:
    for where, raw in iter_raw_rows(path):
        yield _documents(raw, f"{path}: {where}")


def _documents(raw: Any, where: str) -> list[str]:
    """MemAgent's document strings of one row: title, a newline, the sentences joined as they are."""
    if not isinstance(raw, dict):
        raise DataFormatError(f"{where}: expected an object, got {type(raw).__name__}")
    context = raw.get("context")
    if isinstance(context, dict):  # the Hugging Face layout (and data/synthetic.py's)
        titles, sentences = context.get("title"), context.get("sentences")
        pairs = list(zip(titles, sentences, strict=True)) if _same_length_lists(titles, sentences) else None
    elif isinstance(context, list):
        pairs = [tuple(pair) for pair in context if isinstance(pair, list | tuple) and len(pair) == 2]
        pairs = pairs if len(pairs) == len(context) else None
    else:
        pairs = None
    if not pairs or not all(_is_paragraph(title, text) for title, text in pairs):
        raise DataFormatError(f"{where}: field 'context' must be [title, [sentences]] pairs")
    return [f"{title}\n{''.join(text)}" for title, text in pairs]


def _same_length_lists(first: Any, second: Any) -> bool:
    return isinstance(first, list) and isinstance(second, list) and len(first) == len(second)


def _is_paragraph(title: Any, sentences: Any) -> bool:
    return isinstance(title, str) and isinstance(sentences, list) and all(isinstance(s, str) for s in sentences)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
