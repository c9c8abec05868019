"""One `Generate` over several servers: a shared priority limit, each request to the least busy.

An evaluation can point at a router (one URL) or straight at several vLLM servers. The pool
keeps one global request limit, served most-turns-left first (see scheduling.py), and sends
each admitted request to the server with the fewest requests in flight.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mem_agent.records import Completion, SamplingParams
from mem_agent.rollout_client import ClientSettings, RolloutClient
from mem_agent.scheduling import PriorityLimiter


class ClientPool:
    def __init__(self, settings: Sequence[ClientSettings], max_concurrency: int) -> None:
        if not settings:
            raise ValueError("a client pool needs at least one server")
        self.clients = [RolloutClient(entry) for entry in settings]
        self._in_flight = [0] * len(self.clients)
        self._limiter = PriorityLimiter(max_concurrency)
        self.generated_tokens = 0

    async def __aenter__(self) -> ClientPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for client in self.clients:
            await client.close()

    @property
    def requests_sent(self) -> int:
        return sum(client.requests_sent for client in self.clients)

    @property
    def retries(self) -> int:
        return sum(client.retries for client in self.clients)

    async def __call__(
        self, prompt_ids: np.ndarray, max_tokens: int, sampling: SamplingParams, *, priority: int = 0
    ) -> Completion:
        async with self._limiter.slot(priority):
            index = min(range(len(self.clients)), key=self._in_flight.__getitem__)
            self._in_flight[index] += 1
            try:
                completion = await self.clients[index].generate(prompt_ids, max_tokens, sampling, priority=priority)
            finally:
                self._in_flight[index] -= 1
        self.generated_tokens += len(completion)
        return completion
