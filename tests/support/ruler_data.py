"""Inputs for RULER general files made from our own synthetic QA set: an essay text, the set
in SQuAD's layout (each row an article, its paragraphs, the question on the paragraph that holds its answer),
and small planted items (haystack, query, references) for the layouts of support/ruler_layouts.py."""

from __future__ import annotations

import itertools
import json
import random
import string
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.data.hotpot_corpus import render_documents
from mem_agent.data.ruler_tasks import NIAH_SPECS, NOISE, NiahSpec, cwe_item, fwe_item, pseudo_word


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


@dataclass(frozen=True)
class Planted:
    """One RULER item before a tool lays it out: the haystack as it fills the template's
    `{context}`, what fills `{query}`, and the references."""

    document: str
    query: str
    outputs: list[str]


def planted_items(split: str, rows: Sequence[dict], count: int, seed: int = 0) -> list[Planted]:
    """`count` small items of a split, from our own synthetic rows and generators (our wording).

    The haystacks are shaped as RULER's are (niah: essay sentences joined by spaces, noise or
    needle lines joined by newlines; qa: `Document i:` blocks), so the layouts built from them
    hold text of the shapes a reader meets in RULER's files.
    """
    rng = random.Random(f"{seed}/{split}")
    if split in NIAH_SPECS:
        return [_niah(NIAH_SPECS[split], rows, rng) for _ in range(count)]
    if split == "vt":
        return [_vt(rng) for _ in range(count)]
    if split in ("cwe", "fwe"):
        make = cwe_item if split == "cwe" else fwe_item
        return [Planted(item.context, "", item.outputs) for item in (make(12, rng) for _ in range(count))]
    return [_qa(split, rows, rng) for _ in range(count)]


def _niah(spec: NiahSpec, rows: Sequence[dict], rng: random.Random) -> Planted:
    def value(kind: str) -> str:
        if kind == "numbers":
            return str(rng.randrange(1_000_000, 10_000_000))
        return str(uuid.UUID(int=rng.getrandbits(128), version=4)) if kind == "uuids" else pseudo_word(rng)

    keys = [value(spec.key_kind) if spec.key_kind == "uuids" else f"{pseudo_word(rng)}-{pseudo_word(rng)}"]
    keys += [f"{pseudo_word(rng)}-{pseudo_word(rng)}" for _ in range(max(spec.keys, spec.queries) - 1)]
    values = [[value(spec.value_kind) for _ in range(spec.values)] for _ in keys]
    needles = [
        f"Keep in mind that {key} goes with {held}." for key, vals in zip(keys, values, strict=True) for held in vals
    ]
    if spec.haystack == "essay":
        sentences = [sentence for row in rows[:4] for group in row["context"]["sentences"] for sentence in group]
        lines = [sentence.strip() for sentence in sentences]
    elif spec.haystack == "noise":
        lines = [NOISE] * 6
    else:
        lines = [f"Keep in mind that {pseudo_word(rng)} goes with {value(spec.value_kind)}." for _ in range(6)]
    for needle in needles:
        lines.insert(rng.randrange(len(lines) + 1), needle)
    asked = rng.sample(range(len(keys)), spec.queries)
    query = ", ".join(keys[i] for i in asked[:-1]) + ", and " + keys[asked[-1]] if len(asked) > 1 else keys[asked[0]]
    joiner = " " if spec.haystack == "essay" else "\n"
    return Planted(joiner.join(lines), query, [held for i in asked for held in values[i]])


def _vt(rng: random.Random) -> Planted:
    names = ["".join(rng.choice(string.ascii_uppercase) for _ in range(5)) for _ in range(5)]
    number = str(rng.randrange(10_000, 100_000))
    chain = [f"Put {number} into {names[0]}."] + [f"Copy {a} into {b}." for a, b in itertools.pairwise(names)]
    lines = [NOISE] * 6
    for position, link in zip(sorted(rng.sample(range(len(lines) + len(chain)), len(chain))), chain, strict=True):
        lines.insert(position, link)
    return Planted("\n".join(lines), number, names)


def _qa(split: str, rows: Sequence[dict], rng: random.Random) -> Planted:
    row = rows[rng.randrange(len(rows))]
    others = rng.sample([other for other in rows if other is not row], 2)
    documents = [
        f"{title}\n{''.join(sentences)}" if split == "qa_2" else "".join(sentences)
        for source in [row, *others]
        for title, sentences in zip(source["context"]["title"], source["context"]["sentences"], strict=True)
    ]
    rng.shuffle(documents)
    return Planted(render_documents(documents), row["question"], [row["answer"]])
