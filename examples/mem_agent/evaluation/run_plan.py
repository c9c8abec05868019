"""What the evaluator checks before it contacts a server, as functions of the request.

`check_arguments` checks the flags and the MEM_* settings (needs no file, reports every mistake at
once). `check_run` is every other check of a run, in the order that costs least: the plots'
package, every eval file read in full by the one eval-file checker, the output folder (not held by
a live run), its earlier results (made with the same answer-shaping settings, by the folder's
record, for the items the files name), a server named and the model's tokenizer loaded, all before
the first request. The run calls it first, and `--check` is that call alone: what `--check`
passes, the run starts. run-eval.sh's launch calls `left_to_run` in-process before it decides
whether anything needs serving: the same checks, less what exists only once it has started (the
demo's data, the model it converts, the server).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.direct_reading import DIRECT_MODE, DirectReader
from mem_agent.agent.records import SamplingParams
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.paths import inside
from mem_agent.common.run_folder import RunFolderBusy, folder_in_use
from mem_agent.common.usage import UsageError, gather
from mem_agent.evaluation.files import EvalFile, FileItems, corpus_of, file_sha256, read_file_items, resolve_files
from mem_agent.evaluation.model_facts import model_fingerprint, model_folder
from mem_agent.evaluation.paper_tables import Chosen, choose_all
from mem_agent.evaluation.reporting import check_run_outputs
from mem_agent.evaluation.request import EvalRequest
from mem_agent.evaluation.results import completed_keys
from mem_agent.evaluation.reuse import PER_FILE, ReuseError, check_reuse, facts_known_without_a_server, settings_facts
from mem_agent.inference.agent_flags import (
    build_agent,
    build_direct_reader,
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


@dataclass(frozen=True)
class CheckedRun:
    """A run that passed every check: its data, its reader (None with nothing left to run) and the
    answer-shaping facts its results are made with, and the facts of the earlier runs whose results
    it reuses (summary.json's)."""

    plan: DataPlan
    reader: MemoryAgent | DirectReader | None
    facts: dict[str, Any]
    earlier_runs: list[dict[str, Any]]


def check_run(request: EvalRequest, settings: RunSettings, *, lock: Callable[[], None] | None = None) -> CheckedRun:
    """Every check of the run before it contacts a server (see the module docstring). `lock` takes
    the output folder's lock before anything in it is read (the run); None (`--check`) refuses a
    folder a live run holds instead, and takes nothing."""
    check_packages(request)
    plan = check_data(request, settings, allow_missing=False, lock=lock or _refuse_if_held(request.output_dir))
    check_run_outputs(request.output_dir, plan.files, plot=not request.no_plot)
    results = [file.results_name for file in plan.files]
    earlier = [] if request.force else check_reuse(request.output_dir, plan.facts, results)
    if not plan.left:  # the model and the server are not needed
        return CheckedRun(plan, None, plan.facts, earlier)
    if not settings.servers:
        raise UsageError("no server: pass --url or set MEM_ROUTER_URL")
    reader: MemoryAgent | DirectReader
    if settings.mode == DIRECT_MODE:
        reader = build_direct_reader(request.tokenizer, settings.config, request.context_window)
    else:
        reader = build_agent(request.tokenizer, settings.config)
    facts = settings_facts(request.tokenizer, settings.config, settings.sampling, reader.prompt_facts, settings.mode)
    facts |= {key: plan.facts[key] for key in ("scoring", *PER_FILE) if key in plan.facts}
    facts |= mode_facts(request, settings.mode, reader) | _model_fact(request.tokenizer)
    earlier = [] if request.force else check_reuse(request.output_dir, facts, results)
    return CheckedRun(plan, reader, facts, earlier)


def check_packages(request: EvalRequest) -> None:
    """The optional packages the run needs, named with the extra that installs them, before any work."""
    if not request.no_plot and importlib.util.find_spec("matplotlib") is None:
        raise UsageError(
            "the report's plots need matplotlib, which is not installed: pip install 'mem-agent[eval]',"
            " or pass --no-plot"
        )


def _refuse_if_held(folder: Path) -> Callable[[], None]:
    """What `--check` does where the run would take the folder's lock: refuse a folder a live run holds."""

    def refuse() -> None:
        if (holder := folder_in_use(folder)) is not None:
            raise RunFolderBusy(f"{holder}; wait for it to end, or choose another --output-dir")

    return refuse


def _model_fact(tokenizer: str) -> dict[str, Any]:
    """The model folder's fingerprint (evaluation/model_facts.py), where --tokenizer is one."""
    folder = model_folder(tokenizer)
    return {} if folder is None else {"model": {"sha256": model_fingerprint(folder)}}


def check_data(
    request: EvalRequest, settings: RunSettings, *, allow_missing: bool, lock: Callable[[], None]
) -> DataPlan:
    """The files named, each read in full, and what is left to run. `lock` is called, before
    anything in the output folder is read, when that folder exists (one writer per folder). A
    finished result is reused only for the item whose question and answers it records."""
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
    expected = {file: min(len(read[file.path].ids), file.limit or sys.maxsize) for file in present}
    left = 0
    for file in present:
        results = inside(request.output_dir, file.results_name)  # never read through a link out of the folder
        done = {} if request.force else completed_keys(results)
        _check_answered(results, read[file.path], done)
        left += sum(item_id not in done for item_id in read[file.path].ids[: expected[file]])
    facts = facts_known_without_a_server(request.tokenizer, settings.config, settings.sampling, settings.mode)
    facts |= mode_facts(request, settings.mode)
    facts["scoring"] = facts["scoring"] | {"empty_answers": "wrong" if request.empty_as_wrong else "left out"}
    facts["data"] = {file.label: len(read[file.path].ids) for file in present}
    facts["data_sha256"] = {file.label: file_sha256(file.path) for file in present}  # what compare checks runs by
    corpora = {file.label: corpus_of(file) for file in present}
    if any(corpora.values()):  # index-layout files: the text is the corpus's, so its sha256 shapes answers
        facts["corpus_sha256"] = {label: sha for label, sha in corpora.items() if sha}
    return DataPlan(tuple(files), expected, left, bool(files) and len(present) == len(files), facts)


def _check_answered(results: Path, items: FileItems, done: dict[str, str | None]) -> None:
    """Every finished result answers the item its id names, by the file's identity rule: a result of
    an id the file does not name, or of another question, comes from other data or from another
    naming of the items (an older version's), and would be reused for the wrong item."""
    asks = dict(zip(items.ids, items.asks, strict=True))
    strangers = [item_id for item_id, key in done.items() if item_id not in asks or key not in (None, asks[item_id])]
    if strangers:
        shown = ", ".join(strangers[:5]) + (" ..." if len(strangers) > 5 else "")
        raise ReuseError(
            f"{results} holds {len(strangers)} result(s) that do not answer the item their id names in"
            f" {items.file.path.name} (ids {shown}: other data, or items named by another rule): pass --force to"
            " redo them, or choose another --output-dir"
        )


def left_to_run(request: EvalRequest, settings: RunSettings) -> int | None:
    """run-eval.sh's check: items without a finished result once every check of `check_run` that
    needs nothing the launch makes has passed (None while eval files are missing: the demo makes
    them); loads no tokenizer, contacts no server and writes nothing."""
    # A held folder is not refused here: the launch takes the folder's lock right after these checks
    # and refuses it in one line that names SAVE_FILE, the setting the user changes (launch/evaluate.py).
    plan = check_data(request, settings, allow_missing=True, lock=lambda: None)
    if not request.force:
        check_reuse(request.output_dir, plan.facts, [file.results_name for file in plan.files])
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
