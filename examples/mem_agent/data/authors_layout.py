"""Which layout a file's rows are in, and MemAgent's published training layout read as it is.

MemAgent's authors publish their training and dev data (Hugging Face `BytedTsinghua-SIA/hotpotqa`:
`hotpotqa_train_32k.parquet`, `hotpotqa_dev.parquet`) in verl's row layout:

    {"data_source": "hotpotqa", "prompt": [{"role": "user", "content": question}],
     "context": "Document 1:\\n<title>\\n<text>\\n\\nDocument 2:...", "ability": "memory",
     "reward_model": {"style": "rule", "ground_truth": [answers]},
     "extra_info": {"index": i, "question": question, "num_docs": n}}

Such a row is already a training document: its context is kept byte for byte (never rebuilt, so
a run trains on exactly the authors' documents) and every ground truth is kept, because MemAgent's
reward takes the max over all of them. The question is the user message of `prompt`, which is
what MemAgent's dataset encodes as the problem (`chat[0]["content"]`).

A file is in one layout: the first row decides, and a row in another layout (or in none) stops
the run with one line naming the file, the row and the fields it has, so a file that mixes
layouts is never half-converted under the wrong reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mem_agent.common.jsonstream import DataFormatError


class Layout(StrEnum):
    AUTHORS = "memagent"  # MemAgent's training rows (verl): prompt messages, a built context, reward_model
    QA = "hotpotqa"  # raw multi-hop QA rows (HotpotQA, 2WikiMultiHopQA): question, answer, paragraphs


_EXPECTED = (
    "MemAgent's training layout (prompt, context, reward_model.ground_truth) "
    "or HotpotQA's (question, answer, context paragraphs)"
)


def row_layout(raw: Any) -> Layout | None:
    """The layout a row's fields show, or None. Decided by the fields that only one layout has."""
    if not isinstance(raw, dict):
        return None
    if "reward_model" in raw or isinstance(raw.get("prompt"), list):
        return Layout.AUTHORS
    if "question" in raw:
        return Layout.QA
    return None


@dataclass
class LayoutGuard:
    """Holds one file to the layout of its first row."""

    source: str
    layout: Layout | None = None

    def check(self, raw: Any, where: str) -> Layout:
        found = row_layout(raw)
        if found is None:
            fields = _fields(raw)
            raise DataFormatError(f"{where}: not in a known layout (fields found: {fields}); expected {_EXPECTED}")
        if self.layout is None:
            self.layout = found
        elif found is not self.layout:
            raise DataFormatError(
                f"{where}: {found.value} layout, but {self.source} began in the {self.layout.value} layout "
                f"(fields found: {_fields(raw)}); one file holds one layout"
            )
        return found


def _fields(raw: Any) -> str:
    if not isinstance(raw, dict):
        return f"none, a {type(raw).__name__}"
    return ", ".join(sorted(map(str, raw))) or "none"


@dataclass(frozen=True)
class AuthorsRow:
    """One training row of the authors' data, as published."""

    row_id: str
    question: str
    answers: tuple[str, ...]  # every ground truth, in the authors' order; empty ones dropped
    context: str
    num_docs: int | None
    data_source: str | None

    def content(self) -> tuple:
        """What makes two rows one row (data/repeated_rows.py): the question, answers and document."""
        return self.question, self.answers, self.context


def parse_authors_row(raw: dict[str, Any], where: str, position: int) -> AuthorsRow:
    """The row in our shape; `where` ("file: row 3") prefixes every error."""
    context = raw.get("context")
    if not isinstance(context, str) or not context.strip():
        raise DataFormatError(f"{where}: field 'context' must be a non-empty string (the built document)")
    extra = raw.get("extra_info")
    if extra is not None and not isinstance(extra, dict):
        raise DataFormatError(f"{where}: field 'extra_info' must be an object")
    extra = extra or {}
    num_docs = extra.get("num_docs")
    if num_docs is not None and (isinstance(num_docs, bool) or not isinstance(num_docs, int)):
        raise DataFormatError(f"{where}: field 'extra_info.num_docs' must be an integer")
    source = raw.get("data_source")
    return AuthorsRow(
        row_id=str(extra.get("index", position)),
        question=_question(raw.get("prompt"), where),
        answers=_ground_truths(raw.get("reward_model"), where),
        context=context,
        num_docs=num_docs,
        data_source=source if isinstance(source, str) else None,
    )


def _question(prompt: Any, where: str) -> str:
    messages = prompt if isinstance(prompt, list) else []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    content = users[0].get("content") if users else None
    if not isinstance(content, str) or not content.strip():
        raise DataFormatError(f"{where}: field 'prompt' must hold a user message with non-empty string 'content'")
    return content.strip()


def _ground_truths(reward_model: Any, where: str) -> tuple[str, ...]:
    truths = reward_model.get("ground_truth") if isinstance(reward_model, dict) else None
    if isinstance(truths, str):  # verl also accepts one answer as a plain string
        truths = [truths]
    if not isinstance(truths, list | tuple) or not all(isinstance(t, str) for t in truths):
        raise DataFormatError(f"{where}: field 'reward_model.ground_truth' must be a list of strings")
    return tuple(t.strip() for t in truths if t.strip())
