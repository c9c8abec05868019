"""A latency-model inference server: a stand-in for a GPU server, for scheduling benchmarks.

Each request takes `base_s + generated_tokens * per_token_s` seconds, and the number of tokens a
request generates is fixed in advance per (question, turn), drawn the way a real policy's are:
memory turns 64 to 1024 tokens (log-uniform: most notes are short, some run long), final answers
8 to 64 tokens. Because every scheduling strategy meets the same predrawn work, their wall times
compare exactly, and the lower bound max(longest question, total work / slots) is known.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import random
from dataclasses import dataclass

import numpy as np

from mem_agent.agent.records import Completion, FinishReason, SamplingParams


@dataclass(frozen=True)
class LatencyModel:
    base_s: float = 0.05
    per_token_s: float = 0.002
    memory_tokens: tuple[int, int] = (64, 1024)
    final_tokens: tuple[int, int] = (8, 64)

    def latency(self, tokens: int) -> float:
        return self.base_s + tokens * self.per_token_s


@dataclass(frozen=True)
class Workload:
    """Response lengths per question: `lengths[q]` has one entry per memory turn, then the final."""

    lengths: list[list[int]]

    @classmethod
    def draw(cls, model: LatencyModel, chunks_per_question: list[int], seed: int) -> Workload:
        rng = random.Random(seed)
        low, high = model.memory_tokens
        lengths = []
        for chunks in chunks_per_question:
            memory = [int(math.exp(rng.uniform(math.log(low), math.log(high)))) for _ in range(chunks)]
            lengths.append([*memory, rng.randint(*model.final_tokens)])
        return cls(lengths)

    def question_seconds(self, model: LatencyModel) -> list[float]:
        return [sum(model.latency(n) for n in turns) for turns in self.lengths]

    def lower_bound_s(self, model: LatencyModel, slots: int) -> float:
        per_question = self.question_seconds(model)
        return max(max(per_question), sum(per_question) / slots)


CURRENT_QUESTION: contextvars.ContextVar[int] = contextvars.ContextVar("current_question")


class LatencyServer:
    """Serves a `Workload` as a `Generate`: the question is whatever the calling task set in
    `CURRENT_QUESTION`, and its n-th request is its turn n."""

    def __init__(self, model: LatencyModel, workload: Workload) -> None:
        self.model = model
        self.workload = workload
        self.turns = [0] * len(workload.lengths)
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def __call__(
        self, prompt_ids: np.ndarray, max_tokens: int, sampling: SamplingParams, *, priority: int = 0
    ) -> Completion:
        question = CURRENT_QUESTION.get()
        tokens = min(self.workload.lengths[question][self.turns[question]], max_tokens)
        self.turns[question] += 1
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.model.latency(tokens))
        finally:
            self.in_flight -= 1
        finish = FinishReason.LENGTH if tokens == max_tokens else FinishReason.STOP
        return Completion.build([100 + i % 1000 for i in range(tokens)], [-1.0] * tokens, finish)
