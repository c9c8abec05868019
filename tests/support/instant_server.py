"""A server that answers every request at once with 8 tokens: the benchmarks' latency stand-in with
no delay, for tests of the evaluator's bookkeeping (resumes, records, reruns), where what the model
says does not matter and a real server's seconds per request would only slow the suite down.

It counts the generate requests it answers, and calls `on_request` (if given) with that count before
answering: a test can change the run's files at a known point of the run and see what follows."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from bench.latency_server import make_app
from support.background_app import BackgroundApp


class InstantServer(BackgroundApp):
    def __init__(self, on_request: Callable[[int], None] | None = None) -> None:
        super().__init__()
        self.requests = 0
        self.on_request = on_request

    def make_app(self) -> web.Application:
        app = make_app(tokens=8, delay_s=0.0)
        app.middlewares.append(self._count)
        return app

    @web.middleware
    async def _count(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path.endswith("/generate"):
            self.requests += 1
            if self.on_request is not None:
                self.on_request(self.requests)
        return await handler(request)
