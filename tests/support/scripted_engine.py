"""A scripted inference engine for host-flag tests: both wire formats, abort, no model.

It answers vLLM's `/inference/v1/generate` (vime) and SGLang's `/generate` (slime) in their own
shapes, with token ids from the real Qwen3 tokenizer: every response is `\\boxed{<answer>}`
followed by `<|im_end|>`, where `answer(prompt_text, seed)` is the test's policy (so a test
decides which trajectories are right), cut at `max_tokens`. It also serves what a host's
server-wide abort calls: `GET /workers` (itself), `POST /abort_requests` (vime; SGLang's
`/abort_request` for slime alike: every held request then ends with finish reason `abort`) and
SGLang's `GET /v1/loads` (always idle). With `hold_from=k`, request k and later wait until
released or aborted, so a test can end a rollout step while trajectories are in flight; a held
request whose client hung up is counted in `disconnected` (what a request-mode abort causes), and
`wait_for_disconnects` wakes a test as each hang-up is counted.

The real vLLM stack stays the reference for ids and logprobs (tests marked `server`); this one
makes the host's rollout loop cheap enough to test every flag.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

from mem_agent.tokenization.tokenizer import decode, encode
from support.background_app import BackgroundApp

END_OF_TURN = 151645  # <|im_end|>
Answer = Callable[[str, int | None], str | None]


class ScriptedEngine(BackgroundApp):
    def __init__(self, tokenizer: Any, answer: Answer, *, hold_from: int | None = None) -> None:
        super().__init__("")
        self.tokenizer = tokenizer
        self.answer = answer
        self.hold_from = hold_from
        self.requests: list[dict[str, Any]] = []
        self.disconnected = 0
        self._disconnect = threading.Condition()  # notified from the engine's thread at each hang-up
        self.server_aborts = 0
        self.held = 0
        self._release: asyncio.Event | None = None
        self._abort: asyncio.Event | None = None

    def make_app(self) -> web.Application:
        self._release, self._abort = asyncio.Event(), asyncio.Event()
        app = web.Application()
        app.router.add_post("/inference/v1/generate", self._vllm)
        app.router.add_post("/generate", self._sglang)
        app.router.add_get("/workers", self._workers)
        app.router.add_post("/abort_requests", self._abort_requests)
        app.router.add_post("/abort_request", self._abort_requests)  # SGLang's spelling (slime's abort)
        app.router.add_get("/v1/loads", self._loads)
        return app

    def release(self) -> None:
        assert self._release is not None
        self._loop.call_soon_threadsafe(self._release.set)

    def wait_for_disconnects(self, count: int, timeout_s: float = 10.0) -> bool:
        """Block the test's thread until `count` held requests have seen their client hang up."""
        with self._disconnect:
            return self._disconnect.wait_for(lambda: self.disconnected >= count, timeout_s)

    async def _workers(self, request: web.Request) -> web.Response:
        return web.json_response({"workers": [{"url": self.url}]})

    async def _loads(self, request: web.Request) -> web.Response:
        """SGLang's load report, which slime polls after an abort until the engine is idle."""
        return web.json_response({"loads": [{"num_reqs": 0}]})

    async def _abort_requests(self, request: web.Request) -> web.Response:
        self.server_aborts += 1
        assert self._abort is not None
        self._abort.set()
        return web.json_response({})

    async def _wait_if_held(self, request: web.Request, number: int) -> bool:
        """True when the request must end aborted; False to answer normally."""
        if self.hold_from is None or number < self.hold_from:
            return False
        assert self._release is not None and self._abort is not None
        self.held += 1
        while not (self._release.is_set() or self._abort.is_set()):
            if request.transport is None or request.transport.is_closing():
                with self._disconnect:
                    self.disconnected += 1
                    self._disconnect.notify_all()
                raise asyncio.CancelledError
            await asyncio.sleep(0.02)
        return self._abort.is_set()

    def _completion(self, prompt_ids: list[int], max_tokens: int, seed: int | None) -> tuple[list[int], str]:
        text = self.answer(decode(self.tokenizer, prompt_ids), seed)
        boxed = [] if text is None else encode(self.tokenizer, f"\\boxed{{{text}}}").tolist()  # None: say nothing
        ids = [*boxed, END_OF_TURN]
        return (ids, "stop") if len(ids) <= max_tokens else (ids[:max_tokens], "length")

    async def _answer(self, request: web.Request, ids_key: str, max_key: str, seed_key: str) -> tuple[list[int], str]:
        """Record the request and answer it (or, while held, abort it): the same for both wire formats."""
        body = await request.json()
        self.requests.append(body)
        params = body["sampling_params"]
        if await self._wait_if_held(request, len(self.requests) - 1):
            return [], "abort"
        return self._completion(body[ids_key], params[max_key], params.get(seed_key))

    async def _vllm(self, request: web.Request) -> web.Response:
        ids, finish = await self._answer(request, "token_ids", "max_tokens", "seed")
        logprobs = [{"logprob": -0.125 * (i + 1)} for i in range(len(ids))]
        return web.json_response(
            {"choices": [{"token_ids": ids, "logprobs": {"content": logprobs}, "finish_reason": finish}]}
        )

    async def _sglang(self, request: web.Request) -> web.Response:
        ids, finish = await self._answer(request, "input_ids", "max_new_tokens", "sampling_seed")
        meta = {
            "output_token_logprobs": [[-0.125 * (i + 1), token, None] for i, token in enumerate(ids)],
            "finish_reason": {"type": finish},
        }
        return web.json_response({"text": decode(self.tokenizer, ids), "meta_info": meta})


@contextmanager
def scripted_engine(tokenizer: Any, answer: Answer, *, hold_from: int | None = None) -> Iterator[ScriptedEngine]:
    engine = ScriptedEngine(tokenizer, answer, hold_from=hold_from).start()
    try:
        yield engine
    finally:
        engine.release()
        engine.stop()
