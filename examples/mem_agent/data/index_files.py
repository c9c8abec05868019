"""Index-layout eval files (RULER-HQA beyond 10,000 documents), built by MemAgent's recipe.

An item's `context` is a list of positions in the sorted corpus (data/hotpot_corpus.py): the
question's own paragraphs plus others drawn at random until there are N, in a shuffled order. As
MemAgent's `different_docs_eval.py` does it, with our own generator: each question draws from a
generator seeded by (seed, question position), so the same corpus, arguments and seed give the
same file, and item k does not change when --num-questions grows. N larger than the corpus is
refused (an item never claims N documents while holding fewer).

Beside MemAgent's fields (`index`, `input`, `answers`, `context`, `num_docs`) each item names the
corpus it points into (`corpus_sha256`, `corpus_documents`), which the evaluator checks before a
server starts; MemAgent's reader ignores fields it does not use.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path

from mem_agent.common.jsonstream import DataFormatError, write_json_array_atomic
from mem_agent.data.hotpot_corpus import Corpus, CorpusQuestion, read_corpus, read_questions
from mem_agent.data.repeated_rows import Repeats

__all__ = ["INDEX_LAYOUT_ABOVE", "write_index_files"]

INDEX_LAYOUT_ABOVE = 10_000  # MemAgent writes contexts of more documents than this as indices


def write_index_files(
    corpus_path: Path,
    num_docs: Sequence[int],
    targets: Sequence[Path],
    num_questions: int,
    seed: int,
    keep_repeats: bool = False,
) -> None:
    """One file per count in `num_docs`, to the matching path of `targets`; a row per file printed.
    A question that repeats an earlier row is named, and left out unless `keep_repeats`."""
    corpus = read_corpus(corpus_path)
    too_many = [n for n in num_docs if n > len(corpus)]
    if too_many:
        raise DataFormatError(f"{corpus_path}: holds {len(corpus)} documents, fewer than {too_many[0]} per context")
    repeats = Repeats(keep_repeats)
    questions = _questions(corpus_path, corpus, num_questions, repeats)
    print(f"{len(questions)} questions, {len(corpus)} documents in the corpus (sha256 {corpus.sha256[:12]})")
    if said := repeats.summary():
        print(said)
    print(f"{'docs':>6} | {'questions':>9} | file")
    for count, target in zip(num_docs, targets, strict=True):
        written = write_json_array_atomic(target, _items(corpus, questions, count, seed))
        print(f"{count:>6} | {written:>9} | {target}")


def _questions(path: Path, corpus: Corpus, limit: int, repeats: Repeats) -> list[tuple[int, CorpusQuestion]]:
    chosen = []
    for position, question in enumerate(read_questions(path, corpus)):
        if question.answer.strip() and not repeats.is_dropped(question, f"row {position}"):
            chosen.append((position, question))
        if len(chosen) == limit:
            break
    if not chosen:
        raise DataFormatError(f"{path}: no row with a question and a non-empty answer")
    return chosen


def _items(corpus: Corpus, questions: Sequence[tuple[int, CorpusQuestion]], num_docs: int, seed: int) -> Iterator[dict]:
    for position, question in questions:
        rng = random.Random(seed * 1_000_003 + position)
        yield {
            "index": position,
            "input": question.question,
            "answers": [question.answer],
            "context": choose_positions(question.documents, len(corpus), num_docs, rng),
            "num_docs": num_docs,
            "corpus_sha256": corpus.sha256,
            "corpus_documents": len(corpus),
        }


def choose_positions(own: Sequence[int], corpus_size: int, num_docs: int, rng: random.Random) -> list[int]:
    """The question's own documents (first ones kept when N is smaller) and distinct others, shuffled."""
    kept = list(own[:num_docs])
    wanted = num_docs - len(kept)
    mine = set(kept) | set(own)
    others = [p for p in rng.sample(range(corpus_size), min(corpus_size, wanted + len(mine))) if p not in mine]
    positions = kept + others[:wanted]
    rng.shuffle(positions)
    return positions
