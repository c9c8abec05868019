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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mem_agent.agent.chunking import TokenIds
from mem_agent.agent.direct_reading import DirectReader, window_facts
from mem_agent.agent.records import SamplingParams, Trajectory
from mem_agent.agent.scoring import AnswerScores, ReportingRules, score_answer
from mem_agent.agent.step_rewards import recall_stats
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.token_file import spill
from mem_agent.common.usage import UsageError
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


class WriteFailed(Exception):
    """A result or record that could not be written (a full disk, a results file replaced by a folder
    or a link mid-run): the run stops at once, the items in flight are cancelled, and an item is never
    recorded as failed for it. The message is "cannot write FILE: REASON"."""


def _write_failed(error: OSError | UsageError, path: Path) -> WriteFailed:
    """The failure of a write to `path`, in one line (a Refused names the path itself)."""
    if isinstance(error, OSError):
        return WriteFailed(f"cannot write {error.filename or path}: {error.strerror or error}")
    return WriteFailed(f"cannot write: {error}")


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
        self.started = time.monotonic()
        try:
            async with asyncio.TaskGroup() as group:
                bad_item = await self._start_all(group, files, stores, progress)
        except BaseExceptionGroup as failed:  # the first task that could not write cancelled the rest
            raise _first_failure(failed) from None
        if bad_item is not None:  # it stopped the reading, not the questions already running: their results are kept
            raise bad_item

    async def _start_all(
        self, group: asyncio.TaskGroup, files: Sequence[EvalFile], stores: dict[EvalFile, ResultStore], progress: tqdm
    ) -> DataFormatError | None:
        """Start a task per item without a finished result, as slots free up; the item that cannot be
        read ends the reading and is returned (the tasks started go on)."""
        question_slots = asyncio.Semaphore(self.questions_in_flight)
        text_slots = asyncio.Semaphore(TEXTS_IN_MEMORY)
        for file in files:
            items = iter_items(file)
            while True:
                await question_slots.acquire()
                await text_slots.acquire()
                try:
                    item = await asyncio.to_thread(next, items, None)
                except DataFormatError as error:
                    return error
                if item is None or item.item_id in stores[file].done:
                    question_slots.release()
                    text_slots.release()
                    if item is None:
                        break
                    progress.update(1)
                    continue
                task = group.create_task(self._evaluate(item, file, stores[file], progress, text_slots))
                task.add_done_callback(lambda _: question_slots.release())
        return None

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
            record.update(await window_facts(self.agent, trajectory, context_ids, item.answers))
            if self.agent.config.mode is AgentMode.REMEMR1:
                record.update(recall_stats(trajectory.turns, item.answers))
            if self.on_trajectory is not None:  # before the result line, so a record never outlives its result
                try:
                    self.on_trajectory(file, item, trajectory, scores, scored.metrics, context_ids)
                except (OSError, UsageError) as error:
                    raise _write_failed(error, store.path.parent) from None
        except WriteFailed:
            raise
        except Exception as error:  # a bug must not lose the rest of the run: record it, count it
            record.update(status="failed", error=f"internal error: {type(error).__name__}: {error}")
        record["seconds"] = round(time.monotonic() - begun, 3)
        try:
            store.append(record)
        except (OSError, UsageError) as error:  # UsageError: Refused, the file replaced by a link
            raise _write_failed(error, store.path) from None
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


def _first_failure(group: BaseExceptionGroup) -> BaseException:
    """The first WriteFailed of a task group's failures (others may follow it in the same loop turn),
    else the first failure."""
    leaves = list(_leaves(group))
    return next((leaf for leaf in leaves if isinstance(leaf, WriteFailed)), leaves[0])


def _leaves(group: BaseExceptionGroup) -> Iterator[BaseException]:
    for error in group.exceptions:
        yield from _leaves(error) if isinstance(error, BaseExceptionGroup) else (error,)


def _reason(record: dict[str, Any]) -> str:
    """A failed item's error in one line, short enough to count alike failures together."""
    text = " ".join(str(record.get("error") or record["status"]).split())
    return text if len(text) <= 160 else text[:157] + "..."
