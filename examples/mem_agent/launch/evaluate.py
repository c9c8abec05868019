"""Evaluate a memory agent: every setting checked at once, the model served, the evaluator run.

run-eval.sh `exec`s this command; it plans the run (`EvalPlan`) and launches it in this same process
(launch/eval_run.py). The evaluator's flags are checked by its own parser and checks, in-process,
which also count the items left to run: with none, nothing is served.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path

from mem_agent.common.console import flag_name
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.request import EvalRequest, parse_request
from mem_agent.evaluation.run_plan import RunSettings, check_arguments, left_to_run
from mem_agent.launch.eval_checks import check_needs, demo_data, gpu_servers, model_folder, node_gpus
from mem_agent.launch.eval_run import SERVER_LOGS, EvalPlan, Step, launch
from mem_agent.launch.eval_settings import EvalSettings, Mode, Suite, document_counts, judge_unused, run_folder, runs
from mem_agent.launch.problems import Problems
from mem_agent.launch.script_settings import Command, read
from mem_agent.launch.serving import CPU_STACK, VLLM_SERVER

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
Flags = list[tuple[str, list[str]]]  # the evaluator's flags, each after the setting that gives them ("": the launch)


def _plan(environ: Mapping[str, str], problems: Problems) -> EvalPlan:
    settings = read(EvalSettings, environ, problems)
    problems.dry_run = settings.dry_run
    mode = settings.mode()
    gpus = node_gpus(settings, environ, problems) if mode is Mode.SERVE else ()
    judge_unused(settings, environ, problems, on_gpus=bool(gpus))
    run_dir = run_folder(settings)
    if Path(run_dir).is_symlink():
        problems.problem(
            f"{run_dir} is a symbolic link: a run writes only inside OUTPUT_ROOT; choose another SAVE_FILE"
        )
    lengths = document_counts(settings)
    model, conversion = model_folder(settings, environ, problems)
    python = environ.get("PYTHON", "").strip() or sys.executable  # run-eval.sh's, as the user set it
    serve = [
        python,
        *VLLM_SERVER,
        "--model",
        model,
        "--host",
        settings.host,
        "--tensor-parallel-size",
        str(settings.tp),
    ]
    servers = gpu_servers(settings, gpus, [*serve, *settings.extra_serve_args.split()], problems) if gpus else []
    steps: list[Step] = []
    if mode is Mode.DEMO:
        steps = demo_data(python, Path(run_dir, "data"), lengths, settings.demo_questions, problems)
    flags = _evaluator_flags(settings, environ, run_dir, lengths, model, on_gpus=bool(gpus))
    url = settings.url or (servers[-1][0][2] if servers else "")
    checked = _check_evaluator(
        [*flags, (f"URL={url}" if settings.url else "", ["--url", url] if url else [])], problems
    )
    if checked is not None:
        check_needs(*checked, settings, problems)
    left = _left_to_run(*checked, problems) if checked is not None and not problems.found else None
    evaluate = [python, "-m", "mem_agent.eval_ruler_hqa", *(word for _, words in flags for word in words)]
    if left == 0 and conversion is None:
        nothing = f"nothing left to run in {run_dir}: every item has a result, so no server is started"
        return EvalPlan(settings, run_dir, evaluate, steps=(nothing,))
    if gpus:
        if settings.dry_run:
            used = f"{settings.dp * settings.tp} of {len(gpus)} GPU(s) ({' '.join(gpus)})"
            steps.append(
                f"dry run: DP={settings.dp} x TP={settings.tp} = {used}, DP_MODE={settings.dp_mode}, serving at {url}"
            )
        return EvalPlan(
            settings, run_dir, [*evaluate, "--url", url], tuple(steps), tuple(servers), conversion=conversion
        )
    if mode is Mode.URL:
        return EvalPlan(settings, run_dir, [*evaluate, "--url", url], conversion=conversion)
    if mode is Mode.SERVE:
        steps.append(f"no GPU found: serving {model} with vLLM's CPU build (slow beyond small models)")
    stack = [
        python,
        *CPU_STACK,
        "exec",
        *(["--model", model] if model else []),
        "--run-dir",
        str(Path(run_dir, SERVER_LOGS)),
    ]
    stack += ["--start-timeout", str(settings.serve_timeout)]
    return EvalPlan(settings, run_dir, evaluate, tuple(steps), stack=tuple(stack), conversion=conversion)


def _evaluator_flags(
    settings: EvalSettings, environ: Mapping[str, str], run_dir: str, lengths: list[str], model: str, on_gpus: bool
) -> Flags:
    """The evaluator's flags: the run folder and each suite's files, the protocol, the evaluator flags
    that are set (as typed), the demo's token caps, the model's tokenizer, then EXTRA_EVAL_ARGS'."""
    mode, given = settings.mode(), settings.model_fields_set  # the variables set: the others, the evaluator's defaults
    own = ["--output-dir", run_dir]
    if runs(settings, Suite.HQA):
        own += ["--data-root", f"{run_dir}/data" if mode is Mode.DEMO else settings.data_root, "--lengths", *lengths]
    if runs(settings, Suite.RULER):
        own += ["--ruler-root", settings.ruler_root, "--ruler-splits", *settings.ruler_splits.split()]
        own += ["--ruler-lengths", *settings.ruler_lengths.split()]
    if runs(settings, Suite.LONGBENCH):
        own += ["--longbench-root", settings.longbench_root, "--longbench-tasks", *settings.longbench_tasks.split()]
    on_cpu_stack = mode is Mode.DEMO or (mode is Mode.SERVE and not on_gpus)  # vLLM with --enable-scale-out
    flags = [("", own + ([] if "protocol" in given else ["--protocol", "vllm" if on_cpu_stack else settings.protocol]))]
    for field in fields(EvalRequest):
        if field.metadata["env"] and field.metadata["launch_default"] is None and field.name in given:
            value = getattr(settings, field.name)
            flags.append((f"{field.metadata['env']}={value}", [flag_name(field), value]))
    for mem, demo, flag in (
        ("MEM_MAX_MEMORY", "DEMO_MAX_MEMORY", "--max-memory"),
        ("MEM_MAX_FINAL", "DEMO_MAX_FINAL", "--max-final"),
    ):
        if mode is Mode.DEMO and not environ.get(mem, "").strip():
            value = str(getattr(settings, demo.lower()))
            flags.append((f"{demo}={value}", [flag, value]))
    flags.append(("", ["--tokenizer", model] if model else []))
    extra = settings.extra_eval_args.split()
    return [*flags, (f"EXTRA_EVAL_ARGS={' '.join(extra)}", extra)]


def _check_evaluator(flags: Flags, problems: Problems) -> tuple[EvalRequest, RunSettings] | None:
    """The evaluator's own parser and checks (in-process) over the flags it will run with, each
    setting's added in turn: a problem the added flags bring is named by that setting, once, and its
    flags are left out of the later checks. The checked request; None where none could be made."""
    words: list[str] = []
    seen: set[str] = set()
    checked = None
    for owner, more in flags:
        try:
            request = parse_request([*words, *more], raising=True)
            checked, found = (request, check_arguments(request)), []
        except (UsageError, ValueError) as error:
            found = [text for text in getattr(error, "problems", None) or [str(error)] if text not in seen]
        problems.extend(found, f"{owner}: " if owner else "")
        seen.update(found)
        words += [] if owner and found else more
    return checked


def _left_to_run(request: EvalRequest, checked: RunSettings, problems: Problems) -> int | None:
    """Items left to run, the data read in full (once every other setting is right); None while unknown."""
    try:
        return left_to_run(request, checked)
    except (UsageError, ValueError) as error:
        problems.extend(getattr(error, "problems", None) or [str(error)])
        return None


def main(argv: Sequence[str] | None = None) -> int:
    return COMMAND.run(argv, os.environ, _plan, launch)


if __name__ == "__main__":
    raise SystemExit(main())
