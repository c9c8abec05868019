"""Evaluate a memory agent: every setting checked at once, the model served, the evaluator run.

`mem-agent run-eval` (run-eval.sh runs it) reads the settings (launch/eval_settings.py), finds the
node's GPUs (or previews NUM_GPUS in a dry run) and checks what the mode needs (launch/eval_checks.py).
It builds the evaluator's flags and checks them with the evaluator's own parser and validation,
in-process (evaluation/run_plan.py), which also counts the items left to run: with none left,
nothing is served. The plan it makes (`EvalPlan`: the evaluator's and the servers' commands, the GPU
layout) is run in this same process by launch/eval_run.py.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path

from mem_agent.common.console import flag_name
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.request import EvalRequest, parse_request
from mem_agent.evaluation.run_plan import check_arguments, left_to_run
from mem_agent.launch.eval_checks import (
    check_demo_data,
    check_layout,
    check_machine,
    model_folder,
    node_gpus,
)
from mem_agent.launch.eval_run import EvalPlan, launch
from mem_agent.launch.eval_settings import EvalSettings, Mode, Suite, document_counts, judge_unused, run_folder, runs
from mem_agent.launch.problems import Problems
from mem_agent.launch.script_settings import Command, read
from mem_agent.launch.serving import VLLM_SERVER, GpuLayout

COMMAND = Command(
    "mem_agent.launch.evaluate",
    EvalSettings,
    "run-eval.sh",
    "RULER-HQA evaluation of a memory agent (SUITE=ruler: RULER's general tasks; all: both, one summary.json):"
    " every setting is checked before anything starts, all problems in one message; a setting the chosen mode"
    " does not use is one of them (DATA_ROOT in the demo, TP with URL)."
    " Then the model is served (or the demo's tiny Qwen3), evaluated, and every process started is stopped.",
    "MEM_* agent settings (chunk size, memory size, ...) are read by the evaluator itself (docs/settings.md)."
    " Server logs go to OUTPUT_ROOT/SAVE_FILE/servers/. Every eval file of every LENGTH is read in full before"
    " anything starts; a rerun with nothing left to run starts no server, and one with other LENGTH values keeps"
    " the earlier lengths in summary.json and the plot. PYTHON: the interpreter of every command run, with"
    " mem-agent installed (run-eval.sh's default: VENV/bin/python, VENV defaulting to the checkout's .venv made"
    " by scripts/bootstrap.sh; else python3; mem-agent run-eval's: its own).",
)


def _plan(environ: Mapping[str, str], problems: Problems) -> EvalPlan:
    settings = read(EvalSettings, environ, problems)
    problems.dry_run = settings.dry_run
    mode = settings.mode()
    gpus = node_gpus(settings, environ, problems) if mode is Mode.SERVE else ()
    judge_unused(settings, environ, problems, on_gpus=bool(gpus))
    run_dir = run_folder(settings, environ)
    if Path(run_dir).is_symlink():
        problems.problem(
            f"{run_dir} is a symbolic link: a run writes only inside OUTPUT_ROOT; choose another SAVE_FILE"
        )
    lengths = document_counts(settings, environ)
    model, conversion = model_folder(settings, environ, problems)
    check_machine(settings, mode, lengths, problems)
    layout = GpuLayout(gpus, settings.dp, settings.tp, settings.dp_mode.value, settings.host, settings.port)
    router = check_layout(settings, layout, problems) if gpus else ""
    data_root = f"{run_dir}/data" if mode is Mode.DEMO else settings.data_root
    if mode is Mode.DEMO:
        check_demo_data(Path(data_root), lengths, settings.demo_questions, problems)
    data_args = _data_args(settings, run_dir, data_root, lengths)
    agent_args, owners = _agent_args(settings, environ, bool(gpus), model)
    extra = settings.extra_eval_args.split()
    url = settings.url or (layout.url if gpus else "")
    left = _check_evaluator([*data_args, *agent_args, *(["--url", url] if url else [])], extra, owners, problems)
    python = environ.get("PYTHON", "").strip() or sys.executable  # run-eval.sh's, as the user set it
    serve = [python, *VLLM_SERVER, "--model", model, "--host", settings.host]
    serve += ["--tensor-parallel-size", str(settings.tp), *settings.extra_serve_args.split()]
    return EvalPlan(
        settings=settings,
        python=python,
        run_dir=run_dir,
        serving="gpu" if gpus else "cpu" if mode is Mode.SERVE else mode.value,
        left_to_run=left,
        evaluate=[python, "-m", "mem_agent.eval_ruler_hqa", *data_args, *agent_args, *extra],
        serve=serve,
        model=model,
        demo_lengths=tuple(lengths) if mode is Mode.DEMO else (),
        layout=layout if gpus else None,
        router=router,
        conversion=conversion,
    )


def _data_args(settings: EvalSettings, run_dir: str, data_root: str, lengths: list[str]) -> list[str]:
    """The evaluator's data and output flags: the run folder, and each suite's files."""
    args = ["--output-dir", run_dir]
    if runs(settings, Suite.HQA):
        args += ["--data-root", data_root, "--lengths", *lengths]
    if runs(settings, Suite.RULER):
        args += ["--ruler-root", settings.ruler_root, "--ruler-splits", *settings.ruler_splits.split()]
        args += ["--ruler-lengths", *settings.ruler_lengths.split()]
    if runs(settings, Suite.LONGBENCH):
        args += ["--longbench-root", settings.longbench_root, "--longbench-tasks", *settings.longbench_tasks.split()]
    return args


def _agent_args(
    settings: EvalSettings, environ: Mapping[str, str], on_gpus: bool, model: str
) -> tuple[list[str], dict[str, str]]:
    """The evaluator's agent and sampling flags: the protocol, the evaluator flags that are set (as
    typed), the demo's token caps, the model's tokenizer; and which setting gave each."""
    mode = settings.mode()
    on_cpu_stack = mode is Mode.DEMO or (mode is Mode.SERVE and not on_gpus)  # vLLM with --enable-scale-out
    given = settings.model_fields_set  # the variables set: for the others, the evaluator's own defaults
    args = [] if "protocol" in given else ["--protocol", "vllm" if on_cpu_stack else settings.protocol]
    owners = {}
    for field in fields(EvalRequest):
        if field.metadata["env"] and field.metadata["launch_default"] is None and field.name in given:
            value = getattr(settings, field.name)
            args += [flag_name(field), value]
            owners[flag_name(field)] = f"{field.metadata['env']}={value}"
    if mode is Mode.DEMO:
        for mem, demo, flag in (
            ("MEM_MAX_MEMORY", "DEMO_MAX_MEMORY", "--max-memory"),
            ("MEM_MAX_FINAL", "DEMO_MAX_FINAL", "--max-final"),
        ):
            if not environ.get(mem, "").strip():
                value = str(getattr(settings, demo.lower()))
                args += [flag, value]
                owners[flag] = f"{demo}={value}"
    if model:
        args += ["--tokenizer", model]
    return args, owners


def _check_evaluator(own: list[str], extra: list[str], owners: dict[str, str], problems: Problems) -> int | None:
    """The evaluator's own parser and checks over the flags it will run with (`own`, then EXTRA_EVAL_ARGS'
    words), in-process; the data is read (in full) only once every other setting is right. Items left
    to run; None while unknown."""
    try:
        try:
            request = parse_request([*own, *extra], raising=True)
        except UsageError as error:  # the rest is checked without the mistakes: EXTRA_EVAL_ARGS, a refused setting
            _report(error, owners, extra, problems)
            refused = {flag for flag in owners if any(_mentions(problem, flag) for problem in error.problems)}
            request = parse_request(_without(own, refused), raising=True)
        arguments = check_arguments(request)
        return None if problems.found else left_to_run(request, arguments)
    except (UsageError, ValueError) as error:
        if not problems.found or str(error) not in problems.found[-1]:  # not the parser's mistake once more
            _report(error, owners, extra, problems)
        return None


def _without(words: list[str], flags: set[str]) -> list[str]:
    """`words` less each of `flags` and the value after it."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip or word in flags:
            skip = not skip
            continue
        kept.append(word)
    return kept


def _report(error: Exception, owners: dict[str, str], extra: Sequence[str], problems: Problems) -> None:
    for problem in getattr(error, "problems", None) or [str(error)]:
        problems.problem(_named(problem, owners, extra))


def _named(problem: str, owners: dict[str, str], extra: Sequence[str]) -> str:
    """The evaluator's problem, led by the variable that gave the flag it names."""
    for flag, owner in owners.items():
        if _mentions(problem, flag):
            return f"{owner}: {problem}"
    if any(_mentions(problem, word) for word in extra if word.startswith("-")):
        return f"EXTRA_EVAL_ARGS={' '.join(extra)}: {problem}"
    return problem


def _mentions(text: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def main(argv: Sequence[str] | None = None) -> int:
    return COMMAND.run(argv, os.environ, _plan, launch)


if __name__ == "__main__":
    raise SystemExit(main())
