"""Scorers for ReMemR1's recall: which earlier memory best answers the agent's query.

Three scorers behind one interface (`MEM_RETRIEVER`):
- `recall` (default, the paper's): the share of the query's distinct words that the memory contains;
- `tfidf`: cosine similarity of TF-IDF vectors, IDF fitted on the candidate memories;
- `bm25`: Okapi BM25 (k1 = 1.5, b = 0.75) over the candidate memories.

Words are lower-cased runs of letters and digits (`\\w+`), so every scorer sees the same words.
Ties are broken by recency (the most recently written memory wins) and a score of 0 retrieves
nothing; the order is the same in training and evaluation because it is this one function.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from mem_agent.config import RetrieverKind

_WORD = re.compile(r"\w+")
BM25_K1 = 1.5
BM25_B = 0.75


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Scorer(Protocol):
    def scores(self, query: str, candidates: Sequence[str]) -> list[float]: ...


class RecallScorer:
    def scores(self, query: str, candidates: Sequence[str]) -> list[float]:
        wanted = set(words(query))
        if not wanted:
            return [0.0] * len(candidates)
        return [len(wanted & set(words(candidate))) / len(wanted) for candidate in candidates]


class TfidfScorer:
    def scores(self, query: str, candidates: Sequence[str]) -> list[float]:
        documents = [Counter(words(candidate)) for candidate in candidates]
        frequency = Counter(word for document in documents for word in document)
        count = len(documents)

        def vector(counts: Counter[str]) -> dict[str, float]:
            # Smoothed IDF, as common TF-IDF implementations use, so a word in every memory still counts.
            return {w: n * (math.log((1 + count) / (1 + frequency[w])) + 1) for w, n in counts.items()}

        query_vector = vector(Counter(words(query)))
        return [_cosine(query_vector, vector(document)) for document in documents]


class Bm25Scorer:
    def scores(self, query: str, candidates: Sequence[str]) -> list[float]:
        documents = [Counter(words(candidate)) for candidate in candidates]
        if not documents:
            return []
        lengths = [sum(document.values()) for document in documents]
        average = sum(lengths) / len(lengths) or 1.0
        frequency = Counter(word for document in documents for word in document)
        count = len(documents)
        results = []
        for document, length in zip(documents, lengths, strict=True):
            score = 0.0
            for word in set(words(query)):
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


def retrieve(query: str, memories: Sequence[str], kind: RetrieverKind = RetrieverKind.RECALL) -> int | None:
    """Index of the best memory for `query` (`memories` oldest first), or None when nothing matches."""
    if not query.strip() or not memories:
        return None
    scores = SCORERS[kind].scores(query, memories)
    best = max(range(len(memories)), key=lambda i: (scores[i], i))  # ties: the most recent memory
    return best if scores[best] > 0 else None
