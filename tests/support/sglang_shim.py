"""A stand-in for slime's SGLang router: SGLang's `/generate` wire format over the real vLLM server.

SGLang cannot be installed on these machines. This shim speaks SGLang's native shapes (request:
`input_ids`, `sampling_params.max_new_tokens`, `return_logprob`; answer: `meta_info.
output_token_logprobs` as `[logprob, token_id, text]` and `meta_info.finish_reason.type`) and gets
every token from the real model behind vllm-router's `/inference/v1/generate`, so slime's path
through our hooks runs end to end on real ids. A request without the fields SGLang needs is
answered 400, as SGLang would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web

from support.background_app import BackgroundApp


class SglangShim(BackgroundApp):
    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.requests: list[dict] = []

    def make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/generate", self._generate)
        return app

    async def _generate(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        params = body.get("sampling_params") or {}
        if not isinstance(body.get("input_ids"), list) or "max_new_tokens" not in params:
            return web.json_response({"error": "input_ids and sampling_params.max_new_tokens are required"}, status=400)
        sampling = {"max_tokens": params["max_new_tokens"], "temperature": params.get("temperature", 1.0)}
        sampling |= {"top_p": params.get("top_p", 1.0), "logprobs": 1}
        if params.get("top_k", -1) > 0:
            sampling["top_k"] = params["top_k"]
        if params.get("sampling_seed") is not None:
            sampling["seed"] = params["sampling_seed"]
        vllm_body = {"token_ids": body["input_ids"], "sampling_params": sampling}
        async with self.session.post(f"{self.upstream}/inference/v1/generate", json=vllm_body) as upstream:
            if upstream.status != 200:
                return web.Response(body=await upstream.read(), status=upstream.status)
            choice = (await upstream.json())["choices"][0]
        logprobs = [item["logprob"] for item in choice["logprobs"]["content"]]
        finish = {"type": "length", "length": len(choice["token_ids"])}
        if choice["finish_reason"] != "length":
            finish = {"type": "stop", "matched": choice["token_ids"][-1] if choice["token_ids"] else None}
        meta = {
            "finish_reason": finish,
            "prompt_tokens": len(body["input_ids"]),
            "completion_tokens": len(choice["token_ids"]),
            "output_token_logprobs": [[lp, tid, None] for lp, tid in zip(logprobs, choice["token_ids"], strict=True)],
        }
        return web.json_response({"text": choice.get("text", ""), "meta_info": meta})


@contextmanager
def sglang_shim(upstream: str) -> Iterator[SglangShim]:
    shim = SglangShim(upstream).start()
    try:
        yield shim
    finally:
        shim.stop()
