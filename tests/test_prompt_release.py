"""An evaluation (`keep_prompt_ids=False`) lets go of every prompt once its request has returned.

The evaluator holds 128 trajectories of up to 181 turns at once; a prompt kept alive by its turn
record (a zero-length slice still holds its whole base array) costs up to as much memory as the
documents' own ids (benchmark 4). No server: a stand-in generator that remembers each prompt it
was sent only by a weak reference.
"""

from __future__ import annotations

import asyncio
import gc
import weakref

import numpy as np

from mem_agent.agent.direct_reading import DirectReader
from mem_agent.agent.records import Completion, FinishReason, SamplingParams
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import encode

SAMPLING = SamplingParams(temperature=1.0, top_p=1.0, seed=None)


class _WeakGenerator:
    def __init__(self, tokenizer) -> None:
        self.reply = encode(tokenizer, "Notes: nothing yet.")
        self.sent: list[weakref.ref] = []
        self.lengths: list[int] = []

    async def __call__(self, prompt_ids, max_tokens, sampling, *, priority=0) -> Completion:
        self.sent.append(weakref.ref(prompt_ids))
        self.lengths.append(len(prompt_ids))
        ids = self.reply[:max_tokens].tolist()
        return Completion.build(ids, [0.0] * len(ids), FinishReason.STOP)


def _run(agent, tokenizer, keep_prompt_ids: bool):
    generate = _WeakGenerator(tokenizer)
    context = encode(tokenizer, "A page about rivers and towns. " * 200)
    trajectory = asyncio.run(agent.run("Which river?", context, generate, SAMPLING, keep_prompt_ids=keep_prompt_ids))
    gc.collect()
    return trajectory, [ref() for ref in generate.sent], generate.lengths


def test_an_evaluated_trajectory_keeps_no_prompt_alive_but_its_length(tokenizer):
    agent = MemoryAgent(tokenizer, MemAgentConfig(chunk_tokens=256, max_memory_tokens=16, max_final_tokens=8))
    trajectory, prompts, lengths = _run(agent, tokenizer, keep_prompt_ids=False)
    assert len(trajectory.turns) == trajectory.num_chunks + 1 > 2
    assert prompts == [None] * len(prompts)
    assert [turn.prompt_ids.size for turn in trajectory.turns] == [0] * len(lengths)
    assert [turn.extras["prompt_tokens"] for turn in trajectory.turns] == lengths


def test_a_training_trajectory_keeps_every_prompt(tokenizer):
    agent = MemoryAgent(tokenizer, MemAgentConfig(chunk_tokens=256, max_memory_tokens=16, max_final_tokens=8))
    trajectory, prompts, _ = _run(agent, tokenizer, keep_prompt_ids=True)
    assert all(np.array_equal(turn.prompt_ids, sent) for turn, sent in zip(trajectory.turns, prompts, strict=True))


def test_a_direct_reading_keeps_no_prompt_alive(tokenizer):
    reader = DirectReader(tokenizer, MemAgentConfig(max_final_tokens=8), window=4096)
    trajectory, prompts, _ = _run(reader, tokenizer, keep_prompt_ids=False)
    assert len(trajectory.turns) == 1 and prompts == [None]
