"""An HTTP stand-in for a GPU inference server, speaking vLLM's `/inference/v1/generate`.

For benchmarks that measure the client (its memory, its overhead), not the model: it answers
each request after `--delay-ms` with `--tokens` generated ids (at most max_tokens) and their
logprobs, so a 900K-token evaluation finishes in minutes on a CPU. It parses every request body,
as a real server must. Runs as its own process, so its memory is not counted as the client's.

    python -m bench.latency_server --port 8123 --tokens 64 --delay-ms 5
"""

from __future__ import annotations

import argparse
import asyncio

import orjson
from aiohttp import web


def make_app(tokens: int, delay_s: float) -> web.Application:
    async def generate(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        prompt = body["token_ids"]
        count = min(tokens, int(body["sampling_params"]["max_tokens"]))
        if delay_s:
            await asyncio.sleep(delay_s)
        ids = [(len(prompt) + i) % 150000 for i in range(count)]
        choice = {
            "token_ids": ids,
            "logprobs": {"content": [{"token_id": t, "logprob": -1.0} for t in ids]},
            "finish_reason": "length" if count == body["sampling_params"]["max_tokens"] else "stop",
        }
        return web.Response(body=orjson.dumps({"choices": [choice]}), content_type="application/json")

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(client_max_size=64 * 1024**2)
    app.router.add_post("/inference/v1/generate", generate)
    app.router.add_get("/health", health)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=64, help="tokens generated per request (default: 64)")
    parser.add_argument("--delay-ms", type=float, default=5.0, help="latency per request (default: 5)")
    args = parser.parse_args()
    web.run_app(
        make_app(args.tokens, args.delay_ms / 1000), host="127.0.0.1", port=args.port, access_log=None, print=None
    )


if __name__ == "__main__":
    main()
