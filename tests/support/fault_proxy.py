"""A real HTTP proxy in front of the real router that injects faults on purpose.

It forwards every request to the upstream (the vllm-router of the test stack) and, when the
fault plan says so, answers instead with a 500/503/400, resets the connection, stalls past the
client's timeout, truncates or corrupts the JSON body, removes a logprob so the token and
logprob counts disagree, or rewrites the finish reason to `abort` (what a trainer's abort looks
like on the wire). It runs its own event loop in a thread, so sync and async tests can use it.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum

from aiohttp import web

from support.background_app import BackgroundApp


class Fault(StrEnum):
    HTTP_500 = "http_500"
    HTTP_503 = "http_503"
    HTTP_400 = "http_400"
    RESET = "reset"
    STALL = "stall"
    TRUNCATED_JSON = "truncated_json"
    INVALID_JSON = "invalid_json"
    WRONG_LENGTH = "wrong_length"
    ABORT = "abort"


TRANSIENT_FAULTS = (
    Fault.HTTP_500,
    Fault.HTTP_503,
    Fault.RESET,
    Fault.STALL,
    Fault.TRUNCATED_JSON,
    Fault.INVALID_JSON,
    Fault.WRONG_LENGTH,
)

FaultPlan = Callable[[int], Fault | None]  # request number (from 0) -> the fault to inject, if any


def scripted(*faults: Fault | None) -> FaultPlan:
    """Inject `faults[i]` on request i, then nothing."""
    return lambda number: faults[number] if number < len(faults) else None


def random_faults(rate: float, kinds: tuple[Fault, ...], seed: int = 0) -> FaultPlan:
    rng = random.Random(seed)
    lock = threading.Lock()

    def plan(number: int) -> Fault | None:
        with lock:
            return rng.choice(kinds) if rng.random() < rate else None

    return plan


class FaultProxy(BackgroundApp):
    def __init__(self, upstream: str, plan: FaultPlan, stall_s: float = 30.0) -> None:
        super().__init__(upstream)
        self.plan = plan
        self.stall_s = stall_s
        self.requests = 0
        self.injected: Counter[Fault] = Counter()
        self.responses: list[bytes] = []  # what the upstream answered, before any corruption
        self.exchanges: list[tuple[bytes, bytes]] = []  # (request body, upstream answer) of each POST
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def faults_injected(self) -> int:
        return sum(self.injected.values())

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        number = self.requests
        self.requests += 1
        fault = self.plan(number) if request.method == "POST" else None
        if fault is not None:
            self.injected[fault] += 1
        body = await request.read()
        if fault in (Fault.HTTP_500, Fault.HTTP_503, Fault.HTTP_400):
            status = {Fault.HTTP_500: 500, Fault.HTTP_503: 503, Fault.HTTP_400: 400}[fault]
            return web.json_response({"error": {"message": f"injected {fault}"}}, status=status)
        if fault is Fault.RESET:
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError
        if fault is Fault.STALL:
            await asyncio.sleep(self.stall_s)
        headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
        async with self.session.request(
            request.method, self.upstream + request.path_qs, data=body, headers=headers
        ) as upstream:
            payload = await upstream.read()
            status = upstream.status
        if request.method == "POST":
            self.responses.append(payload)
            self.exchanges.append((body, payload))
        return web.Response(body=_corrupt(payload, fault), status=status, content_type="application/json")


def _corrupt(payload: bytes, fault: Fault | None) -> bytes:
    if fault is Fault.TRUNCATED_JSON:
        return payload[: len(payload) // 2]
    if fault is Fault.INVALID_JSON:
        return b"<html>upstream hiccup</html>"
    if fault not in (Fault.WRONG_LENGTH, Fault.ABORT):
        return payload
    document = json.loads(payload)
    if "choices" in document:
        choice = document["choices"][0]
        if fault is Fault.ABORT:
            choice["finish_reason"] = "abort"
        else:
            logprobs = choice.get("logprobs") or {}
            for key in ("content", "token_logprobs"):
                if logprobs.get(key):
                    logprobs[key] = logprobs[key][:-1]
            if not any(logprobs.get(key) for key in ("content", "token_logprobs")):
                choice["token_ids"] = [*choice["token_ids"], 0]
    return json.dumps(document).encode()


@contextmanager
def fault_proxy(upstream: str, plan: FaultPlan, stall_s: float = 30.0) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream, plan, stall_s).start()
    try:
        yield proxy
    finally:
        proxy.stop()
