"""The document corpora that RULER's QA splits index into, rebuilt as RULER and MemAgent build them.

A RULER `qa_1` / `qa_2` file whose `context` is a list of integers (what RULER's QA generator
writes beyond 2M tokens) names documents by their position in a corpus made from the QA dataset:
every distinct paragraph `context` of SQuAD (`squad.json`, SQuAD 2.0 layout), or every distinct
`title + "\\n" + sentences joined` of HotpotQA (`hotpotqa_dev.json`, the distractor dev layout),
sorted as Python sorts strings. The context's text is those documents as `Document i:\\n<doc>`
(i from 1), joined by blank lines. HotpotQA's corpus and that rendering are RULER-HQA's own
(data/hotpot_corpus.py); SQuAD's is read here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mem_agent.common.jsonstream import DataFormatError
from mem_agent.data.hotpot_corpus import read_corpus, read_questions, render_documents

# The corpus file each QA split indexes into, by the names MemAgent's ruler_general.py reads.
CORPUS_FILES = {"qa_1": "squad.json", "qa_2": "hotpotqa_dev.json"}


def corpus_path(eval_file: Path, split: str) -> Path:
    """Where the corpus of an index-context file is: beside it, under MemAgent's file name."""
    return eval_file.parent / CORPUS_FILES[split]


def corpus_documents(path: Path, split: str) -> tuple[str, ...]:
    """The sorted distinct documents of a SQuAD (qa_1) or HotpotQA (qa_2) file; read once per
    version of the file (its size and modification time)."""
    try:
        found = Path(path).stat()
    except OSError:
        raise DataFormatError(f"{path}: not found: {split} files with index contexts need their corpus") from None
    return _documents(Path(path), split, found.st_size, found.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _documents(path: Path, split: str, size: int, modified: int) -> tuple[str, ...]:
    if split == "qa_2":  # RULER-HQA's corpus rule, data/hotpot_corpus.py
        return read_corpus(path).documents
    return tuple(sorted({context for _, context, _ in _squad_paragraphs(path)}))


def _squad_paragraphs(path: Path) -> Iterator[tuple[int, str, list[Any]]]:
    """(article number, paragraph text, its questions) of a SQuAD file, read whole by orjson (which
    refuses a lone surrogate escape and nesting past 1024 levels, where json raises RecursionError);
    a file laid out otherwise is a DataFormatError naming what is missing."""
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise DataFormatError(f"{path}: cannot read: {error}") from None
    try:
        for number, article in enumerate(raw["data"]):
            for paragraph in article["paragraphs"]:
                yield number, str(paragraph["context"]), list(paragraph.get("qas", []))
    except (KeyError, TypeError, AttributeError) as error:
        raise DataFormatError(
            f"{path}: not a SQuAD file, data/paragraphs/context ({type(error).__name__}: {error})"
        ) from None


@dataclass(frozen=True)
class QaQuestion:
    question: str
    answers: list[str]
    documents: tuple[int, ...]  # its own documents, by index into the corpus


def corpus_questions(path: Path, split: str) -> tuple[tuple[str, ...], list[QaQuestion]]:
    """The corpus and its answerable questions, each with its own documents (RULER's QA reading:
    SQuAD's answerable questions with their paragraph; HotpotQA's with their ten paragraphs)."""
    if split == "qa_2":
        corpus = read_corpus(Path(path))
        own = [QaQuestion(q.question, [q.answer], q.documents) for q in read_questions(Path(path), corpus)]
        return corpus.documents, own
    documents = corpus_documents(Path(path), split)
    position = {document: index for index, document in enumerate(documents)}
    questions: list[QaQuestion] = []
    for number, context, qas in _squad_paragraphs(Path(path)):
        for qa in qas:
            try:
                answers = [str(answer["text"]) for answer in qa["answers"] if answer["text"]]
                if not qa.get("is_impossible", False) and answers:
                    questions.append(QaQuestion(str(qa["question"]), answers, (position[context],)))
            except (KeyError, TypeError, AttributeError) as error:
                raise DataFormatError(
                    f"{path}: article {number}: a question is not SQuAD's qas/answers/text ({error!r})"
                ) from None
    return documents, questions


def render_indexed(documents: Sequence[str], indices: Sequence[int], where: str) -> str:
    """The context text of a list of document indices."""
    try:
        chosen = [documents[index] for index in indices]
    except IndexError:
        raise DataFormatError(f"{where}: a document index is out of the corpus's {len(documents)} documents") from None
    return render_documents(chosen)
