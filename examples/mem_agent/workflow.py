"""The memory-agent loop, once, for training hooks, the evaluator and the CLIs alike.

Pure async logic: it knows nothing of HTTP, slime or vime. It is given a `Generate` callable
(the rollout client, a test double, a latency model) and returns a `Trajectory`. Because the
trainer and the evaluator run this same code, what is evaluated is exactly what is trained.

The loop (MemAgent): memory starts as a fixed "no notes yet" text; each chunk is read in a fresh
chat of problem + memory + chunk, and the whole response becomes the new memory (a response cut
by max_tokens is still used, and its turn is marked truncated); the final chat sees problem +
memory only and answers inside \\boxed{}. A mode (`MEM_MODE`) plugs in through `TurnPlanner`:
`MemAgentPlanner` here, `ReMemR1Planner` (recall of an earlier memory) in rememr1.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from mem_agent.chunking import ChunkPlan, plan_chunks
from mem_agent.config import AgentMode, MemAgentConfig
from mem_agent.prompts import MemAgentPrompts
from mem_agent.records import (
    Completion,
    FinishReason,
    GenerationError,
    SamplingParams,
    Trajectory,
    TrajectoryStatus,
    Turn,
    TurnKind,
)
from mem_agent.rememr1 import ReMemR1Planner, ReMemR1Prompts
from mem_agent.tokenizer import TOKEN_DTYPE, decode, encode

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_THREAD_TOKENIZE_CHARS = 50_000  # longer texts are tokenised off the event loop


class Generate(Protocol):
    """One model call: prompt ids in, the server's own completion out.

    `priority` is how many turns the trajectory still has to run (this one included); a
    scheduler with fewer slots than requests serves the largest first, so long documents are
    never left for last.
    """

    async def __call__(
        self, prompt_ids: np.ndarray, max_tokens: int, sampling: SamplingParams, *, priority: int = 0
    ) -> Completion: ...


class TurnPlanner(Protocol):
    """What a mode decides: each prompt, and how a memory turn's response changes its state."""

    def memory_prompt(self, step: int, chunk: np.ndarray) -> np.ndarray: ...

    def after_memory_turn(self, step: int, memory: np.ndarray, completion: Completion) -> dict[str, object]: ...

    def final_prompt(self) -> np.ndarray: ...

    @property
    def memory(self) -> np.ndarray: ...


@dataclass
class MemAgentPlanner:
    prompts: MemAgentPrompts
    problem_ids: np.ndarray
    memory: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.memory = self.prompts.no_memory

    def memory_prompt(self, step: int, chunk: np.ndarray) -> np.ndarray:
        return self.prompts.memory_turn.render(problem=self.problem_ids, memory=self.memory, section=chunk)

    def after_memory_turn(self, step: int, memory: np.ndarray, completion: Completion) -> dict[str, object]:
        self.memory = memory
        return {}

    def final_prompt(self) -> np.ndarray:
        return self.prompts.final_turn.render(problem=self.problem_ids, memory=self.memory)


class ResponseCleaner:
    """Turns a response into memory ids or answer text without re-tokenising anything."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, thinking: bool) -> None:
        self._tokenizer = tokenizer
        self._thinking = thinking
        self._special_ids = frozenset(int(i) for i in tokenizer.all_special_ids)
        think_end = tokenizer.convert_tokens_to_ids("</think>")
        self._think_end = think_end if isinstance(think_end, int) and think_end != tokenizer.unk_token_id else None
        self._blank_ids: dict[int, bool] = {}

    def visible_ids(self, response_ids: np.ndarray) -> np.ndarray:
        """The response less trailing special tokens (EOS) and, with thinking on, its <think> part.

        With thinking on, a response cut before `</think>` has no visible part: the memory
        becomes empty, which is the honest outcome of a turn that never wrote its notes.
        """
        ids = response_ids
        end = int(ids.shape[0])
        while end and int(ids[end - 1]) in self._special_ids:
            end -= 1
        ids = ids[:end]
        if not self._thinking or self._think_end is None:
            return ids
        closing = np.flatnonzero(ids == self._think_end)
        if closing.size == 0:
            return ids[:0]
        ids = ids[int(closing[-1]) + 1 :]
        start = 0
        while start < ids.shape[0] and self._is_blank(int(ids[start])):
            start += 1
        return ids[start:]

    def text(self, response_ids: np.ndarray) -> str:
        return decode(self._tokenizer, self.visible_ids(response_ids))

    def _is_blank(self, token_id: int) -> bool:
        if token_id not in self._blank_ids:
            self._blank_ids[token_id] = self._tokenizer.decode([token_id]).strip() == ""
        return self._blank_ids[token_id]


class MemoryAgent:
    """The loop for one tokenizer and configuration; build once, run for any number of documents."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, config: MemAgentConfig) -> None:
        self.tokenizer = tokenizer
        self.config = config
        self.prompts: MemAgentPrompts | ReMemR1Prompts
        if config.mode is AgentMode.REMEMR1:
            self.prompts = ReMemR1Prompts.build(tokenizer, thinking=config.thinking)
        else:
            self.prompts = MemAgentPrompts.build(tokenizer, thinking=config.thinking)
        self.cleaner = ResponseCleaner(tokenizer, config.thinking)

    async def tokenize(self, text: str) -> np.ndarray:
        if len(text) > _THREAD_TOKENIZE_CHARS:
            return await asyncio.to_thread(encode, self.tokenizer, text)
        return encode(self.tokenizer, text)

    def new_planner(self, problem_ids: np.ndarray) -> TurnPlanner:
        if isinstance(self.prompts, ReMemR1Prompts):
            return ReMemR1Planner(
                self.prompts, problem_ids, self.tokenizer, self.config.retriever, self.config.rememr1_memory
            )
        return MemAgentPlanner(self.prompts, problem_ids)

    async def run(
        self,
        problem: str,
        context: str | np.ndarray,
        generate: Generate,
        sampling: SamplingParams,
        on_turn: Callable[[Turn], None] | None = None,
        keep_prompt_ids: bool = True,
    ) -> Trajectory:
        """Run every turn for one document; `on_turn` sees each turn as it completes (progress, logs).

        Evaluation passes `keep_prompt_ids=False`: prompts of a 900K-token document add up to as
        much memory as the document itself, and only training needs them after the request.
        """
        problem_ids = await self.tokenize(problem)
        context_ids = await self.tokenize(context) if isinstance(context, str) else context
        plan = plan_chunks(np.asarray(context_ids, dtype=TOKEN_DTYPE), self.config.chunk_tokens, self.config.max_chunks)
        trajectory = Trajectory(
            turns=[],
            status=TrajectoryStatus.COMPLETED,
            context_tokens=plan.context_tokens,
            dropped_tokens=plan.dropped_tokens,
            num_chunks=plan.num_chunks,
        )
        planner = self.new_planner(problem_ids)
        try:
            await self._run_turns(plan, planner, generate, sampling, _Recorder(trajectory, on_turn, keep_prompt_ids))
        except GenerationError as error:
            trajectory.status = TrajectoryStatus.FAILED
            trajectory.error = error.reason
        return trajectory

    async def _run_turns(
        self,
        plan: ChunkPlan,
        planner: TurnPlanner,
        generate: Generate,
        sampling: SamplingParams,
        recorder: _Recorder,
    ) -> None:
        trajectory = recorder.trajectory
        for step in range(plan.num_chunks):
            prompt = planner.memory_prompt(step, plan.chunk(step))
            remaining = plan.num_chunks - step + 1
            completion = await generate(prompt, self.config.max_memory_tokens, sampling, priority=remaining)
            memory = self.cleaner.visible_ids(completion.token_ids)
            extras = planner.after_memory_turn(step, memory, completion)
            recorder.add(Turn(TurnKind.MEMORY, step, prompt, completion, planner.memory, extras))
            if completion.finish_reason is FinishReason.ABORT:
                trajectory.status = TrajectoryStatus.ABORTED
                return
        prompt = planner.final_prompt()
        completion = await generate(prompt, self.config.max_final_tokens, sampling, priority=1)
        recorder.add(Turn(TurnKind.FINAL, plan.num_chunks, prompt, completion, planner.memory))
        if completion.finish_reason is FinishReason.ABORT:
            trajectory.status = TrajectoryStatus.ABORTED
            return
        trajectory.answer = self.cleaner.text(completion.token_ids)


@dataclass
class _Recorder:
    trajectory: Trajectory
    on_turn: Callable[[Turn], None] | None
    keep_prompt_ids: bool

    def add(self, turn: Turn) -> None:
        self.trajectory.turns.append(turn)
        if self.on_turn is not None:
            self.on_turn(turn)
        if not self.keep_prompt_ids:
            turn.prompt_ids = turn.prompt_ids[:0]
