"""Benchmark 5: the cost of a question grows linearly with its number of chunks (real server).

One question at a time (so each time is that question's own latency) through the real vLLM CPU
server, at 1 to 16 chunks of 1024 tokens, three runs of each size in a shuffled order (so a slow
drift of the machine does not line up with size). A straight line is fitted to the median time of
each size against chunks; its slope (seconds per chunk) and R^2 are reported, with the R^2 over
every single run beside it.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time

import numpy as np

from bench.bench_chunking import linear_fit
from bench.bench_overhead import SAMPLING  # greedy and unseeded, for the same reason
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.inference.client import ApiProtocol, ClientSettings, RolloutClient
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, load_tokenizer

CHUNK_TOKENS = 1024


async def timed_questions(url: str, agent: MemoryAgent, chunk_counts: list[int]) -> list[tuple[int, float]]:
    rng = np.random.default_rng(1)
    async with RolloutClient(ClientSettings(url, protocol=ApiProtocol.VLLM, max_concurrency=1)) as client:
        await agent.run("warm up", rng.integers(1000, 100_000, CHUNK_TOKENS, dtype=np.int32), client, SAMPLING)
        points = []
        for chunks in chunk_counts:
            context = rng.integers(1000, 100_000, chunks * CHUNK_TOKENS, dtype=np.int32)
            started = time.perf_counter()
            trajectory = await agent.run(f"question with {chunks} chunks", context, client, SAMPLING)
            points.append((trajectory.num_chunks, time.perf_counter() - started))
        return points


def run(url: str, quick: bool) -> dict:
    sizes = [1, 2, 4] if quick else [1, 2, 4, 8, 12, 16]
    counts = sizes * (1 if quick else 3)
    random.Random(5).shuffle(counts)
    # uncapped (max_chunks=0): cost must grow with the whole document, not stop at the training cap
    config = MemAgentConfig(chunk_tokens=CHUNK_TOKENS, max_memory_tokens=16, max_final_tokens=8, max_chunks=0)
    agent = MemoryAgent(load_tokenizer(BUNDLED_QWEN3), config)
    points = asyncio.run(timed_questions(url, agent, counts))
    medians = [(float(size), statistics.median(s for c, s in points if c == size)) for size in sizes]
    slope, intercept, r2 = linear_fit([c for c, _ in medians], [s for _, s in medians])
    _, _, r2_runs = linear_fit([float(c) for c, _ in points], [s for _, s in points])
    return {
        "server": "vLLM CPU build (tiny Qwen3) behind vllm-router, one question at a time",
        "points": [{"chunks": c, "seconds": round(s, 3)} for c, s in sorted(points)],
        "median_points": [{"chunks": int(c), "seconds": round(s, 3)} for c, s in medians],
        "seconds_per_chunk": round(slope, 4),
        "intercept_s": round(intercept, 4),
        "r2": round(r2, 4),
        "r2_every_run": round(r2_runs, 4),
    }
