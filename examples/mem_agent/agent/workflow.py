"""The memory-agent loop, once, for training hooks, the evaluator and the CLIs alike.

Pure async logic: it knows nothing of HTTP, slime or vime. It is given a `Generate` callable
(the rollout client, a test double, a latency model) and returns a `Trajectory`. Because the
trainer and the evaluator run this same code, what is evaluated is exactly what is trained.

The loop (MemAgent): memory starts as a fixed "no notes yet" text; each chunk is read in a fresh
chat of problem + memory + chunk, and the whole response becomes the new memory (a response cut
by max_tokens is still used, and its turn is marked truncated); the final chat sees problem +
memory only and answers inside \\boxed{}. A mode (`MEM_MODE`) plugs in through `TurnPlanner`:
`MemAgentPlanner` here, `ReMemR1Planner` (recall of an earlier memory) in rememr1.py. The prompts
(our built-in wording, or a template file's, spliced as ids or assembled as text) and the rule that
turns a response into the next memory come from prompt_sets.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mem_agent.agent.chunking import ChunkPlan, TokenIds, as_token_ids, plan_chunks
from mem_agent.agent.prompt_sets import PromptSet, build_prompt_set
from mem_agent.agent.records import (
    NO_IDS,
    Completion,
    FinishReason,
    GenerationError,
    SamplingParams,
    Trajectory,
    TrajectoryStatus,
    Turn,
    TurnKind,
)
from mem_agent.agent.rememr1 import ReMemR1Planner
from mem_agent.settings.config import AgentMode, MemAgentConfig
from mem_agent.tokenization.tokenizer import encode

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_THREAD_TOKENIZE_CHARS = 50_000  # longer texts are tokenised off the event loop


async def tokenize(tokenizer: PreTrainedTokenizerBase, text: str) -> np.ndarray:
    if len(text) > _THREAD_TOKENIZE_CHARS:
        return await asyncio.to_thread(encode, tokenizer, text)
    return encode(tokenizer, text)


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
    """What a mode decides: each prompt, and how a memory turn's response changes its state.

    Prompts come from a `PromptSet` (prompt_sets.py); the memory a planner carries is a slot of
    that set (ids or text), and `memory_ids` is its ids for the turn records.
    """

    def memory_prompt(self, step: int, chunk: np.ndarray) -> np.ndarray: ...

    def after_memory_turn(self, step: int, memory: Any, completion: Completion) -> dict[str, object]: ...

    def final_prompt(self) -> np.ndarray: ...

    @property
    def memory_ids(self) -> np.ndarray: ...


@dataclass
class MemAgentPlanner:
    prompts: PromptSet
    problem: Any
    memory: Any = field(init=False)

    def __post_init__(self) -> None:
        self.memory = self.prompts.no_memory

    @property
    def memory_ids(self) -> np.ndarray:
        return self.prompts.to_ids(self.memory)

    def memory_prompt(self, step: int, chunk: np.ndarray) -> np.ndarray:
        return self.prompts.memory_prompt(problem=self.problem, memory=self.memory, section=self.prompts.chunk(chunk))

    def after_memory_turn(self, step: int, memory: Any, completion: Completion) -> dict[str, object]:
        self.memory = memory
        return {}

    def final_prompt(self) -> np.ndarray:
        return self.prompts.final_prompt(problem=self.problem, memory=self.memory)


class MemoryAgent:
    """The loop for one tokenizer and configuration; build once, run for any number of documents."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, config: MemAgentConfig) -> None:
        self.tokenizer = tokenizer
        self.config = config
        self.prompts, self.prompt_facts = build_prompt_set(tokenizer, config)

    async def tokenize_context(self, document: str) -> np.ndarray:
        """A document's ids as the prompts' client would cut them (the text client strips it first)."""
        return await tokenize(self.tokenizer, self.prompts.context_text(document))

    def new_planner(self, question: str) -> TurnPlanner:
        problem = self.prompts.problem(question)
        if self.config.mode is AgentMode.REMEMR1:
            return ReMemR1Planner(
                self.prompts, problem, self.tokenizer, self.config.retriever, self.config.rememr1_memory
            )
        return MemAgentPlanner(self.prompts, problem)

    async def _build(self, build: Callable[..., np.ndarray], *args: Any) -> np.ndarray:
        """A text prompt (decode, chat template, encode of ~chunk size) is built off the event loop."""
        if self.prompts.tokenizes_each_turn:
            return await asyncio.to_thread(build, *args)
        return build(*args)

    async def run(
        self,
        problem: str,
        context: str | TokenIds,
        generate: Generate,
        sampling: SamplingParams,
        on_turn: Callable[[Turn], None] | None = None,
        keep_prompt_ids: bool = True,
    ) -> Trajectory:
        """Run every turn for one document; `on_turn` sees each turn as it completes (progress, logs).

        Evaluation passes `keep_prompt_ids=False`: prompts of a 900K-token document add up to as
        much memory as the document itself, and only training needs them after the request.
        """
        context_ids = await self.tokenize_context(context) if isinstance(context, str) else context
        plan = plan_chunks(as_token_ids(context_ids), self.config.chunk_tokens, self.config.max_chunks)
        trajectory = Trajectory(
            turns=[],
            status=TrajectoryStatus.COMPLETED,
            context_tokens=plan.context_tokens,
            dropped_tokens=plan.dropped_tokens,
            num_chunks=plan.num_chunks,
        )
        recorder = TurnRecorder(trajectory, on_turn, keep_prompt_ids)
        return await recorder.run(self._run_turns(plan, self.new_planner(problem), generate, sampling, recorder))

    async def _run_turns(
        self,
        plan: ChunkPlan,
        planner: TurnPlanner,
        generate: Generate,
        sampling: SamplingParams,
        recorder: TurnRecorder,
    ) -> None:
        for step in range(plan.num_chunks):
            prompt = await self._build(planner.memory_prompt, step, plan.chunk(step))
            remaining = plan.num_chunks - step + 1
            completion = await generate(prompt, self.config.max_memory_tokens, sampling, priority=remaining)
            extras = planner.after_memory_turn(step, self.prompts.memory(completion.token_ids), completion)
            start, end = plan.span(step)  # where the chunk lies in the document, for the records
            extras = {**extras, "chunk_start": start, "chunk_end": end}
            if not recorder.add(Turn(TurnKind.MEMORY, step, prompt, completion, planner.memory_ids, extras)):
                return
        prompt = await self._build(planner.final_prompt)
        completion = await generate(prompt, self.config.max_final_tokens, sampling, priority=1)
        final = Turn(TurnKind.FINAL, plan.num_chunks, prompt, completion, planner.memory_ids)
        recorder.answer(final, self.prompts.answer)


@dataclass
class TurnRecorder:
    """Where a run's turns go, for the memory agent and the direct reader alike: the trajectory,
    the caller's `on_turn`, and whether prompt ids are kept once sent."""

    trajectory: Trajectory
    on_turn: Callable[[Turn], None] | None
    keep_prompt_ids: bool

    async def run(self, turns: Awaitable[None]) -> Trajectory:
        """The trajectory once `turns` have run; a request that failed for good ends it FAILED."""
        try:
            await turns
        except GenerationError as error:
            self.trajectory.status = TrajectoryStatus.FAILED
            self.trajectory.error = error.reason
        return self.trajectory

    def add(self, turn: Turn) -> bool:
        """Record `turn`; whether the run goes on (a request the server aborted ends it, ABORTED)."""
        self.trajectory.turns.append(turn)
        if self.on_turn is not None:
            self.on_turn(turn)
        if not self.keep_prompt_ids:  # its length stays known to the turn records
            turn.extras["prompt_tokens"] = len(turn.prompt_ids)
            turn.prompt_ids = NO_IDS
        if turn.completion.finish_reason is FinishReason.ABORT:
            self.trajectory.status = TrajectoryStatus.ABORTED
            return False
        return True

    def answer(self, final: Turn, read: Callable[[np.ndarray], str]) -> None:
        """Record the final turn, and the answer `read` finds in its response unless it was aborted."""
        if self.add(final):
            self.trajectory.answer = read(final.completion.token_ids)
