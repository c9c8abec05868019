"""Scorers for ReMemR1's recall: which earlier memory best answers the agent's query.

Three scorers behind one interface (`MEM_RETRIEVER`):
- `tfidf` (default, the released code's): cosine similarity of TF-IDF vectors (raw counts, smoothed
  IDF ln((1 + n) / (1 + df)) + 1 fitted on the candidate memories);
- `recall` (the paper's word-level recall): the share of the query's distinct words the memory holds;
- `bm25`: Okapi BM25 (k1 = 1.5, b = 0.75) over the candidate memories.

A scorer compares terms. By default they are words, lower-cased runs of letters and digits
(`\\w+`); the ReMemR1 planner gives `tfidf` the released retriever's terms instead
(`subword_terms`: the policy tokenizer's pieces of the lower-cased text). Ties are broken by recency
(the most recently written memory wins) and a score of 0 retrieves nothing; the order is the same
in training and evaluation because it is this one function.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from mem_agent.settings.config import RetrieverKind
from mem_agent.tokenization.tokenizer import encode

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

Terms = Callable[[str], list[str]]

_WORD = re.compile(r"\w+")
BM25_K1 = 1.5
BM25_B = 0.75


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


_SPACE_MARKER = "\u0120"  # "Ġ": how a byte-level BPE vocabulary spells a leading space


def subword_terms(tokenizer: PreTrainedTokenizerBase) -> Terms:
    """The released ReMemR1 retriever's terms: the tokenizer's pieces of the lower-cased text, with the
    byte-level BPE space marker removed ("Ġ" + "paris" and "paris" are one term). Cached per text: a
    memory is scored again at every later turn."""
    cache: dict[str, list[str]] = {}

    def terms(text: str) -> list[str]:
        if text not in cache:
            pieces = tokenizer.convert_ids_to_tokens(encode(tokenizer, text.lower()).tolist())
            cache[text] = [piece.replace(_SPACE_MARKER, "") for piece in pieces]
        return cache[text]

    return terms


class Scorer(Protocol):
    def scores(self, query: list[str], candidates: Sequence[list[str]]) -> list[float]: ...


class RecallScorer:
    def scores(self, query: list[str], candidates: Sequence[list[str]]) -> list[float]:
        wanted = set(query)
        if not wanted:
            return [0.0] * len(candidates)
        return [len(wanted & set(candidate)) / len(wanted) for candidate in candidates]


class TfidfScorer:
    def scores(self, query: list[str], candidates: Sequence[list[str]]) -> list[float]:
        documents = [Counter(candidate) for candidate in candidates]
        frequency = Counter(word for document in documents for word in document)
        count = len(documents)

        def vector(counts: Counter[str]) -> dict[str, float]:
            # Smoothed IDF, as common TF-IDF implementations use, so a word in every memory still counts.
            return {w: n * (math.log((1 + count) / (1 + frequency[w])) + 1) for w, n in counts.items()}

        query_vector = vector(Counter(query))
        return [_cosine(query_vector, vector(document)) for document in documents]


class Bm25Scorer:
    def scores(self, query: list[str], candidates: Sequence[list[str]]) -> list[float]:
        documents = [Counter(candidate) for candidate in candidates]
        if not documents:
            return []
        lengths = [sum(document.values()) for document in documents]
        average = sum(lengths) / len(lengths) or 1.0
        frequency = Counter(word for document in documents for word in document)
        count = len(documents)
        results = []
        for document, length in zip(documents, lengths, strict=True):
            score = 0.0
            for word in set(query):
                if word not in document:
                    continue
                idf = math.log(1 + (count - frequency[word] + 0.5) / (frequency[word] + 0.5))
                term = document[word]
                score += idf * term * (BM25_K1 + 1) / (term + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
            results.append(score)
        return results


def _cosine(left: dict[str, float], right: dict[str, float]) -> float:
    dot = sum(value * right.get(word, 0.0) for word, value in left.items())
    norm = math.sqrt(sum(v * v for v in left.values())) * math.sqrt(sum(v * v for v in right.values()))
    return dot / norm if norm else 0.0


SCORERS: dict[RetrieverKind, Scorer] = {
    RetrieverKind.RECALL: RecallScorer(),
    RetrieverKind.TFIDF: TfidfScorer(),
    RetrieverKind.BM25: Bm25Scorer(),
}


def retrieve(
    query: str, memories: Sequence[str], kind: RetrieverKind = RetrieverKind.TFIDF, terms: Terms = words
) -> int | None:
    """Index of the best memory for `query` (`memories` oldest first), or None when nothing matches."""
    if not query.strip() or not memories:
        return None
    scores = SCORERS[kind].scores(terms(query), [terms(memory) for memory in memories])
    best = max(range(len(memories)), key=lambda i: (scores[i], i))  # ties: the most recent memory
    return best if scores[best] > 0 else None
