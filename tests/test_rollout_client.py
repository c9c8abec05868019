"""The router client: wire formats, and behaviour under real faults in front of the real router."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from mem_agent.agent.records import CompletionError, FinishReason, GenerationError, SamplingParams
from mem_agent.inference.client import ApiProtocol, ClientSettings, RolloutClient, build_body, parse_completion
from support.fault_proxy import TRANSIENT_FAULTS, Fault, fault_proxy, scripted

PROMPT = np.array([9707, 11, 1879, 0, 576, 374], dtype=np.int32)
SAMPLING = SamplingParams(temperature=0.7, top_p=0.95)


def _generate(settings: ClientSettings, max_tokens: int = 16, prompt: np.ndarray = PROMPT):
    async def go():
        async with RolloutClient(settings) as client:
            completion = await client.generate(prompt, max_tokens, SAMPLING)
            return completion, client

    return asyncio.run(go())


# --- wire formats ---------------------------------------------------------------------------


def test_vllm_body_sends_token_ids_and_asks_for_one_logprob_per_token():
    body = build_body(ApiProtocol.VLLM, PROMPT, 32, SamplingParams(0.7, 0.95, top_k=20, seed=3), model="m")
    assert body["model"] == "m" and body["token_ids"] is PROMPT
    assert body["sampling_params"] == {
        "max_tokens": 32,
        "temperature": 0.7,
        "top_p": 0.95,
        "top_k": 20,
        "seed": 3,
        "logprobs": 1,
    }


def test_openai_body_asks_for_token_ids_back_and_omits_an_unset_model():
    body = build_body(ApiProtocol.OPENAI, PROMPT, 8, SamplingParams(), model=None)
    assert "model" not in body and body["prompt"] is PROMPT
    assert body["return_token_ids"] is True and body["logprobs"] == 0 and "top_k" not in body


def test_sglang_body_keeps_stop_tokens_and_special_tokens_in_the_output():
    body = build_body(ApiProtocol.SGLANG, PROMPT, 8, SamplingParams(seed=5), model="ignored")
    assert body["input_ids"] is PROMPT and body["return_logprob"] is True and "model" not in body
    params = body["sampling_params"]
    assert params["max_new_tokens"] == 8 and params["no_stop_trim"] is True
    assert params["skip_special_tokens"] is False and params["sampling_seed"] == 5


def test_sglang_response_is_read_from_output_token_logprobs():
    payload = {
        "text": "ab",
        "meta_info": {
            "output_token_logprobs": [[-0.5, 11, None], [-1.5, 12, None]],
            "finish_reason": {"type": "length"},
        },
    }
    completion = parse_completion(ApiProtocol.SGLANG, payload, max_tokens=2)
    assert completion.token_ids.tolist() == [11, 12] and completion.logprobs.tolist() == [-0.5, -1.5]
    assert completion.finish_reason is FinishReason.LENGTH


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        ("abort", FinishReason.ABORT),
        ("cancelled", FinishReason.ABORT),
        ("stop", FinishReason.STOP),
        (None, FinishReason.STOP),
    ],
)
def test_finish_reasons_map_onto_stop_length_abort(wire, reason):
    payload = {"choices": [{"token_ids": [1], "logprobs": {"content": [{"logprob": -1.0}]}, "finish_reason": wire}]}
    assert parse_completion(ApiProtocol.VLLM, payload, max_tokens=4).finish_reason is reason


@pytest.mark.parametrize(
    "payload",
    [
        {"choices": [{"token_ids": [1, 2], "logprobs": {"content": [{"logprob": -1.0}]}, "finish_reason": "stop"}]},
        {"choices": []},
        {"error": "oops"},
        {"choices": [{"token_ids": [1, 2, 3, 4, 5], "logprobs": {"content": [{"logprob": -1.0}] * 5}}]},
    ],
)
def test_responses_that_break_an_invariant_are_refused(payload):
    with pytest.raises(CompletionError):
        parse_completion(ApiProtocol.VLLM, payload, max_tokens=4)


def test_backoff_grows_exponentially_with_jitter_and_is_capped():
    client = RolloutClient(ClientSettings("http://127.0.0.1:9", backoff_base_s=1.0, backoff_max_s=8.0))
    for attempt, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (9, 8.0)]:
        delays = {client._backoff(attempt) for _ in range(50)}
        assert all(cap / 2 <= delay <= cap for delay in delays) and len(delays) > 1


# --- against the real server ------------------------------------------------------------------


@pytest.mark.server
@pytest.mark.parametrize("protocol", [ApiProtocol.VLLM, ApiProtocol.OPENAI])
def test_both_vllm_protocols_return_aligned_ids_within_max_tokens(stack, protocol):
    completion, client = _generate(ClientSettings(stack.router_url, protocol=protocol), max_tokens=12)
    assert 0 < len(completion) <= 12 and len(completion.logprobs) == len(completion)
    assert (completion.logprobs <= 0).all()
    assert completion.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
    assert client.requests_sent == 1 and client.retries == 0


@pytest.mark.server
def test_transient_faults_are_retried_until_a_good_answer(stack):
    faults = (Fault.HTTP_500, Fault.HTTP_503, Fault.RESET)
    with fault_proxy(stack.router_url, scripted(*faults)) as proxy:
        completion, client = _generate(ClientSettings(proxy.url, max_retries=3, backoff_base_s=0.01))
    assert len(completion) > 0 and client.retries == 3 and proxy.requests == 4


@pytest.mark.server
@pytest.mark.parametrize("fault", TRANSIENT_FAULTS)
def test_each_kind_of_transient_fault_is_retried(stack, fault):
    with fault_proxy(stack.router_url, scripted(fault), stall_s=6.0) as proxy:
        settings = ClientSettings(proxy.url, max_retries=1, backoff_base_s=0.01, request_timeout_s=3.0)
        completion, client = _generate(settings)
    assert len(completion) > 0 and client.retries == 1 and proxy.injected[fault] == 1


@pytest.mark.server
def test_a_4xx_fails_at_once_with_the_servers_message(stack):
    with (
        fault_proxy(stack.router_url, scripted(Fault.HTTP_400)) as proxy,
        pytest.raises(GenerationError, match=r"HTTP 400.*injected http_400") as error,
    ):
        _generate(ClientSettings(proxy.url, max_retries=5, backoff_base_s=0.01))
    assert error.value.status == 400 and proxy.requests == 1


@pytest.mark.server
def test_retries_are_bounded_and_the_last_reason_is_kept(stack):
    with (
        fault_proxy(stack.router_url, scripted(*[Fault.HTTP_503] * 10)) as proxy,
        pytest.raises(GenerationError, match=r"HTTP 503.*gave up after 3 attempts"),
    ):
        _generate(ClientSettings(proxy.url, max_retries=2, backoff_base_s=0.01))
    assert proxy.requests == 3


@pytest.mark.server
def test_a_stalled_request_times_out_instead_of_hanging(stack):
    with fault_proxy(stack.router_url, scripted(Fault.STALL), stall_s=30.0) as proxy:
        started = time.monotonic()
        with pytest.raises(GenerationError, match="TimeoutError"):
            _generate(ClientSettings(proxy.url, max_retries=0, request_timeout_s=1.5))
        assert time.monotonic() - started < 10


@pytest.mark.server
def test_an_abort_is_surfaced_as_a_finish_reason_not_retried(stack):
    with fault_proxy(stack.router_url, scripted(Fault.ABORT)) as proxy:
        completion, client = _generate(ClientSettings(proxy.url))
    assert completion.finish_reason is FinishReason.ABORT and proxy.requests == 1 and client.retries == 0


@pytest.mark.server
def test_concurrency_limit_caps_requests_in_flight(stack):
    async def go(url):
        async with RolloutClient(ClientSettings(url, max_concurrency=2)) as client:
            await asyncio.gather(*(client.generate(PROMPT, 8, SAMPLING) for _ in range(8)))

    with fault_proxy(stack.router_url, scripted()) as proxy:
        asyncio.run(go(proxy.url))
    assert proxy.requests == 8 and proxy.max_in_flight == 2


@pytest.mark.server
def test_proxy_variables_in_the_environment_are_ignored(stack, monkeypatch):
    """Routers live on the cluster network; an HTTP proxy from the environment must not reroute them."""
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    completion, _ = _generate(ClientSettings(stack.router_url))
    assert len(completion) > 0


def test_an_unreachable_server_is_a_generation_error_with_the_address():
    with pytest.raises(GenerationError, match=r"127\.0\.0\.1:9.*gave up after 2 attempts"):
        _generate(ClientSettings("http://127.0.0.1:9", max_retries=1, backoff_base_s=0.01))
