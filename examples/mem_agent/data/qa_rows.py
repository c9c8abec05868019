"""Reading multi-hop QA rows (HotpotQA, 2WikiMultiHopQA) into one shape, with precise errors.

Accepted layouts, detected per row:
- HotpotQA as on the Hugging Face hub: `context = {"title": [...], "sentences": [[...], ...]}`,
  `supporting_facts = {"title": [...], "sent_id": [...]}`;
- HotpotQA's original JSON and 2WikiMultiHopQA: `context = [[title, [sentence, ...]], ...]`,
  `supporting_facts = [[title, sent_id], ...]`.
Sentences are joined as they come when they carry their own leading spaces (HotpotQA), with
single spaces when none does (2WikiMultiHopQA strips them).
The answer is `answer` (a string) or `answers` (a list of strings); the id is `_id`, `id` or the
row's position. Files are a JSON array (streamed) or JSON Lines.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mem_agent.common.jsonstream import DataFormatError, iter_json_array, open_data

MAX_LINE_BYTES = 256 << 20  # bound: one JSON Lines row (MemAgent's training rows are ~150 KB)


@dataclass(frozen=True)
class Paragraph:
    title: str
    text: str


@dataclass(frozen=True)
class QaRow:
    row_id: str
    question: str
    answers: tuple[str, ...]
    paragraphs: tuple[Paragraph, ...]
    supporting_titles: frozenset[str]

    def content(self) -> tuple:
        """What makes two rows one row (data/repeated_rows.py): the question, answers and documents."""
        return self.question, self.answers, self.paragraphs


def iter_raw_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, parsed row) for a JSON array file ("row 3", from 0) or a JSON Lines file ("line 4", from 1)."""
    path = Path(path)
    with open_data(path) as probe:
        first = probe.read(4096).lstrip()
    if first.startswith(b"["):
        for index, raw in enumerate(iter_json_array(path)):
            yield f"row {index}", raw
        return
    yield from _json_lines(path)


def _json_lines(path: Path) -> Iterator[tuple[str, Any]]:
    """Each line parsed by orjson, which refuses what json would let through to fail later: a lone
    surrogate escape ("\\ud800", no character: it cannot be written as UTF-8 or tokenised) and
    nesting past 1024 levels (json raises RecursionError). A line is read up to MAX_LINE_BYTES."""
    with open_data(path) as handle:
        for number in itertools.count(1):
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            if len(raw) > MAX_LINE_BYTES:
                raise DataFormatError(f"{path}: line {number} is longer than {MAX_LINE_BYTES:,} bytes")
            if not raw.strip():
                continue
            try:
                yield f"line {number}", orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                why = "not UTF-8" if "UTF-8" in error.msg else f"invalid JSON: {error.msg}"
                raise DataFormatError(f"{path}: line {number}: {why}") from None


def parse_row(raw: Any, where: str, position: int) -> QaRow:
    """One row in our shape; `where` ("file: row 3") prefixes every error."""
    if not isinstance(raw, dict):
        raise DataFormatError(f"{where}: expected an object, got {type(raw).__name__}")
    question = raw.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataFormatError(f"{where}: field 'question' must be a non-empty string")
    return QaRow(
        row_id=str(raw.get("_id", raw.get("id", position))),
        question=question.strip(),
        answers=_answers(raw, where),
        paragraphs=_paragraphs(raw.get("context"), where),
        supporting_titles=_supporting_titles(raw.get("supporting_facts"), where),
    )


def _answers(raw: dict[str, Any], where: str) -> tuple[str, ...]:
    if "answers" in raw:
        answers = raw["answers"]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise DataFormatError(f"{where}: field 'answers' must be a list of strings")
    elif "answer" in raw:
        if not isinstance(raw["answer"], str):
            raise DataFormatError(f"{where}: field 'answer' must be a string")
        answers = [raw["answer"]]
    else:
        raise DataFormatError(f"{where}: missing field 'answer' (or 'answers')")
    return tuple(a.strip() for a in answers if a.strip())


def _paragraphs(context: Any, where: str) -> tuple[Paragraph, ...]:
    if isinstance(context, dict):
        titles, sentences = context.get("title"), context.get("sentences")
        if not isinstance(titles, list) or not isinstance(sentences, list) or len(titles) != len(sentences):
            raise DataFormatError(f"{where}: field 'context' needs equal-length lists 'title' and 'sentences'")
        pairs = list(zip(titles, sentences, strict=True))
    elif isinstance(context, list):
        if not all(isinstance(pair, list | tuple) and len(pair) == 2 for pair in context):
            raise DataFormatError(f"{where}: field 'context' must be a list of [title, sentences] pairs")
        pairs = [tuple(pair) for pair in context]
    else:
        raise DataFormatError(f"{where}: missing field 'context' (HotpotQA or 2WikiMultiHopQA layout)")
    paragraphs = []
    for title, sentences in pairs:
        if (
            not isinstance(title, str)
            or not isinstance(sentences, list)
            or not all(isinstance(s, str) for s in sentences)
        ):
            raise DataFormatError(f"{where}: field 'context' has a paragraph that is not (title, [sentences])")
        paragraphs.append(Paragraph(title.strip(), _join_sentences(sentences)))
    return tuple(paragraphs)


def _join_sentences(sentences: list[str]) -> str:
    """One paragraph's text from its sentences, without gluing words together.

    HotpotQA keeps each sentence's leading space (and splits some sentences mid-word, so adding
    spaces there would be wrong); 2WikiMultiHopQA strips them. A paragraph none of whose later
    sentences starts with whitespace is taken to be stripped and joined with single spaces.
    """
    stripped = len(sentences) > 1 and not any(s[:1].isspace() for s in sentences[1:])
    return (" " if stripped else "").join(sentences).strip()


def _supporting_titles(facts: Any, where: str) -> frozenset[str]:
    if facts is None:
        return frozenset()
    if isinstance(facts, dict) and isinstance(facts.get("title"), list):
        return frozenset(str(title) for title in facts["title"])
    if isinstance(facts, list):
        return frozenset(str(fact[0]) for fact in facts if isinstance(fact, list | tuple) and fact)
    raise DataFormatError(f"{where}: field 'supporting_facts' has an unknown layout")


def iter_rows(path: Path) -> Iterator[tuple[QaRow | None, str]]:
    """Parsed rows, each with its place ("row 3", "line 4"); a row without a usable answer comes
    back as None, to be counted."""
    for position, (location, raw) in enumerate(iter_raw_rows(path)):
        row = parse_row(raw, f"{path}: {location}", position)
        yield (row if row.answers else None), location
