"""RULER-HQA evaluation: accuracy of a memory agent against context length.

    python -m mem_agent.eval_ruler_hqa --data-root DATA --lengths 50 200 800 --url http://127.0.0.1:8000

Protocol (MemAgent's): one sample per question at temperature 0.7 / top_p 0.95, the answer read
from its last \\boxed{}, reported as sub-string exact match (sub_em) x 100 per length, with EM, F1
and the strict training reward beside it. EM and F1 are the official HotpotQA evaluator's;
MEM_FOLD_UNICODE=1 and MEM_SUB_EM_GUARD=1 opt into Unicode folding and the empty-answer guard, and
summary.json records which rules scored the run ("scoring"). Every question runs the same workflow
as training.

How it runs: questions are read one at a time from each file (a 6400-document file is ~450 MB
and is never loaded whole), up to `--questions-in-flight` at once, each pipelining its own turns;
requests share one limit (`--concurrency`) served most-turns-left first. Each finished question
is appended to `results_<file>.jsonl` at once; a rerun resumes by item id (`--force` redoes),
and refuses earlier results made with other settings. At the end: a per-length table,
`summary.json` (with the facts of every run that produced the results), and
`accuracy_vs_length.png`. Before any of it, every eval file is read in full (one bad item is an
exit 2 before the first request) and every server is connected to once. `--check` validates the
arguments, the data and the reuse, says how many items are left to run, and starts nothing.
With `--save-trajectories`, each item's turns (every memory it wrote, cut or not, and the answer)
go to `trajectories_<file>.jsonl` as trajectory records (observability/trajectory_records.py),
one per item, kept in step with the results across resumes.
`--mode direct` runs the long-context baseline instead: the same model reading the whole document
in one prompt, cut in the middle to fit `--context-window` as RULER does; summary.json records the
mode, so `python -m mem_agent.compare` puts both runs on one plot.
One run per `--output-dir` at a time: the folder is locked (common/run_folder.py) before it is
read, and a second evaluator on it is refused at once (exit 2), naming the first's PID.
Exit status: 0 all items answered, 1 some failed (they count as wrong), 2 bad usage or data.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mem_agent.agent.direct_reading import DIRECT_MODE, DirectReader
from mem_agent.agent.records import Trajectory, TrajectoryStatus
from mem_agent.agent.scoring import AnswerScores
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.console import program_name
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.paths import inside
from mem_agent.common.run_folder import lock_run_folder
from mem_agent.common.usage import UsageError, gather, problems_to_error
from mem_agent.evaluation.evaluator import Evaluator
from mem_agent.evaluation.files import EvalFile, EvalItem, check_eval_file, file_sha256, resolve_files
from mem_agent.evaluation.reporting import (
    EvalFileReport,
    ReuseError,
    check_reuse,
    facts_known_without_a_server,
    settings_facts,
    write_reports,
)
from mem_agent.evaluation.results import ResultStore, completed_ids, read_results, summarize
from mem_agent.inference.agent_flags import (
    add_agent_flags,
    add_sampling_flags,
    add_server_flags,
    build_agent,
    build_direct_reader,
    check_direct_settings,
    client_settings,
    config_from_args,
    model_window,
    reach_servers,
    sampling_from_args,
)
from mem_agent.inference.client import ClientSettings
from mem_agent.inference.client_pool import ClientPool
from mem_agent.observability.trajectory_records import RecordFormatError, record_of
from mem_agent.observability.trajectory_store import TrajectoryStore, trajectories_name
from mem_agent.settings.config import AgentMode, ConfigError, MemAgentConfig
from mem_agent.tokenization.tokenizer import TokenizerNotFoundError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("mem_agent.eval_ruler_hqa"),
        description="Evaluate a memory agent on RULER-HQA files (eval_<docs>.json) and report accuracy vs length.",
    )
    parser.add_argument(
        "--data", type=Path, nargs="*", default=[], help="eval files to run (any RULER-HQA-shaped JSON)"
    )
    parser.add_argument("--data-root", type=Path, default=None, help="folder holding eval_<N>.json files")
    parser.add_argument(
        "--lengths",
        type=int,
        nargs="*",
        default=None,
        help="with --data-root: document counts to run (default: every eval_<N>.json present, N in 50..6400)",
    )
    parser.add_argument(
        "--output-dir", type=Path, default=Path("runs/eval"), help="results folder (default: %(default)s)"
    )
    add_server_flags(parser, many=True)
    add_sampling_flags(parser)
    add_agent_flags(parser)
    parser.add_argument(
        "--mode",
        choices=[mode.value for mode in AgentMode] + [DIRECT_MODE],
        default=None,
        help="memagent / rememr1: the memory agent (sets MEM_MODE); direct: the long-context baseline,"
        " the whole document in one prompt (default: MEM_MODE, else memagent)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        default=None,
        help="--mode direct: the model's window in tokens, prompt and answer (MEM_MAX_FINAL) together; a longer"
        " document keeps its first and last halves (default: max_position_embeddings in the model's config.json)",
    )
    parser.add_argument("--concurrency", type=int, default=256, help="requests in flight, all servers (default: 256)")
    parser.add_argument("--questions-in-flight", type=int, default=128, help="questions at once (default: 128)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions of each file")
    parser.add_argument("--force", action="store_true", help="discard earlier results and run every item again")
    parser.add_argument("--no-plot", action="store_true", help="skip the accuracy-vs-length PNG")
    parser.add_argument(
        "--save-trajectories",
        action="store_true",
        help="also keep each item's turns (every memory written, cut or not, the answer) in"
        " trajectories_<N>.jsonl beside results_<N>.jsonl; about 4 bytes per generated token (default: off)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check the arguments, the MEM_* settings, every eval file that exists (read in full) and that"
        " earlier results in --output-dir were made with the same answer-shaping settings, prompt file, tokenizer"
        " and data; print 'left to run: N' (items without a finished result; ? while files are missing);"
        " contact no server, write nothing (exit 0 or 2) (default: off)",
    )
    return parser


def _check_positive(args: argparse.Namespace) -> None:
    problems_to_error(
        [
            f"--{flag.replace('_', '-')} {value} must be a positive integer"
            for flag in ("concurrency", "questions_in_flight", "limit", "context_window")
            if (value := getattr(args, flag)) is not None and value <= 0
        ]
    )


async def _evaluate_all(args, servers, agent, sampling, files, stores, total) -> tuple[Evaluator, float]:
    started = time.monotonic()
    trajectories = _trajectory_stores(args, stores)
    on_trajectory = functools.partial(_keep_record, agent, trajectories) if trajectories else None
    async with ClientPool.for_servers(servers, args.concurrency) as pool:
        evaluator = Evaluator(agent, pool, sampling, args.questions_in_flight, on_trajectory)
        with tqdm(total=total, unit="q", desc="questions", dynamic_ncols=True) as progress:
            await evaluator.run(files, stores, progress)
    return evaluator, time.monotonic() - started


def _trajectory_stores(
    args: argparse.Namespace, stores: dict[EvalFile, ResultStore]
) -> dict[EvalFile, TrajectoryStore]:
    """With --save-trajectories: each file's records, trimmed to the items whose results are reused."""
    if not args.save_trajectories:
        return {}
    return {
        file: TrajectoryStore.open(args.output_dir / trajectories_name(file.results_name), store.done, force=args.force)
        for file, store in stores.items()
    }


def _keep_record(
    agent: MemoryAgent | DirectReader,
    stores: dict[EvalFile, TrajectoryStore],
    file: EvalFile,
    item: EvalItem,
    trajectory: Trajectory,
    scores: AnswerScores,
) -> None:
    """--save-trajectories: the item's trajectory record, in the store of its file."""
    completed = trajectory.status is TrajectoryStatus.COMPLETED
    record = record_of(
        trajectory,
        lambda ids: agent.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True),
        source="eval",
        item_id=item.item_id,
        question=item.question,
        ground_truths=item.answers,
        mode=DIRECT_MODE if isinstance(agent, DirectReader) else agent.config.mode.value,
        scores=scores if completed else None,
        eval_set=file.path.name,
    )
    stores[file].append(record)


def _server_settings(args: argparse.Namespace, config: MemAgentConfig) -> list[ClientSettings]:
    if not args.url:
        raise UsageError("no server: pass --url or set MEM_ROUTER_URL")
    return [client_settings(url, args, config, args.concurrency) for url in args.url]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with contextlib.ExitStack() as run_folder:  # the output folder's lock, held until the reports are written
        return _main(args, run_folder)


def _checked_data(
    args: argparse.Namespace, files: Sequence[EvalFile]
) -> tuple[dict[EvalFile, int], dict[EvalFile, int], int]:
    """Every file read in full by the one eval-file checker, every bad file named at once: each
    file's item count, the count the run has (`--limit` applied), and how many of those have no
    finished result."""
    item_ids = dict(zip(files, gather(*(functools.partial(check_eval_file, f.path) for f in files)), strict=True))
    expected = {f: min(len(ids), f.limit or sys.maxsize) for f, ids in item_ids.items()}
    left = 0
    for file, ids in item_ids.items():
        done = set() if args.force else completed_ids(args.output_dir / file.results_name)
        left += sum(item_id not in done for item_id in ids[: expected[file]])
    return {f: len(ids) for f, ids in item_ids.items()}, expected, left


def _main(args: argparse.Namespace, run_folder: contextlib.ExitStack) -> int:
    try:
        (config, mode), sampling, _ = gather(
            lambda: _config_and_mode(args), lambda: sampling_from_args(args), lambda: _check_positive(args)
        )
        # The addresses' form first (cheap); they are connected to only once there is work for them.
        servers = [client_settings(url, args, config, args.concurrency) for url in args.url or []]
        # With --check the demo's files may not be made yet: those present are read in full.
        files = resolve_files(args, allow_missing=args.check)
        present = [f for f in files if f.path.is_file()]
        # One writer per folder: a folder that exists is locked before anything reads it, a new one
        # is made (and locked) once the data is known to be readable. A second run is refused there.
        existed = args.output_dir.is_dir()
        if existed and not args.check:
            run_folder.enter_context(_output_lock(args))
        sizes, expected, left = _checked_data(args, present)
        facts = facts_known_without_a_server(args.tokenizer, config, sampling) | _mode_facts(args, mode)
        facts["data"] = {f.label: n for f, n in sizes.items()}
        facts["data_sha256"] = {f.label: file_sha256(f.path) for f in present}  # what compare checks runs by
        if args.check or not left:  # the model and the server are not needed
            earlier_runs = [] if args.force else check_reuse(args.output_dir, facts)
            if args.check:
                print(f"left to run: {left if files and len(present) == len(files) else '?'}")
                return 0
        else:
            servers = servers or _server_settings(args, config)
            if mode == DIRECT_MODE:
                agent: MemoryAgent | DirectReader = build_direct_reader(args.tokenizer, config, args.context_window)
            else:
                agent = build_agent(args.tokenizer, config)
            reach_servers(servers)
            if not existed:
                run_folder.enter_context(_output_lock(args))
            data_facts = {key: facts[key] for key in ("data", "data_sha256")}
            facts = settings_facts(args.tokenizer, config, sampling, agent.prompt_facts) | _mode_facts(
                args, mode, agent
            )
            facts |= data_facts
            earlier_runs = [] if args.force else check_reuse(args.output_dir, facts)
            stores = {f: ResultStore.open(inside(args.output_dir, f.results_name), force=args.force) for f in files}
    except (UsageError, ConfigError, TokenizerNotFoundError, DataFormatError, ReuseError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not left:
        return _report_only(args, files, expected, earlier_runs)
    for file, store in stores.items():
        if repairs := store.report.repairs():
            print(f"repaired {store.path}: {'; '.join(repairs)} (one line per item is kept)")
        if store.report.kept or store.report.repaired_partial_line:
            print(
                f"resuming {file.path.name}: {store.report.kept} done (results of earlier runs, reused),"
                f" {store.report.dropped_failed} failed to redo"
            )
    started = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        total = sum(expected.values())
        evaluator, seconds = asyncio.run(_evaluate_all(args, servers, agent, sampling, files, stores, total))
    except (DataFormatError, RecordFormatError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    reports = [
        EvalFileReport(
            file.label, file.path, summarize(read_results(store.path), expected[file]) | {"reused": store.report.kept}
        )
        for file, store in stores.items()
    ]
    reused = sum(store.report.kept for store in stores.values())
    run = {"started": started, "items_run": evaluator.finished, "items_reused": reused}
    earlier_runs = [*earlier_runs, run | facts | _run_facts(args, evaluator, seconds)]
    write_reports(reports, args.output_dir, earlier_runs, plot=not args.no_plot, keep_other_labels=not args.force)
    _explain_failures(evaluator.reasons, list(evaluator.failed_files))
    return 1 if any(report.summary["completed"] < report.summary["items"] for report in reports) else 0


def _report_only(
    args: argparse.Namespace, files: Sequence[EvalFile], expected: dict[EvalFile, int], runs: list[dict[str, Any]]
) -> int:
    """Every item already has a finished result: the report is rewritten, nothing is started."""
    reports = []
    for file in files:
        store = ResultStore.open(inside(args.output_dir, file.results_name))  # repaired, as a run would
        if repairs := store.report.repairs():
            print(f"repaired {store.path}: {'; '.join(repairs)} (one line per item is kept)")
        print(f"{file.path.name}: {store.report.kept} done (results of earlier runs, reused)")
        summary = summarize(read_results(store.path), expected[file]) | {"reused": store.report.kept}
        reports.append(EvalFileReport(file.label, file.path, summary))
    print(
        f"nothing new to run: all {sum(expected.values())} results come from earlier runs, which summary.json describes"
    )
    write_reports(reports, args.output_dir, runs, plot=not args.no_plot, keep_other_labels=True)
    return 0


def _explain_failures(reasons: Counter[str], paths: Sequence[Path]) -> None:
    """Why items failed, on the console: the commonest reasons with their counts, and where the rest is."""
    if not reasons:
        return
    lines = [f"{sum(reasons.values())} item(s) failed (scored as wrong); the commonest reasons:"]
    lines += [f"  {count} x {reason}" for reason, count in reasons.most_common(3)]
    lines.append(f"details: the 'error' field of the failed lines in {', '.join(map(str, paths))}")
    print("\n".join(lines), file=sys.stderr)


def _config_and_mode(args: argparse.Namespace) -> tuple[MemAgentConfig, str]:
    """The settings and the mode: --mode memagent / rememr1 is MEM_MODE's flag; direct keeps the
    settings it shares (MEM_MAX_FINAL, the scoring rules) and has no memory, so no ReMemR1 recall."""
    config = config_from_args(args)
    mode = args.mode or config.mode.value
    if mode == DIRECT_MODE:
        check_direct_settings(config)
    wanted = AgentMode.MEMAGENT if mode == DIRECT_MODE else AgentMode(mode)
    return (config if config.mode is wanted else config.replaced(mode=wanted)), mode


def _mode_facts(
    args: argparse.Namespace, mode: str, reader: MemoryAgent | DirectReader | None = None
) -> dict[str, Any]:
    """The mode (compare labels runs by it, and a folder never mixes modes) and, reading directly,
    the window (where --check can know it: the model folder may not exist yet)."""
    if mode != DIRECT_MODE:
        return {"mode": mode}
    window = reader.window if isinstance(reader, DirectReader) else args.context_window or model_window(args.tokenizer)
    return {"mode": mode, "direct": {"context_window": window}} if window else {"mode": mode}


def _output_lock(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    command = program_name("mem_agent.eval_ruler_hqa")
    return lock_run_folder(args.output_dir, command=command, instead="choose another --output-dir")


def _run_facts(args: argparse.Namespace, evaluator: Evaluator, seconds: float) -> dict[str, Any]:
    """How the run went, stored beside its numbers (never a secret: no tokens, no headers)."""
    return {
        "urls": args.url,
        "protocol": args.protocol,
        "model": args.model,
        "concurrency": args.concurrency,
        "questions_in_flight": args.questions_in_flight,
        "seconds": round(seconds, 2),
        "requests": evaluator.pool.requests_sent,
        "retries": evaluator.pool.retries,
    }


if __name__ == "__main__":
    raise SystemExit(main())
