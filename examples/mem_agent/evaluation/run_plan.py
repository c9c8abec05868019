"""What the evaluator checks before it contacts a server, as functions of the request.

Two steps, so that a caller can report every mistake at once: `check_arguments` (the flags and the
MEM_* settings; needs no file) and `check_data` (every eval file read in full by the one eval-file
checker, and how many items have no finished result). `left_to_run` adds the check that earlier
results were made with the same answer-shaping settings: it is the evaluator's `--check`, and what
run-eval.sh's launch calls in-process before it decides whether anything needs serving.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mem_agent.agent.direct_reading import DIRECT_MODE, DirectReader
from mem_agent.agent.records import SamplingParams
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.usage import gather
from mem_agent.evaluation.files import EvalFile, corpus_of, file_sha256, read_file_items, resolve_files
from mem_agent.evaluation.paper_tables import Chosen, choose_all
from mem_agent.evaluation.reporting import check_reuse, facts_known_without_a_server
from mem_agent.evaluation.request import EvalRequest
from mem_agent.evaluation.results import completed_ids
from mem_agent.inference.agent_flags import (
    check_direct_settings,
    client_settings,
    config_from_args,
    model_window,
    sampling_from_args,
)
from mem_agent.inference.client import ClientSettings
from mem_agent.settings.config import AgentMode, MemAgentConfig


@dataclass(frozen=True)
class RunSettings:
    """The flags and MEM_* settings, checked: what every item is run with."""

    config: MemAgentConfig
    mode: str  # memagent, rememr1, or direct (the long-context baseline)
    sampling: SamplingParams
    servers: tuple[ClientSettings, ...]  # the addresses given, their form checked; not connected to yet
    papers: tuple[Chosen, ...] = ()  # --paper: the published tables the reports set this run beside


@dataclass(frozen=True)
class DataPlan:
    """The eval files, read in full, against the results the output folder already holds."""

    files: tuple[EvalFile, ...]
    expected: dict[EvalFile, int]  # items each file's run has (--limit applied)
    left: int  # of those, the items without a finished result
    complete: bool  # files were named and every one exists (the demo makes its own later)
    facts: dict[str, Any]  # the answer-shaping facts known without a server, the data's included


def check_arguments(request: EvalRequest) -> RunSettings:
    """Every flag and MEM_* setting, every problem at once (a UsageError listing them)."""
    (config, mode), sampling, papers = gather(
        lambda: _config_and_mode(request),
        lambda: sampling_from_args(request),
        lambda: choose_all(request.paper),
    )
    # The addresses' form first (cheap); they are connected to only once there is work for them.
    servers = tuple(client_settings(url, request, config, request.concurrency) for url in request.url)
    return RunSettings(config, mode, sampling, servers, papers)


def check_data(
    request: EvalRequest, settings: RunSettings, *, allow_missing: bool, lock: Callable[[], None]
) -> DataPlan:
    """The files named, each read in full, and what is left to run. `lock` is called, before
    anything in the output folder is read, when that folder exists (one writer per folder)."""
    files = resolve_files(request, allow_missing=allow_missing)
    if request.output_dir.is_dir():
        lock()
    checks = (functools.partial(read_file_items, f) for f in files if f.path.is_file())
    read = {found.file.path: found for found in gather(*checks)}
    for found in read.values():
        for note in found.notes:
            print(f"note: {note}")
    files = [read[f.path].file if f.path in read else f for f in files]  # with each file's identity rule
    present = [file for file in files if file.path in read]
    item_ids = {file: read[file.path].ids for file in present}
    expected = {file: min(len(ids), file.limit or sys.maxsize) for file, ids in item_ids.items()}
    left = 0
    for file, ids in item_ids.items():
        done = set() if request.force else completed_ids(request.output_dir / file.results_name)
        left += sum(item_id not in done for item_id in ids[: expected[file]])
    facts = facts_known_without_a_server(request.tokenizer, settings.config, settings.sampling, settings.mode)
    facts |= mode_facts(request, settings.mode)
    facts["scoring"] = facts["scoring"] | {"empty_answers": "wrong" if request.empty_as_wrong else "left out"}
    facts["data"] = {file.label: len(ids) for file, ids in item_ids.items()}
    facts["data_sha256"] = {file.label: file_sha256(file.path) for file in present}  # what compare checks runs by
    corpora = {file.label: corpus_of(file) for file in present}
    if any(corpora.values()):  # index-layout files: the text is the corpus's, so its sha256 shapes answers
        facts["corpus_sha256"] = {label: sha for label, sha in corpora.items() if sha}
    return DataPlan(tuple(files), expected, left, bool(files) and len(present) == len(files), facts)


def left_to_run(request: EvalRequest, settings: RunSettings) -> int | None:
    """Items without a finished result once every check before a server has passed (None while eval
    files are missing); contacts no server and writes nothing."""
    plan = check_data(request, settings, allow_missing=True, lock=lambda: None)
    if not request.force:
        check_reuse(request.output_dir, plan.facts)
    return plan.left if plan.complete else None


def mode_facts(request: EvalRequest, mode: str, reader: MemoryAgent | DirectReader | None = None) -> dict[str, Any]:
    """The mode (compare labels runs by it, and a folder never mixes modes) and, reading directly,
    the window (where it is known before the run: the model folder may not exist yet)."""
    if mode != DIRECT_MODE:
        return {"mode": mode}
    window = (
        reader.window if isinstance(reader, DirectReader) else request.context_window or model_window(request.tokenizer)
    )
    if not window:
        return {"mode": mode}
    preset = {"window_preset": request.window_preset} if request.window_preset else {}
    return {"mode": mode, "direct": {"context_window": window, **preset}}


def _config_and_mode(request: EvalRequest) -> tuple[MemAgentConfig, str]:
    """The settings and the mode: --mode memagent / rememr1 is MEM_MODE's flag; direct keeps the
    settings it shares (MEM_MAX_FINAL, the scoring rules) and has no memory, so no ReMemR1 recall."""
    config = config_from_args(request)
    mode = request.mode or config.mode.value
    if mode == DIRECT_MODE:
        check_direct_settings(config)
    wanted = AgentMode.MEMAGENT if mode == DIRECT_MODE else AgentMode(mode)
    return (config if config.mode is wanted else config.replaced(mode=wanted)), mode
