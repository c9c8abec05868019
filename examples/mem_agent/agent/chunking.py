"""Cutting a tokenised document into the chunks that memory turns read.

The document is tokenised once into one int32 array; chunks are views into it, so a 900K-token
context costs 3.6 MB per in-flight item and no chunk is ever re-tokenised.

The cap (`MEM_MAX_CHUNKS`) follows MemAgent's training setup: a document longer than
max_chunks x chunk_tokens keeps its first and last halves and drops the middle. What is dropped
is recorded in the plan, so it is reported instead of silently lost.

A context of millions of tokens may come as a `SpilledArray` (common/token_file.py: the ids in an
unnamed file, read a chunk at a time); a plan reads it by the same slices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mem_agent.common.token_file import SpilledArray
from mem_agent.tokenization.tokenizer import TOKEN_DTYPE

TokenIds = np.ndarray | SpilledArray


@dataclass(frozen=True)
class ChunkPlan:
    tokens: TokenIds  # the kept tokens, in document order
    chunk_tokens: int
    context_tokens: int  # before the cap
    dropped_tokens: int

    @property
    def num_chunks(self) -> int:
        return -(-int(self.tokens.shape[0]) // self.chunk_tokens)

    def chunk(self, index: int) -> np.ndarray:
        if not 0 <= index < self.num_chunks:
            raise IndexError(f"chunk {index} out of range for {self.num_chunks} chunks")
        start = index * self.chunk_tokens
        return self.tokens[start : start + self.chunk_tokens]

    def span(self, index: int) -> tuple[int, int]:
        """Where chunk `index` lies in the whole document, in tokens (start, end exclusive): past the
        cap's cut, the kept tail's positions are shifted by what was dropped. A chunk across the
        cut spans the dropped middle too."""
        chunk = self.chunk(index)
        start = index * self.chunk_tokens
        head = self._head()
        last = start + int(chunk.shape[0]) - 1
        return self._document_position(start, head), self._document_position(last, head) + 1

    def _head(self) -> int:
        """Kept tokens before the cut (plan_chunks keeps cap // 2 from the start); all without one."""
        return (int(self.tokens.shape[0]) // 2) if self.dropped_tokens else int(self.tokens.shape[0])

    def _document_position(self, kept: int, head: int) -> int:
        return kept if kept < head else kept + self.dropped_tokens


def plan_chunks(context_ids: TokenIds, chunk_tokens: int, max_chunks: int = 0) -> ChunkPlan:
    if chunk_tokens <= 0:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    if max_chunks < 0:
        raise ValueError(f"max_chunks must be >= 0, got {max_chunks}")
    total = int(context_ids.shape[0])
    cap = max_chunks * chunk_tokens
    if not max_chunks or total <= cap:
        return ChunkPlan(tokens=context_ids, chunk_tokens=chunk_tokens, context_tokens=total, dropped_tokens=0)
    head = cap // 2
    kept = np.concatenate([context_ids[:head], context_ids[total - (cap - head) :]])
    return ChunkPlan(tokens=kept, chunk_tokens=chunk_tokens, context_tokens=total, dropped_tokens=total - cap)


def as_token_ids(context_ids: object) -> TokenIds:
    """Ids as a plan reads them: a spilled array as it is, anything else as an int32 array."""
    return context_ids if isinstance(context_ids, SpilledArray) else np.asarray(context_ids, dtype=TOKEN_DTYPE)
