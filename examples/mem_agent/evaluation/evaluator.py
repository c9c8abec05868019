"""The evaluator's engine: questions read, tokenised and run with bounded concurrency, each finished
one appended to its results file at once, failures kept as records with their reasons.

The command (mem_agent/eval_ruler_hqa.py) builds the agent, the client pool and the stores, and
hands in what else should see each trajectory (`on_trajectory`: the trajectory records of
--save-trajectories), so the engine knows nothing of the views built on top of it.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mem_agent.agent.chunking import TokenIds
from mem_agent.agent.direct_reading import DirectReader
from mem_agent.agent.records import SamplingParams, Trajectory
from mem_agent.agent.scoring import AnswerScores, ReportingRules, score_answer
from mem_agent.agent.step_rewards import recall_stats
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.token_file import spill
from mem_agent.evaluation.files import EvalFile, EvalItem, iter_items
from mem_agent.evaluation.results import ResultStore
from mem_agent.evaluation.suites import suite_named
from mem_agent.inference.client_pool import ClientPool
from mem_agent.settings.config import AgentMode

TEXTS_IN_MEMORY = 2  # documents read from the file but not yet tokenised
# Contexts longer than this are held in an unnamed file in the output folder while they run, read a
# chunk at a time (common/token_file.py): 128 questions of 3.5M tokens would otherwise hold 1.8 GB
# of ids. RULER-HQA up to 6400 documents (~900K tokens) stays in memory: no disk traffic there.
SPILL_ABOVE_TOKENS = 1 << 20

# What sees each trajectory: its file, item, trajectory, its answer read by the reporting rules (the box),
# the suite's own scores of it (what its result line holds) and the document's token ids.
OnTrajectory = Callable[[EvalFile, EvalItem, Trajectory, AnswerScores, dict[str, float], TokenIds], None]


class _WriteFailed(Exception):
    """A record that could not be written: the run stops (an item is never recorded as failed for it)."""


class Evaluator:
    def __init__(
        self,
        agent: MemoryAgent | DirectReader,
        pool: ClientPool,
        sampling: SamplingParams,
        questions_in_flight: int,
        on_trajectory: OnTrajectory | None = None,
        spill_folder: Path | None = None,
    ):
        self.agent = agent
        self.spill_folder = spill_folder  # where contexts of over SPILL_ABOVE_TOKENS tokens wait
        self.on_trajectory = on_trajectory  # e.g. --save-trajectories: each item's per-turn record
        self.pool = pool
        self.sampling = sampling
        self.questions_in_flight = questions_in_flight
        self.rules = ReportingRules.of(agent.config)  # MEM_FOLD_UNICODE, MEM_SUB_EM_GUARD
        self.failed = 0
        self.reasons: Counter[str] = Counter()  # why items failed, for the console
        self.failed_files: dict[Path, None] = {}  # the results files holding them, in order
        self.finished = 0  # items this run evaluated (failed ones included)
        self.context_tokens = 0
        self.started = time.monotonic()

    async def run(self, files: Sequence[EvalFile], stores: dict[EvalFile, ResultStore], progress: tqdm) -> None:
        """Read, tokenise and run questions with at most `questions_in_flight` at once.

        A document's text is read only when a question slot and a text slot are free, and is let go
        as soon as it is tokenised: of 128 questions of 3.5 MB in flight only TEXTS_IN_MEMORY texts
        exist at a time, the others are held as int32 ids.
        """
        question_slots = asyncio.Semaphore(self.questions_in_flight)
        text_slots = asyncio.Semaphore(TEXTS_IN_MEMORY)
        tasks: set[asyncio.Task[None]] = set()
        self.started = time.monotonic()
        try:
            for file in files:
                items = iter_items(file)
                while True:
                    await question_slots.acquire()
                    await text_slots.acquire()
                    item = await asyncio.to_thread(next, items, None)
                    if item is None or item.item_id in stores[file].done:
                        question_slots.release()
                        text_slots.release()
                        if item is None:
                            break
                        progress.update(1)
                        continue
                    task = asyncio.create_task(self._evaluate(item, file, stores[file], progress, text_slots))
                    tasks.add(task)
                    task.add_done_callback(lambda done: (tasks.discard(done), question_slots.release()))
        finally:
            # A bad item stops the reading, not the questions already running: their results are kept.
            if tasks:
                await asyncio.gather(*tasks)

    async def _tokenize(self, item: EvalItem, text_slots: asyncio.Semaphore) -> TokenIds:
        try:
            text = await asyncio.to_thread(item.text) if item.positions is not None else item.context
            item.context, item.positions = "", None  # the text is not needed again: only its ids stay
            ids = await self.agent.tokenize_context(text)
            del text
            if ids.shape[0] <= SPILL_ABOVE_TOKENS:
                return ids
            return await asyncio.to_thread(spill, ids, self.spill_folder)
        finally:
            text_slots.release()

    async def _evaluate(
        self, item: EvalItem, file: EvalFile, store: ResultStore, progress: tqdm, text_slots: asyncio.Semaphore
    ) -> None:
        begun = time.monotonic()
        record: dict[str, Any] = {"id": item.item_id, "question": item.question, "answers": item.answers}
        try:
            context_ids = await self._tokenize(item, text_slots)
            trajectory = await self.agent.run(
                item.question, context_ids, self.pool, self.sampling, keep_prompt_ids=False
            )
            scores = score_answer(trajectory.answer, item.answers, rules=self.rules)  # the box, for the records
            scored = suite_named(file.cell.suite).score(trajectory.answer, item, self.rules)
            record.update(status=trajectory.status.value, error=trajectory.error, suite=file.cell.suite)
            record.update(task=file.cell.task, prediction=scored.extracted, answer=trajectory.answer)
            record.update(scored.metrics)
            if trajectory.answer == "":
                record["empty"] = True  # MemAgent's evaluator leaves such an item out of the mean
            record.update(
                context_tokens=trajectory.context_tokens,
                dropped_tokens=trajectory.dropped_tokens,
                num_chunks=trajectory.num_chunks,
                generated_tokens=trajectory.generated_tokens,
            )
            if self.agent.config.mode is AgentMode.REMEMR1:
                record.update(recall_stats(trajectory.turns, item.answers))
            if self.on_trajectory is not None:  # before the result line, so a record never outlives its result
                try:
                    self.on_trajectory(file, item, trajectory, scores, scored.metrics, context_ids)
                except OSError as error:
                    raise _WriteFailed from error
        except _WriteFailed as failed:
            raise failed.__cause__ from None  # a file that cannot be written (a full disk) stops the run
        except Exception as error:  # a bug must not lose the rest of the run: record it, count it
            record.update(status="failed", error=f"internal error: {type(error).__name__}: {error}")
        record["seconds"] = round(time.monotonic() - begun, 3)
        store.append(record)
        self.finished += 1
        if record["status"] != "completed":
            self.failed += 1
            self.reasons[_reason(record)] += 1
            self.failed_files[store.path] = None
        self.context_tokens += int(record.get("context_tokens", 0))
        elapsed = max(time.monotonic() - self.started, 1e-9)
        progress.set_postfix(
            failed=self.failed,
            ctx_tok_s=f"{self.context_tokens / elapsed:,.0f}",
            gen_tok_s=f"{self.pool.generated_tokens / elapsed:,.0f}",
            refresh=False,
        )
        progress.update(1)


def _reason(record: dict[str, Any]) -> str:
    """A failed item's error in one line, short enough to count alike failures together."""
    text = " ".join(str(record.get("error") or record["status"]).split())
    return text if len(text) <= 160 else text[:157] + "..."
