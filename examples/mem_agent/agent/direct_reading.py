"""The long-context baseline: the same model reading the whole document in one prompt.

MemAgent's headline figure sets the memory agent beside the same model given the whole context at
once; this is that reader, so both land on one accuracy-vs-length plot. A document longer than the
model's window is cut in the middle as RULER does (the first and last halves of the tokens that
fit are kept, the middle is dropped and recorded), with the same rule `MEM_MAX_CHUNKS` applies to
the memory agent's input. What fits is the window less the answer budget (`MEM_MAX_FINAL`) and
the prompt's own tokens, so no request can overrun the server's context.

The reader has the agent's shape (`tokenize_context`, `run`, `config`, `prompt_facts`), so the
evaluator schedules, scores and records it like any other trajectory: one final turn, no memory.
Because the cut can drop the very sentence that answers, each result line also says whether a gold
answer survived it (`gold_in_window`, by the gold marks' rule on the window's decoded text).
The wording is ours; a template file (`MEM_PROMPTS`) holds memory-agent prompts and does not apply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mem_agent.agent.chunking import TokenIds, as_token_ids, plan_chunks
from mem_agent.agent.gold_marks import holds_gold
from mem_agent.agent.prompt_sets import ResponseCleaner
from mem_agent.agent.prompts import built_in_facts, compile_template
from mem_agent.agent.records import NO_IDS, SamplingParams, Trajectory, TrajectoryStatus, Turn, TurnKind
from mem_agent.agent.workflow import Generate, TurnRecorder, tokenize
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import decode, encode

DIRECT_MODE = "direct"

DIRECT_TURN_TEXT = """Read the document below, then answer a question about it.

<problem>
{problem}
</problem>

<document>
{context}
</document>

The question again: {problem}
Answer it from the document. Reason briefly, then give the final answer inside \\boxed{{}}."""


class WindowTooSmallError(ValueError):
    """The window cannot hold the prompt and the answer budget; the message names both."""


class DirectReader:
    """One prompt per document: the problem, as much of the document as fits, the problem again."""

    def __init__(self, tokenizer: Any, config: MemAgentConfig, window: int) -> None:
        self.tokenizer = tokenizer
        self.config = config
        self.window = window
        self.template = compile_template(tokenizer, DIRECT_TURN_TEXT, thinking=config.thinking)
        self.cleaner = ResponseCleaner(tokenizer, config.thinking)
        self.prompt_facts: dict[str, Any] = built_in_facts(DIRECT_TURN_TEXT, mode=DIRECT_MODE)
        if self.context_budget(0) <= 0:
            raise WindowTooSmallError(
                f"a {window}-token window leaves no room for the document: the prompt takes"
                f" {self.template.static_tokens} tokens and the answer budget (MEM_MAX_FINAL) {config.max_final_tokens}"
            )

    def context_budget(self, problem_tokens: int) -> int:
        """Document tokens that fit beside a problem of `problem_tokens` (it appears twice)."""
        used = self.template.static_tokens + 2 * problem_tokens + self.config.max_final_tokens
        return self.window - used

    async def tokenize_context(self, document: str) -> np.ndarray:
        return await tokenize(self.tokenizer, document)

    async def run(
        self,
        problem: str,
        context: str | TokenIds,
        generate: Generate,
        sampling: SamplingParams,
        on_turn: Callable[[Turn], None] | None = None,
        keep_prompt_ids: bool = True,
    ) -> Trajectory:
        context_ids = as_token_ids(await self.tokenize_context(context) if isinstance(context, str) else context)
        problem_ids = encode(self.tokenizer, problem)
        total = int(context_ids.shape[0])
        trajectory = Trajectory(turns=[], status=TrajectoryStatus.COMPLETED, context_tokens=total)
        budget = self.context_budget(int(problem_ids.shape[0]))
        if budget <= 0:
            trajectory.status = TrajectoryStatus.FAILED
            trajectory.error = f"the question alone fills the {self.window}-token window"
            return trajectory
        # One chunk of `budget` tokens capped at one: plan_chunks keeps the first and last halves.
        plan = plan_chunks(context_ids, budget, max_chunks=1)
        trajectory.dropped_tokens = plan.dropped_tokens
        prompt = self.template.render(problem=problem_ids, context=plan.tokens[:])  # a spilled array is read here
        recorder = TurnRecorder(trajectory, on_turn, keep_prompt_ids)
        return await recorder.run(self._answer(prompt, generate, sampling, recorder))

    async def _answer(
        self, prompt: np.ndarray, generate: Generate, sampling: SamplingParams, recorder: TurnRecorder
    ) -> None:
        completion = await generate(prompt, self.config.max_final_tokens, sampling, priority=1)
        recorder.answer(Turn(TurnKind.FINAL, 0, prompt, completion, NO_IDS), self.cleaner.text)


async def window_facts(
    reader: object, trajectory: Trajectory, context_ids: TokenIds, golds: Sequence[str]
) -> dict[str, bool]:
    """`{"gold_in_window": ...}` for a direct run whose prompt was answered: whether the document's
    tokens it kept (the same cut as `run`'s) decode to a text holding a gold answer
    (`gold_marks.holds_gold`); `{}` for a memory agent or where no prompt was sent. Decoding and
    reading a window of up to a million tokens runs in a thread, off the event loop."""
    if not isinstance(reader, DirectReader) or not trajectory.turns:
        return {}
    kept, tokenizer = trajectory.context_tokens - trajectory.dropped_tokens, reader.tokenizer
    if kept <= 0:
        return {"gold_in_window": False}

    def window_holds_gold() -> bool:
        window = plan_chunks(as_token_ids(context_ids), kept, max_chunks=1).tokens[:]
        return holds_gold(decode(tokenizer, window), golds)

    return {"gold_in_window": await asyncio.to_thread(window_holds_gold)}
