"""A turn's completion made from a text we choose, for tests that script what the model answers.

The ids are the real tokenizer's, as the engine would return them, each with a logprob of -1 and a
normal stop: tests of what the agent does with an answer (the ReMemR1 planner's memory and recall)
need the answer, not a model.
"""

from __future__ import annotations

import numpy as np

from mem_agent.agent.records import Completion, FinishReason
from mem_agent.tokenization.tokenizer import encode


def completion_of(tokenizer, text: str) -> tuple[np.ndarray, Completion]:
    """(the text's ids, a Completion of them that stopped normally)."""
    ids = encode(tokenizer, text)
    return ids, Completion.build(ids.tolist(), [-1.0] * len(ids), FinishReason.STOP)
