"""One `Generate` over several servers: a shared priority limit, each request to the least busy.

An evaluation can point at a router (one URL) or straight at several vLLM servers. The pool
keeps one global request limit, served most-turns-left first (see scheduling.py; `prioritize=False`
serves first come, first served instead), and sends each admitted request to the backend with the
fewest requests in flight. Backends are any `Generate`: rollout clients, or the benchmarks'
latency-model server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np

from mem_agent.agent.records import Completion, SamplingParams
from mem_agent.agent.workflow import Generate
from mem_agent.inference.client import ClientSettings, RolloutClient
from mem_agent.inference.scheduling import PriorityLimiter


class ClientPool:
    def __init__(self, backends: Sequence[Generate], max_concurrency: int, *, prioritize: bool = True) -> None:
        if not backends:
            raise ValueError("a client pool needs at least one backend")
        self.backends = list(backends)
        self._in_flight = [0] * len(self.backends)
        self._limiter = PriorityLimiter(max_concurrency)
        self._prioritize = prioritize
        self.generated_tokens = 0

    @classmethod
    def for_servers(cls, settings: Sequence[ClientSettings], max_concurrency: int) -> ClientPool:
        return cls([RolloutClient(entry) for entry in settings], max_concurrency)

    async def __aenter__(self) -> ClientPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for backend in self.backends:
            close = getattr(backend, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    @property
    def requests_sent(self) -> int:
        return sum(getattr(backend, "requests_sent", 0) for backend in self.backends)

    @property
    def retries(self) -> int:
        return sum(getattr(backend, "retries", 0) for backend in self.backends)

    async def __call__(
        self, prompt_ids: np.ndarray, max_tokens: int, sampling: SamplingParams, *, priority: int = 0
    ) -> Completion:
        async with self._limiter.slot(priority if self._prioritize else 0):
            index = min(range(len(self.backends)), key=self._in_flight.__getitem__)
            self._in_flight[index] += 1
            try:
                completion = await self.backends[index](prompt_ids, max_tokens, sampling, priority=priority)
            finally:
                self._in_flight[index] -= 1
        self.generated_tokens += len(completion)
        return completion
