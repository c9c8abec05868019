"""The viewer's word diff is bounded: a memory of a megabyte diffs in seconds, exact where the change
is one span, and a span too large to align is shown whole and marked `capped` (the page says so)."""

from __future__ import annotations

import random
import time

from mem_agent.observability.word_diff import MAX_ALIGNED, diff_words


def _new_text(runs):
    return "".join(text for kind, text in runs if kind != "del")


def test_a_repetitive_memory_with_one_change_is_diffed_exactly_and_fast(measured):
    old = " ".join(["the"] * 16_384)
    new = " ".join(["the"] * 16_380 + ["gold", "answer"])
    started = time.monotonic()
    runs, counts = diff_words(old, new)
    seconds = time.monotonic() - started
    measured(f"word diff, 16,384 repeated words with one change: {seconds:.3f} s")
    assert seconds < 2 and not counts.capped and _new_text(runs) == new
    assert [text.strip() for kind, text in runs if kind == "ins"] == ["gold answer"]


def test_a_megabyte_memory_rewritten_whole_diffs_in_seconds_and_is_marked_capped(measured):
    rng = random.Random(0)
    vocabulary = [f"word{i}" for i in range(300)]
    old = " ".join(rng.choice(vocabulary) for _ in range(170_000))
    new = " ".join(rng.choice(vocabulary) for _ in range(170_000))
    assert len(new) > 1_000_000
    started = time.monotonic()
    runs, counts = diff_words(old, new)
    seconds = time.monotonic() - started
    measured(f"word diff, a 1 MB memory rewritten whole: {seconds:.2f} s (capped)")
    assert seconds < 10 and counts.capped and _new_text(runs) == new
    edited = old[:500_000] + " inserted here " + old[500_000:]
    started = time.monotonic()
    runs, counts = diff_words(old, edited)
    measured(f"word diff, a 1 MB memory with one insertion: {time.monotonic() - started:.2f} s")
    assert not counts.capped and _new_text(runs) == edited and counts.added <= 4


def test_small_changes_are_aligned_word_by_word():
    runs, counts = diff_words("alpha beta gamma delta", "alpha gamma delta epsilon")
    assert not counts.capped and (counts.added, counts.removed) == (1, 1)
    assert runs == [("same", "alpha "), ("del", "beta "), ("same", "gamma delta "), ("ins", "epsilon")]


def test_a_span_past_the_bound_is_capped_and_one_within_it_is_not():
    side = int(MAX_ALIGNED**0.5)
    within = diff_words(" ".join(["a"] * side), " ".join(["b"] * side))[1]
    past = diff_words(" ".join(["a"] * (side + 1)), " ".join(["b"] * (side + 1)))[1]
    assert not within.capped and past.capped
