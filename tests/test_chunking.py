"""Chunking: views into one token array, and the first-and-last-halves cap, recorded."""

from __future__ import annotations

import numpy as np
import pytest

from mem_agent.agent.chunking import plan_chunks


def test_chunks_cover_the_document_in_order_without_copies():
    tokens = np.arange(1000, dtype=np.int32)
    plan = plan_chunks(tokens, chunk_tokens=300)
    assert plan.num_chunks == 4 and plan.dropped_tokens == 0 and plan.context_tokens == 1000
    chunks = [plan.chunk(i) for i in range(plan.num_chunks)]
    assert [len(chunk) for chunk in chunks] == [300, 300, 300, 100]
    assert np.array_equal(np.concatenate(chunks), tokens)
    assert all(np.shares_memory(chunk, tokens) for chunk in chunks), "chunks are views, not copies"


def test_empty_document_has_no_chunks():
    plan = plan_chunks(np.zeros(0, dtype=np.int32), chunk_tokens=10)
    assert plan.num_chunks == 0


def test_cap_keeps_first_and_last_halves_and_records_what_it_dropped():
    tokens = np.arange(1000, dtype=np.int32)
    plan = plan_chunks(tokens, chunk_tokens=100, max_chunks=3)
    assert plan.num_chunks == 3 and plan.context_tokens == 1000 and plan.dropped_tokens == 700
    kept = np.concatenate([plan.chunk(i) for i in range(3)])
    assert np.array_equal(kept, np.concatenate([np.arange(150), np.arange(850, 1000)]))


def test_cap_does_nothing_when_the_document_fits():
    tokens = np.arange(300, dtype=np.int32)
    plan = plan_chunks(tokens, chunk_tokens=100, max_chunks=3)
    assert plan.dropped_tokens == 0 and plan.tokens is tokens


@pytest.mark.parametrize(("chunk_tokens", "max_chunks"), [(0, 0), (-1, 0), (10, -1)])
def test_invalid_plans_are_refused(chunk_tokens, max_chunks):
    with pytest.raises(ValueError):
        plan_chunks(np.arange(10, dtype=np.int32), chunk_tokens=chunk_tokens, max_chunks=max_chunks)


def test_chunk_index_out_of_range_is_an_error():
    with pytest.raises(IndexError):
        plan_chunks(np.arange(10, dtype=np.int32), chunk_tokens=5).chunk(2)


def test_each_chunk_says_where_it_lies_in_the_document_past_the_caps_cut():
    """100 tokens, chunks of 10, at most 3 chunks: tokens 0-14 and 85-99 are kept; the middle
    chunk spans the cut, and the last lies where its tokens were in the document."""
    document = np.arange(100, dtype=np.int32)
    plan = plan_chunks(document, 10, 3)
    assert [plan.span(i) for i in range(plan.num_chunks)] == [(0, 10), (10, 90), (90, 100)]
    first, last = plan.span(0), plan.span(2)
    assert (plan.chunk(0) == document[first[0] : first[1]]).all() and (
        plan.chunk(2) == document[last[0] : last[1]]
    ).all()
    assert [plan_chunks(document[:25], 10).span(i) for i in range(3)] == [(0, 10), (10, 20), (20, 25)]
