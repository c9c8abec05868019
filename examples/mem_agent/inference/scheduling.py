"""A concurrency limit that serves the waiting request with the most work left first.

With fewer request slots than questions in flight, first-come order lets short documents finish
early and leaves the longest ones to run alone at the end, where most slots sit idle. Serving the
request whose trajectory has the most turns left keeps every long document moving, so the batch
finishes close to the bound max(longest question, total work / slots). Among equal priorities
the order is first come, first served.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator


class PriorityLimiter:
    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError(f"concurrency limit must be positive, got {limit}")
        self.limit = limit
        self._free = limit
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def in_use(self) -> int:
        return self.limit - self._free

    async def acquire(self, priority: int = 0) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (-priority, next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the slot was handed to us just as we were cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)  # hand the slot straight to the next waiter
                return
        self._free += 1
        if self._free > self.limit:
            raise RuntimeError("PriorityLimiter released more often than acquired")

    @contextlib.asynccontextmanager
    async def slot(self, priority: int = 0) -> AsyncIterator[None]:
        await self.acquire(priority)
        try:
            yield
        finally:
            self.release()
