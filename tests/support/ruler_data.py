"""Inputs for RULER general files made from our own synthetic QA set: an essay text, and the set
in SQuAD's layout (each row an article, its paragraphs, the question on the paragraph that holds its answer)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path


def write_essay(rows: Sequence[dict], path: Path) -> Path:
    """The rows' paragraphs as running text: the essay haystack's sentences."""
    paragraphs = ["".join(sentences) for row in rows for sentences in row["context"]["sentences"]]
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")
    return path


def write_squad(rows: Sequence[dict], path: Path) -> Path:
    articles = []
    for number, row in enumerate(rows):
        texts = ["".join(sentences) for sentences in row["context"]["sentences"]]
        answers = [{"text": row["answer"], "answer_start": 0}]
        qas = [{"id": str(number), "question": row["question"], "answers": answers}]
        qas.append({"id": f"{number}x", "question": "Unanswerable?", "answers": [], "is_impossible": True})
        holding = next((index for index, text in enumerate(texts) if row["answer"] in text), 0)
        paragraphs = [{"context": text, "qas": qas if index == holding else []} for index, text in enumerate(texts)]
        articles.append({"title": row["id"], "paragraphs": paragraphs})
    path.write_text(json.dumps({"version": "v2.0", "data": articles}), encoding="utf-8")
    return path
