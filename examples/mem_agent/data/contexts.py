"""RULER-HQA-shaped contexts from multi-hop QA rows: which documents a question gets, and how they
are rendered (`Document i:\n<title>\n<text>`, joined by blank lines), as in MemAgent's eval files.

The rules that make the files reproducible and honest are in the build_long_context command's
docstring (mem_agent/build_long_context.py); prepare_data renders training contexts the same way.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mem_agent.data.qa_rows import Paragraph, QaRow, iter_rows
from mem_agent.data.repeated_rows import Repeats

# bound: documents in a context written as text (prepare-data --num-docs, build-long-context's text
# layout): ten times MemAgent's largest text-layout file (index layout above 10,000, at most the corpus)
MAX_CONTEXT_DOCUMENTS = 100_000


@dataclass
class BuildStats:
    questions: int = 0
    context_chars: list[int] = field(default_factory=list)
    reused_pool: int = 0


@dataclass
class LoadedQuestions:
    questions: list[QaRow]  # the first answerable rows, up to the limit, repeats left out unless kept
    pool: list[Paragraph]  # every distinct paragraph of the file
    skipped: int  # rows without an answer
    repeats: Repeats


def load_questions(path: Path, limit: int, keep_repeats: bool = False) -> LoadedQuestions:
    """The first `limit` answerable rows, every distinct paragraph of the file, and what was left out."""
    loaded = LoadedQuestions([], [], 0, Repeats(keep_repeats))
    pool: dict[str, Paragraph] = {}
    for row, where in iter_rows(path):
        if row is None:
            loaded.skipped += 1
            continue
        for paragraph in row.paragraphs:
            pool.setdefault(paragraph.title, paragraph)
        if len(loaded.questions) < limit and not loaded.repeats.is_dropped(row.content(), where):
            loaded.questions.append(row)
    loaded.pool = list(pool.values())
    return loaded


def choose_documents(row: QaRow, pool: Sequence[Paragraph], num_docs: int, rng: random.Random) -> tuple[list, bool]:
    """The question's documents in reading order, and whether the filler pool had to be reused."""
    own = sorted(row.paragraphs, key=lambda p: p.title not in row.supporting_titles)  # gold first, stable
    if num_docs <= len(own):
        chosen = own[:num_docs]
        rng.shuffle(chosen)
        return chosen, False
    own_titles = {p.title for p in own}
    filler, reused = _fillers(pool, own_titles, num_docs - len(own), rng)
    chosen = own + filler
    rng.shuffle(chosen)
    return chosen, reused


def _fillers(
    pool: Sequence[Paragraph], own_titles: set[str], needed: int, rng: random.Random
) -> tuple[list[Paragraph], bool]:
    """`needed` paragraphs of the pool outside `own_titles`: distinct while the pool allows.

    A big pool is sampled by rejection (no per-question copy of a 200K-paragraph pool); a pool
    too small for that is filtered once and reused in fresh shuffles.
    """
    if needed <= (len(pool) - len(own_titles)) // 2:
        picked: set[int] = set()
        while len(picked) < needed:
            index = rng.randrange(len(pool))
            if index not in picked and pool[index].title not in own_titles:
                picked.add(index)
        return [pool[index] for index in sorted(picked, key=lambda i: rng.random())], False
    candidates = [p for p in pool if p.title not in own_titles]
    filler: list[Paragraph] = []
    while len(filler) < needed and candidates:
        filler += rng.sample(candidates, min(needed - len(filler), len(candidates)))
    return filler, len(filler) > len(candidates)


def render_context(documents: Sequence[Paragraph]) -> str:
    return "\n\n".join(f"Document {i}:\n{doc.title}\n{doc.text}" for i, doc in enumerate(documents, start=1))


def build_items(
    questions: Sequence[QaRow], pool: Sequence[Paragraph], num_docs: int, seed: int, stats: BuildStats
) -> Iterator[dict]:
    for index, row in enumerate(questions):
        rng = random.Random(f"{seed}:{index}:{row.row_id}")
        documents, reused = choose_documents(row, pool, num_docs, rng)
        context = render_context(documents)
        stats.questions += 1
        stats.context_chars.append(len(context))
        stats.reused_pool += reused
        yield {
            "index": index,
            "input": row.question,
            "answers": list(row.answers),
            "context": context,
            "num_docs": num_docs,
        }
