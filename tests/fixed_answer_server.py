"""A loopback stand-in for vLLM's `/inference/v1/generate` whose every completion is one fixed text.

For tests of what the hooks and the evaluator do with an answer (scoring, state rewards), where
the model's own text would make the expected numbers unknowable. It answers on 127.0.0.1 from a
background thread, with the real Qwen3 tokenizer's ids for the text.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import orjson
from aiohttp import web

from mem_agent.tokenizer import BUNDLED_QWEN3, encode, load_tokenizer


def _app(ids: list[int]) -> web.Application:
    async def generate(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        count = min(len(ids), int(body["sampling_params"]["max_tokens"]))
        choice = {
            "token_ids": ids[:count],
            "logprobs": {"content": [{"token_id": t, "logprob": -1.0} for t in ids[:count]]},
            "finish_reason": "stop",
        }
        return web.Response(body=orjson.dumps({"choices": [choice]}), content_type="application/json")

    app = web.Application()
    app.router.add_post("/inference/v1/generate", generate)
    return app


@contextmanager
def fixed_answer_server(text: str) -> Iterator[str]:
    """Serve `text` as every completion; yields the server's URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(_app(encode(load_tokenizer(BUNDLED_QWEN3), text).tolist()))
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
