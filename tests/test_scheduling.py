"""The priority limiter: bounded slots, most-work-left first, FIFO among equals, no leaks."""

from __future__ import annotations

import asyncio

import pytest

from mem_agent.inference.scheduling import PriorityLimiter


def test_waiters_are_served_by_priority_then_arrival():
    async def go():
        limiter = PriorityLimiter(1)
        order: list[str] = []
        await limiter.acquire()

        async def worker(name: str, priority: int):
            async with limiter.slot(priority):
                order.append(name)

        tasks = [asyncio.create_task(worker(n, p)) for n, p in [("a", 1), ("b", 5), ("c", 1), ("d", 5), ("e", 3)]]
        await asyncio.sleep(0)
        limiter.release()
        await asyncio.gather(*tasks)
        return order, limiter

    order, limiter = asyncio.run(go())
    assert order == ["b", "d", "e", "a", "c"]
    assert limiter.in_use == 0


def test_never_more_holders_than_the_limit():
    async def go():
        limiter = PriorityLimiter(3)
        active = peak = 0

        async def worker(priority: int):
            nonlocal active, peak
            async with limiter.slot(priority):
                active += 1
                peak = max(peak, active)
                await asyncio.sleep(0.001)
                active -= 1

        await asyncio.gather(*(worker(i % 7) for i in range(100)))
        return peak, limiter.in_use

    assert asyncio.run(go()) == (3, 0)


def test_a_cancelled_waiter_does_not_leak_its_slot():
    async def go():
        limiter = PriorityLimiter(1)
        await limiter.acquire()
        waiter = asyncio.create_task(limiter.acquire(priority=9))
        await asyncio.sleep(0)
        waiter.cancel()
        limiter.release()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await asyncio.wait_for(limiter.acquire(), timeout=1)
        limiter.release()
        return limiter.in_use

    assert asyncio.run(go()) == 0


def test_a_zero_limit_is_refused():
    with pytest.raises(ValueError):
        PriorityLimiter(0)
