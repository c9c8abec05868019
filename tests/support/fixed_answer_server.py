"""A loopback stand-in for vLLM's `/inference/v1/generate` whose every completion is one fixed text.

For tests of what the hooks and the evaluator do with an answer (scoring, state rewards), where
the model's own text would make the expected numbers unknowable. It answers on 127.0.0.1 from a
background thread (support/background_app.py), with the real Qwen3 tokenizer's ids for the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import orjson
from aiohttp import web

from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, encode, load_tokenizer
from support.background_app import BackgroundApp


class FixedAnswerServer(BackgroundApp):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids = encode(load_tokenizer(BUNDLED_QWEN3), text).tolist()

    def make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/inference/v1/generate", self._generate)
        return app

    async def _generate(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        ids = self.ids[: min(len(self.ids), int(body["sampling_params"]["max_tokens"]))]
        choice = {
            "token_ids": ids,
            "logprobs": {"content": [{"token_id": t, "logprob": -1.0} for t in ids]},
            "finish_reason": "stop",
        }
        return web.Response(body=orjson.dumps({"choices": [choice]}), content_type="application/json")


@contextmanager
def fixed_answer_server(text: str) -> Iterator[str]:
    """Serve `text` as every completion; yields the server's URL."""
    server = FixedAnswerServer(text).start()
    try:
        yield server.url
    finally:
        server.stop()
