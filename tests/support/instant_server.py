"""A server that answers every request at once with 8 tokens: the benchmarks' latency stand-in with
no delay, for tests of the evaluator's bookkeeping (resumes, records, reruns), where what the model
says does not matter and a real server's seconds per request would only slow the suite down."""

from __future__ import annotations

from aiohttp import web

from bench.latency_server import make_app
from support.background_app import BackgroundApp


class InstantServer(BackgroundApp):
    def make_app(self) -> web.Application:
        return make_app(tokens=8, delay_s=0.0)
