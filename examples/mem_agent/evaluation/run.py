"""One evaluation run from its request to its exit status: checks, the output folder's lock, the
items run (or, with every item finished, only the report rewritten), the reports written.

Exit status: 0 every item answered, 1 some failed (they count as wrong) or a result could not be
written, 2 bad usage or data. Everything that can refuse does so before the first request, by the
checks `--check` makes alone (run_plan.check_run), then a connection to every server; the record
of the settings the results are made with (run.json, evaluation/reuse.py) is written before the
first result. The first result or record that cannot be written (a full disk, a results file
replaced mid-run) stops the run: the items in flight are cancelled, none other starts.

One writer per folder: a folder that exists is locked before anything in it is read, a new one is
made (and locked) once the data is known to be readable. A second run is refused there (exit 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mem_agent.agent.direct_reading import DirectReader
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.console import program_name
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.paths import inside
from mem_agent.common.run_folder import lock_run_folder
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.evaluator import Evaluator, OnTrajectory, WriteFailed
from mem_agent.evaluation.files import EvalFile
from mem_agent.evaluation.model_facts import model_facts
from mem_agent.evaluation.reporting import EvalFileReport, write_reports
from mem_agent.evaluation.request import EvalRequest
from mem_agent.evaluation.results import ResultStore, read_results, summarize
from mem_agent.evaluation.reuse import ReuseError, write_record
from mem_agent.evaluation.run_plan import DataPlan, RunSettings, check_arguments, check_run
from mem_agent.evaluation.suites import suite_named
from mem_agent.inference.agent_flags import reach_servers
from mem_agent.inference.client import ClientSettings
from mem_agent.inference.client_pool import ClientPool
from mem_agent.tokenization.tokenizer import TokenizerNotFoundError

# --save-trajectories: given the reader, the output folder, the result stores and --force, what sees each
# finished item (observability/eval_trajectories.py); a bad earlier record is a DataFormatError.
TrajectoryKeeper = Callable[[MemoryAgent | DirectReader, Path, dict[EvalFile, ResultStore], bool], OnTrajectory]
_REFUSALS = (UsageError, TokenizerNotFoundError, DataFormatError, ReuseError)


@dataclass
class _Run:
    """A run that passed every check: what it evaluates and with what."""

    settings: RunSettings
    plan: DataPlan
    earlier_runs: list[dict[str, Any]]
    facts: dict[str, Any] = field(default_factory=dict)
    servers: list[ClientSettings] = field(default_factory=list)
    agent: MemoryAgent | DirectReader | None = None
    stores: dict[EvalFile, ResultStore] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)  # model_facts: name, path, sha256


def run_evaluation(request: EvalRequest, keep_trajectories: TrajectoryKeeper | None = None) -> int:
    """0: every item completed; 1: an item failed, or a file could not be written (a full disk:
    one line, every result written so far kept, the same command resumes); 2: a user's mistake."""
    with contextlib.ExitStack() as folder:  # the output folder's lock, held until the reports are written
        try:
            run = _prepare(request, _FolderLock(request, folder))
            if run is None:
                return 0
            if not run.plan.left:
                return _report_only(request, run)
            return _evaluate(request, run, keep_trajectories)
        except _REFUSALS as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        except OSError as error:
            where = error.filename or request.output_dir
            print(
                f"error: {where}: {error.strerror or error}; the results written so far are kept:"
                " run the same command again to resume",
                file=sys.stderr,
            )
            return 1


class _FolderLock:
    """The output folder's lock, taken at most once and held by the run's exit stack."""

    def __init__(self, request: EvalRequest, stack: contextlib.ExitStack) -> None:
        self.request, self.stack, self.held = request, stack, False

    def take(self) -> None:
        if not self.held:
            command = program_name("mem_agent.eval_ruler_hqa")
            instead = "choose another --output-dir"
            self.stack.enter_context(lock_run_folder(self.request.output_dir, command=command, instead=instead))
            self.held = True


def _prepare(request: EvalRequest, lock: _FolderLock) -> _Run | None:
    """Every check (run_plan.check_run), then the server reached, the folder locked and the record of
    what the results are made with written before the first of them; None for --check (its count
    printed: the checks passed are those the run makes)."""
    settings = check_arguments(request)
    if request.check:
        print(f"left to run: {check_run(request, settings).plan.left}")
        return None
    checked = check_run(request, settings, lock=lock.take)
    if checked.reader is None:  # nothing left to run: the model and the server are not needed
        return _Run(settings, checked.plan, checked.earlier_runs)
    servers = list(settings.servers)
    reach_servers(servers)
    lock.take()
    results = [file.results_name for file in checked.plan.files]
    write_record(request.output_dir, checked.facts, results, force=request.force)
    stores = {
        file: ResultStore.open(inside(request.output_dir, file.results_name), force=request.force)
        for file in checked.plan.files
    }
    model = model_facts(request.model, request.tokenizer, servers)
    return _Run(settings, checked.plan, checked.earlier_runs, checked.facts, servers, checked.reader, stores, model)


def _evaluate(request: EvalRequest, run: _Run, keep_trajectories: TrajectoryKeeper | None) -> int:
    assert run.agent is not None
    for file, store in run.stores.items():
        if repairs := store.report.repairs():
            print(f"repaired {store.path}: {'; '.join(repairs)} (one line per item is kept)")
        if store.report.kept or store.report.repaired_partial_line:
            print(
                f"resuming {file.path.name}: {store.report.kept} done (results of earlier runs, reused),"
                f" {store.report.dropped_failed} failed to redo"
            )
    started = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        on_trajectory = None
        if request.save_trajectories and keep_trajectories is not None:
            on_trajectory = keep_trajectories(run.agent, request.output_dir, run.stores, request.force)
        evaluator, seconds = asyncio.run(_evaluate_all(request, run, on_trajectory))
    except DataFormatError as error:  # a data file that breaks mid-run
        raise UsageError(str(error)) from None
    except WriteFailed as error:  # nothing more is evaluated that could not be kept
        kept = sum(len(store.done) for store in run.stores.values())
        print(
            f"error: {error}; stopped with {kept} finished result(s) kept: run the same command again to resume",
            file=sys.stderr,
        )
        return 1
    reports = [_report(request, file, store, run.plan.expected[file]) for file, store in run.stores.items()]
    reused = sum(store.report.kept for store in run.stores.values())
    facts = {"started": started, "items_run": evaluator.finished, "items_reused": reused}
    earlier_runs = [*run.earlier_runs, facts | run.facts | _run_facts(request, evaluator, seconds, run.model)]
    plot, keep, papers = not request.no_plot, not request.force, run.settings.papers
    write_reports(reports, request.output_dir, earlier_runs, plot=plot, keep_other_labels=keep, papers=papers)
    _point_to_views(request)
    _explain_failures(evaluator.reasons, list(evaluator.failed_files))
    return 1 if any(report.summary["completed"] < report.summary["items"] for report in reports) else 0


async def _evaluate_all(request: EvalRequest, run: _Run, on_trajectory: OnTrajectory | None) -> tuple[Evaluator, float]:
    assert run.agent is not None
    started = time.monotonic()
    async with ClientPool.for_servers(run.servers, request.concurrency) as pool:
        evaluator = Evaluator(
            run.agent, pool, run.settings.sampling, request.questions_in_flight, on_trajectory, request.output_dir
        )
        with tqdm(total=sum(run.plan.expected.values()), unit="q", desc="questions", dynamic_ncols=True) as progress:
            await evaluator.run(run.plan.files, run.stores, progress)
    return evaluator, time.monotonic() - started


def _report_only(request: EvalRequest, run: _Run) -> int:
    """Every item already has a finished result: the report is rewritten, nothing is started."""
    reports = []
    for file in run.plan.files:
        store = ResultStore.open(inside(request.output_dir, file.results_name))  # repaired, as a run would
        if repairs := store.report.repairs():
            print(f"repaired {store.path}: {'; '.join(repairs)} (one line per item is kept)")
        print(f"{file.path.name}: {store.report.kept} done (results of earlier runs, reused)")
        reports.append(_report(request, file, store, run.plan.expected[file]))
    total = sum(run.plan.expected.values())
    print(f"nothing new to run: all {total} results come from earlier runs, which summary.json describes")
    plot, papers = not request.no_plot, run.settings.papers
    write_reports(reports, request.output_dir, run.earlier_runs, plot=plot, keep_other_labels=True, papers=papers)
    return 0


def _report(request: EvalRequest, file: EvalFile, store: ResultStore, expected: int) -> EvalFileReport:
    """One file's cell: its results summarised by its suite's metrics and the run's aggregation."""
    suite = suite_named(file.cell.suite)
    empty_as_wrong = request.empty_as_wrong or not suite.empty_left_out
    summary = summarize(
        read_results(store.path), expected, suite.metrics(file.cell.task), empty_as_wrong=empty_as_wrong
    )
    return EvalFileReport(file.label, file.path, summary | {"reused": store.report.kept})


def _point_to_views(request: EvalRequest) -> None:
    """Where the trajectory records are (or how to keep them), and the command that shows the run."""
    page = shlex.quote(str(request.output_dir / "view.html"))
    command = f"{program_name('mem_agent.view')} {shlex.quote(str(request.output_dir))} -o {page}"
    if request.save_trajectories:
        print(f"trajectories: {request.output_dir / 'trajectories_*.jsonl'}; to view them: {command}")
    else:
        print(f"to view the answers: {command} (add --save-trajectories to keep every memory)")


def _explain_failures(reasons: Counter[str], paths: Sequence[Path]) -> None:
    """Why items failed, on the console: the commonest reasons with their counts, and where the rest is."""
    if not reasons:
        return
    lines = [f"{sum(reasons.values())} item(s) failed (scored as wrong); the commonest reasons:"]
    lines += [f"  {count} x {reason}" for reason, count in reasons.most_common(3)]
    lines.append(f"details: the 'error' field of the failed lines in {', '.join(map(str, paths))}")
    print("\n".join(lines), file=sys.stderr)


def _run_facts(request: EvalRequest, evaluator: Evaluator, seconds: float, model: dict[str, Any]) -> dict[str, Any]:
    """How the run went, stored beside its numbers (never a secret: no tokens, no headers); `model`
    is `model_facts`'s record of what was evaluated."""
    return {
        "urls": list(request.url),
        "protocol": request.protocol,
        "model": model,
        "concurrency": request.concurrency,
        "questions_in_flight": request.questions_in_flight,
        "seconds": round(seconds, 2),
        "requests": evaluator.pool.requests_sent,
        "retries": evaluator.pool.retries,
    }
