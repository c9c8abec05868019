"""Benchmark 1: what the workflow costs on top of the requests it sends, against the real server.

First the MemAgent workflow runs a set of questions through the real vLLM CPU server (via the
router) and every request it sends is recorded: prompt ids and max_tokens, in order, per question.
Then a minimal direct loop replays exactly those requests: plain aiohttp, one session, the same
questions in parallel with their turns in sequence, no prompt building, no bookkeeping. Both sample
greedily, so the server does the same work. Each round runs both, in the other order than the
round before (A B, B A, ...), and the figure is the median over rounds of workflow wall time /
direct wall time: the two runs of a round are neighbours in time, so the server's drift cancels.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import aiohttp
import numpy as np

from mem_agent.agent.records import Completion, SamplingParams
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.inference.client import ApiProtocol, ClientSettings, RolloutClient
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, load_tokenizer

# Greedy, so every run asks the server for the same work. No per-request seed: the vLLM CPU
# build (0.32) crashes its engine on a seeded request ("CPU Generator does not use offset").
SAMPLING = SamplingParams(temperature=0.0)


class Recorder:
    """A Generate that forwards to the client and keeps (question, prompt, max_tokens) in order."""

    def __init__(self, client: RolloutClient) -> None:
        self.client = client
        self.requests: dict[int, list[tuple[list[int], int]]] = {}

    def bind(self, question: int):
        log = self.requests.setdefault(question, [])

        async def generate(
            prompt_ids: np.ndarray, max_tokens: int, sampling: SamplingParams, *, priority: int = 0
        ) -> Completion:
            log.append((prompt_ids.tolist(), max_tokens))
            return await self.client.generate(prompt_ids, max_tokens, sampling, priority=priority)

        return generate


async def run_workflow(url: str, agent: MemoryAgent, contexts: list[np.ndarray], record: bool):
    settings = ClientSettings(url, protocol=ApiProtocol.VLLM, max_concurrency=len(contexts))
    async with RolloutClient(settings) as client:
        recorder = Recorder(client)
        started = time.perf_counter()
        await asyncio.gather(
            *(
                agent.run(f"question {q}", ctx, recorder.bind(q) if record else client, SAMPLING)
                for q, ctx in enumerate(contexts)
            )
        )
        return time.perf_counter() - started, recorder.requests


async def run_direct(url: str, requests: dict[int, list[tuple[list[int], int]]]) -> float:
    connector = aiohttp.TCPConnector(limit=len(requests))
    async with aiohttp.ClientSession(connector=connector, trust_env=False) as session:

        async def question(turns: list[tuple[list[int], int]]) -> None:
            for prompt, max_tokens in turns:
                body = {
                    "token_ids": prompt,
                    "sampling_params": {
                        "max_tokens": max_tokens,
                        "temperature": 0.0,
                        "top_p": 1.0,
                        "logprobs": 1,
                    },
                }
                async with session.post(
                    f"{url}/inference/v1/generate", data=json.dumps(body), headers={"Content-Type": "application/json"}
                ) as response:
                    response.raise_for_status()
                    payload = await response.json()
                    assert payload["choices"][0]["token_ids"] is not None

        started = time.perf_counter()
        await asyncio.gather(*(question(turns) for turns in requests.values()))
        return time.perf_counter() - started


def run(url: str, quick: bool) -> dict:
    # A run takes about 5 s on a 2-core CPU server and drifts by more than the overhead between
    # rounds: seven rounds, each in the other order, so neither side always meets a warmer server.
    questions, chunks, rounds = (4, 3, 1) if quick else (16, 6, 7)
    config = MemAgentConfig(chunk_tokens=1024, max_memory_tokens=24, max_final_tokens=16, max_chunks=0)
    tokenizer = load_tokenizer(BUNDLED_QWEN3)
    agent = MemoryAgent(tokenizer, config)
    rng = np.random.default_rng(0)
    contexts = [rng.integers(1000, 100_000, size=chunks * 1024, dtype=np.int32) for _ in range(questions)]
    _, requests = asyncio.run(run_workflow(url, agent, contexts, record=True))  # warm-up, and the record
    runs = {
        "workflow": lambda: asyncio.run(run_workflow(url, agent, contexts, record=False))[0],
        "direct": lambda: asyncio.run(run_direct(url, requests)),
    }
    seconds: dict[str, list[float]] = {side: [] for side in runs}
    for round_index in range(rounds):
        for side in list(runs) if round_index % 2 == 0 else reversed(runs):
            seconds[side].append(runs[side]())
    workflow_s, direct_s = seconds["workflow"], seconds["direct"]
    return {
        "server": "vLLM CPU build (tiny Qwen3) behind vllm-router",
        "questions": questions,
        "chunks_per_question": chunks,
        "requests_per_run": sum(len(turns) for turns in requests.values()),
        "workflow_s": [round(value, 3) for value in workflow_s],
        "direct_s": [round(value, 3) for value in direct_s],
        # Each round's two runs are neighbours in time, so their ratio cancels the server's drift
        # (runs of the same work range from 3 to 6.5 s here); the median of those ratios is the figure.
        "round_ratios": [round(w / d, 4) for w, d in zip(workflow_s, direct_s, strict=True)],
        "ratio": round(statistics.median(w / d for w, d in zip(workflow_s, direct_s, strict=True)), 4),
        "ratio_of_medians": round(statistics.median(workflow_s) / statistics.median(direct_s), 4),
    }
