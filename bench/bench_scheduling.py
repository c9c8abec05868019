"""Benchmark 2: per-question pipelining versus lock-step rounds, against a latency-model server.

128 questions of 1 to 16 chunks. Lock-step is MemAgent's synchronous mode: every question sends
turn k, and turn k+1 starts only when the slowest of them is back. Pipelined is our evaluator's
path (the real workflow and the real ClientPool): each question sends its next turn as soon as
its last one returns, and requests share C slots, served first come first served (`fifo`) or
most-turns-left first (`priority`, the default). All strategies meet the same predrawn work, so
wall times compare exactly with each other and with the lower bound
max(longest question's total latency, total work / C).

The server is a latency model (base + generated tokens x per-token time; see latency_model.py),
a stand-in for a GPU server: it measures scheduling, not the model.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

import numpy as np

from bench.latency_model import CURRENT_QUESTION, LatencyModel, LatencyServer, Workload
from mem_agent.agent.records import SamplingParams
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.inference.client_pool import ClientPool
from mem_agent.inference.scheduling import PriorityLimiter
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, load_tokenizer

CHUNK_TOKENS = 64  # prompt size does not enter the latency model; small chunks keep prompt building cheap
SAMPLING = SamplingParams()


@dataclass(frozen=True)
class SchedulingCase:
    slots: int
    lockstep_s: float
    fifo_s: float
    priority_s: float
    bound_s: float

    def as_dict(self) -> dict[str, float]:
        return {
            "slots": self.slots,
            "lockstep_s": round(self.lockstep_s, 3),
            "pipelined_fifo_s": round(self.fifo_s, 3),
            "pipelined_priority_s": round(self.priority_s, 3),
            "lower_bound_s": round(self.bound_s, 3),
            "speedup_vs_lockstep": round(self.lockstep_s / self.priority_s, 3),
            "priority_over_bound": round(self.priority_s / self.bound_s, 4),
            "fifo_over_bound": round(self.fifo_s / self.bound_s, 4),
        }


async def run_lockstep(model: LatencyModel, workload: Workload, slots: int) -> float:
    server = LatencyServer(model, workload)
    limiter = PriorityLimiter(slots)

    async def request(question: int) -> None:
        CURRENT_QUESTION.set(question)
        async with limiter.slot():
            await server(np.zeros(1, np.int32), 1 << 20, SAMPLING)

    started = time.monotonic()
    for turn in range(max(len(turns) for turns in workload.lengths)):
        active = [q for q, turns in enumerate(workload.lengths) if turn < len(turns)]
        await asyncio.gather(*(request(q) for q in active))
    return time.monotonic() - started


async def run_pipelined(
    agent: MemoryAgent, model: LatencyModel, workload: Workload, slots: int, *, prioritize: bool
) -> float:
    server = LatencyServer(model, workload)
    contexts = [np.arange(len(turns) - 1, dtype=np.int32).repeat(CHUNK_TOKENS) for turns in workload.lengths]

    async def question(index: int, pool: ClientPool) -> None:
        CURRENT_QUESTION.set(index)
        trajectory = await agent.run(f"question {index}", contexts[index], pool, SAMPLING, keep_prompt_ids=False)
        assert len(trajectory.turns) == len(workload.lengths[index]), "every predrawn turn is served"

    started = time.monotonic()
    async with ClientPool([server], slots, prioritize=prioritize) as pool:
        await asyncio.gather(*(question(q, pool) for q in range(len(contexts))))
    return time.monotonic() - started


def run(quick: bool, questions: int = 128, seed: int = 0) -> dict:
    time_scale = 0.1 if quick else 1.0
    model = LatencyModel(base_s=0.05 * time_scale, per_token_s=0.002 * time_scale)
    rng = random.Random(seed)
    chunks = [rng.randint(1, 16) for _ in range(questions)]
    workload = Workload.draw(model, chunks, seed)
    config = MemAgentConfig(
        chunk_tokens=CHUNK_TOKENS, max_memory_tokens=1024, max_final_tokens=64, max_chunks=0
    )  # read whole, as evaluated
    agent = MemoryAgent(load_tokenizer(BUNDLED_QWEN3), config)
    cases = []
    for slots in (32, 64, 128):
        cases.append(
            SchedulingCase(
                slots=slots,
                lockstep_s=asyncio.run(run_lockstep(model, workload, slots)),
                fifo_s=asyncio.run(run_pipelined(agent, model, workload, slots, prioritize=False)),
                priority_s=asyncio.run(run_pipelined(agent, model, workload, slots, prioritize=True)),
                bound_s=workload.lower_bound_s(model, slots),
            )
        )
    return {
        "server": "latency model (stand-in for a GPU server): base + generated tokens x per-token time",
        "model": {"base_s": model.base_s, "per_token_s": model.per_token_s},
        "questions": questions,
        "chunks_min_max": [min(chunks), max(chunks)],
        "total_requests": sum(len(turns) for turns in workload.lengths),
        "cases": [case.as_dict() for case in cases],
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
