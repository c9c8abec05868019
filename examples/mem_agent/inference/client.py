"""Async client for the inference tier: token ids in, token ids and logprobs out.

Three wire protocols, one `Completion`:

| protocol | route | who serves it |
|---|---|---|
| `vllm`   | `/inference/v1/generate` | vime's router, vLLM with --enable-scale-out |
| `sglang` | `/generate`              | slime's SGLang router |
| `openai` | `/v1/completions`        | any vLLM OpenAI server (token-id prompt, `return_token_ids`) |

Transport rules (see STYLE.md): one long-lived session per event loop, connection limit equal
to the concurrency, explicit connect and request timeouts, no proxy (routers are on the cluster
network, and a proxy picked up from the environment would reroute them). Only transient failures
are retried (connection errors, timeouts, 429/5xx, malformed answers), with capped exponential
backoff and jitter; a 4xx fails at once with the server's own message.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import aiohttp
import numpy as np
import orjson

from mem_agent.agent.records import Completion, CompletionError, FinishReason, GenerationError, SamplingParams
from mem_agent.inference.scheduling import PriorityLimiter


class ApiProtocol(StrEnum):
    VLLM = "vllm"
    SGLANG = "sglang"
    OPENAI = "openai"


ROUTES = {
    ApiProtocol.VLLM: "/inference/v1/generate",
    ApiProtocol.SGLANG: "/generate",
    ApiProtocol.OPENAI: "/v1/completions",
}
_ABORT_REASONS = {"abort", "cancelled", "canceled"}
_TRANSIENT_STATUS = {408, 429}


@dataclass(frozen=True)
class ClientSettings:
    base_url: str
    protocol: ApiProtocol = ApiProtocol.VLLM
    model: str | None = None  # sent only when set: vLLM serves its one model without it
    max_concurrency: int = 256
    connect_timeout_s: float = 10.0
    request_timeout_s: float = 600.0
    max_retries: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + ROUTES[self.protocol]


class _Transient(Exception):
    """A failure worth another try; the message becomes the reason if tries run out."""


def build_body(
    protocol: ApiProtocol, prompt_ids: np.ndarray, max_tokens: int, sampling: SamplingParams, model: str | None
) -> dict[str, Any]:
    """The request body; token arrays stay numpy (orjson writes them without a list copy)."""
    if protocol is ApiProtocol.SGLANG:
        params: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,
            # Engine output is trained on as ids: never trim stop tokens or strip specials.
            "no_stop_trim": True,
            "skip_special_tokens": False,
        }
        if sampling.seed is not None:
            params["sampling_seed"] = sampling.seed
        return {"input_ids": prompt_ids, "sampling_params": params, "return_logprob": True}
    common: dict[str, Any] = {"max_tokens": max_tokens, "temperature": sampling.temperature, "top_p": sampling.top_p}
    if sampling.top_k > 0:
        common["top_k"] = sampling.top_k
    if sampling.seed is not None:
        common["seed"] = sampling.seed
    if protocol is ApiProtocol.VLLM:
        body: dict[str, Any] = {"token_ids": prompt_ids, "sampling_params": {**common, "logprobs": 1}}
    else:
        body = {"prompt": prompt_ids, **common, "logprobs": 0, "return_token_ids": True}
    if model is not None:
        body["model"] = model
    return body


def parse_completion(protocol: ApiProtocol, payload: Any, max_tokens: int) -> Completion:
    """Read one completion; any shape or invariant violation raises CompletionError."""
    try:
        if protocol is ApiProtocol.SGLANG:
            meta = payload["meta_info"]
            pairs = meta.get("output_token_logprobs") or []
            token_ids = [int(item[1]) for item in pairs]
            logprobs = [float(item[0]) for item in pairs]
            finish = meta.get("finish_reason")
            reason = finish.get("type") if isinstance(finish, dict) else finish
        else:
            choice = payload["choices"][0]
            token_ids = [int(t) for t in choice["token_ids"]]
            logprob_block = choice.get("logprobs") or {}
            if protocol is ApiProtocol.VLLM:
                logprobs = [float(item["logprob"]) for item in logprob_block.get("content") or []]
            else:
                logprobs = [float(value) for value in logprob_block.get("token_logprobs") or []]
            reason = choice.get("finish_reason")
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise CompletionError(f"unexpected {protocol} response shape: {type(error).__name__}: {error}") from None
    finish_reason = _finish_reason(reason)
    if len(token_ids) > max_tokens:
        raise CompletionError(f"server returned {len(token_ids)} tokens for max_tokens={max_tokens}")
    return Completion.build(token_ids, logprobs, finish_reason)


def _finish_reason(reason: object) -> FinishReason:
    if reason == "length":
        return FinishReason.LENGTH
    if isinstance(reason, str) and reason.lower() in _ABORT_REASONS:
        return FinishReason.ABORT
    return FinishReason.STOP


class RolloutClient:
    """Sends generation requests to one router or server; use one per event loop."""

    def __init__(self, settings: ClientSettings, *, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        self.settings = settings
        self._limiter = PriorityLimiter(settings.max_concurrency)
        self._session: aiohttp.ClientSession | None = None
        self._sleep = sleep
        self.requests_sent = 0
        self.retries = 0

    async def __aenter__(self) -> RolloutClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.settings.max_concurrency, limit_per_host=0)
            timeout = aiohttp.ClientTimeout(
                total=self.settings.request_timeout_s, sock_connect=self.settings.connect_timeout_s
            )
            self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False)
        return self._session

    async def generate(
        self, prompt_ids: np.ndarray, max_tokens: int, sampling: SamplingParams, *, priority: int = 0
    ) -> Completion:
        """Generate up to `max_tokens` after `prompt_ids`; raises GenerationError when it cannot."""
        if max_tokens <= 0:
            raise GenerationError(f"max_tokens must be positive, got {max_tokens}")
        body = orjson.dumps(
            build_body(self.settings.protocol, prompt_ids, max_tokens, sampling, self.settings.model),
            option=orjson.OPT_SERIALIZE_NUMPY,
        )
        async with self._limiter.slot(priority):
            return await self._post_with_retries(body, max_tokens)

    __call__ = generate

    async def _post_with_retries(self, body: bytes, max_tokens: int) -> Completion:
        attempts = self.settings.max_retries + 1
        for attempt in range(attempts):
            try:
                return await self._post_once(body, max_tokens)
            except _Transient as error:
                if attempt + 1 == attempts:
                    raise GenerationError(f"{error} (gave up after {attempts} attempts)") from None
                self.retries += 1
                await self._sleep(self._backoff(attempt))
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        cap = min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2**attempt)
        return cap / 2 + random.uniform(0, cap / 2)

    async def _post_once(self, body: bytes, max_tokens: int) -> Completion:
        self.requests_sent += 1
        headers = {"Content-Type": "application/json"}
        try:
            async with self._get_session().post(self.settings.url, data=body, headers=headers) as response:
                raw = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError, ConnectionError) as error:
            raise _Transient(f"request to {self.settings.url} failed: {type(error).__name__}: {error}") from None
        if status >= 500 or status in _TRANSIENT_STATUS:
            raise _Transient(f"HTTP {status} from {self.settings.url}: {_snippet(raw)}")
        if status >= 400:
            raise GenerationError(f"HTTP {status} from {self.settings.url}: {_snippet(raw)}", status=status)
        try:
            return parse_completion(self.settings.protocol, orjson.loads(raw), max_tokens)
        except (orjson.JSONDecodeError, CompletionError) as error:
            raise _Transient(f"bad response from {self.settings.url}: {error}") from None


def _snippet(raw: bytes, limit: int = 300) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."
