"""An aiohttp app served from its own thread and event loop, on a free loopback port.

The fault proxy and the SGLang shim sit between a client under test and the real vLLM server;
the client may run its own event loop (or none) in the test's thread, so each front-end gets a
loop of its own, with one upstream session shared by its requests. Stand-in servers with no
upstream (the fixed-answer server, the instant latency server) use the same thread and loop.
"""

from __future__ import annotations

import asyncio
import threading

import aiohttp
from aiohttp import web


class BackgroundApp:
    def __init__(self, upstream: str = "") -> None:
        self.upstream = upstream.rstrip("/")
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    def make_app(self) -> web.Application:
        raise NotImplementedError

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "start() first"
        return self._session

    def start(self):
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        if not self._thread.is_alive():
            self._loop.close()  # its selector and self-pipe

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.make_app(), access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        self._session = aiohttp.ClientSession(trust_env=False, timeout=aiohttp.ClientTimeout(total=600))

    async def _stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()
