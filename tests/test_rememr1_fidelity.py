"""ReMemR1 against the released code: recall candidates, memory, state rewards and their weight."""

from __future__ import annotations

import numpy as np

from mem_agent.config import RetrieverKind
from mem_agent.records import Completion, FinishReason
from mem_agent.rememr1 import ReMemR1Planner, ReMemR1Prompts
from mem_agent.tokenizer import encode

# Invented facts; the query of each step names only what an earlier memory holds.
QUESTION = "Which river flows past the town where Orla Fenwick was born?"


def _completion(tokenizer, text: str) -> tuple[np.ndarray, Completion]:
    ids = encode(tokenizer, text)
    return ids, Completion.build(ids.tolist(), [-1.0] * len(ids), FinishReason.STOP)


def _planner(tokenizer, retriever: RetrieverKind = RetrieverKind.RECALL) -> ReMemR1Planner:
    prompts = ReMemR1Prompts.build(tokenizer)
    return ReMemR1Planner(prompts, encode(tokenizer, QUESTION), tokenizer, retriever)


def _run(planner: ReMemR1Planner, tokenizer, responses: list[str]) -> list[dict[str, object]]:
    return [planner.after_memory_turn(step, *_completion(tokenizer, text)) for step, text in enumerate(responses)]


def test_a_recall_at_step_one_can_bring_back_the_memory_written_at_step_zero(tokenizer):
    """The released code retrieves among every memory written before this turn, the one this turn's
    prompt showed included: the recalled memory is shown next turn, beside a newer memory."""
    extras = _run(
        _planner(tokenizer),
        tokenizer,
        [
            "<update>Orla Fenwick was born in Dunmere.</update>",
            "<update>The Saltby flows past Carrowick.</update><recall>where was Orla Fenwick born</recall>",
        ],
    )
    assert extras[1]["recalled"] == "Orla Fenwick was born in Dunmere."


def test_a_recall_at_the_first_turn_finds_nothing_and_the_new_memory_is_never_a_candidate(tokenizer):
    """Candidates are written before the turn that asks: at step 0 there are none, and a query that
    matches only the memory this turn writes retrieves nothing."""
    extras = _run(
        _planner(tokenizer),
        tokenizer,
        [
            "<update>Orla Fenwick was born in Dunmere.</update><recall>Orla Fenwick</recall>",
            "<update>The Saltby flows past Carrowick.</update><recall>Saltby Carrowick</recall>",
        ],
    )
    assert extras[0]["recalled"] is None and extras[1]["recalled"] is None
