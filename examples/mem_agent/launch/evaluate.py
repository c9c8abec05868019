"""Evaluate a memory agent: every setting checked at once, the model served, the evaluator run.

run-eval.sh `exec`s this command, so a signal sent to the script reaches it. It checks and plans the
run (`EvalPlan`; the evaluator's flags by the evaluator's own parser and checks, in-process, which
also count the items left: with none, nothing is served), then runs the plan in this same process
under the run folder's lock, and stops every session it started: at the end, on SIGTERM, SIGINT or
SIGHUP (exit 128 + the signal) and, through their tethers, on SIGKILL.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from mem_agent.common.console import flag_name
from mem_agent.common.guarded_files import check_outputs, open_lock
from mem_agent.common.printable import printable, shell_line
from mem_agent.common.run_folder import LOCK_FD_ENV, hold_descriptor, lock_path
from mem_agent.common.usage import Problems, UsageError
from mem_agent.evaluation.request import EvalRequest, parse_request
from mem_agent.evaluation.run_plan import check_arguments, left_to_run
from mem_agent.launch.convert import Conversion, convert
from mem_agent.launch.eval_checks import Server, Step, check_needs, demo_data, gpu_servers, model_folder, node_gpus
from mem_agent.launch.eval_settings import DEMO_CAPS, EvalSettings, Mode, Suite, judge_unused, run_folder, runs
from mem_agent.serving.cpu_stack import CPU_STACK, STACK_LOGS
from mem_agent.serving.processes import Group, ServerStartError, stopped_together, wait_healthy
from mem_agent.settings.command import Command, read

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
SERVER_LOGS = "servers"  # the servers' logs, in the run folder


@dataclass(frozen=True)
class EvalPlan:
    """A checked run (`_plan`), in the order it runs: the conversion, the steps (the demo's
    data), the servers wave by wave (each wave started together, healthy before the next), then the
    evaluator, which the CPU stack runs where `stack` names it."""

    settings: EvalSettings
    run_dir: str  # OUTPUT_ROOT/SAVE_FILE: locked; server logs in servers/
    evaluate: list[str]
    steps: tuple[Step, ...] = ()
    servers: tuple[list[Server], ...] = ()
    stack: tuple[str, ...] = ()
    conversion: Conversion | None = None


def _plan(environ: Mapping[str, str], problems: Problems) -> EvalPlan:
    settings = read(EvalSettings, environ, problems)
    mode = settings.mode()
    gpus = node_gpus(settings, environ, problems) if mode is Mode.SERVE else ()
    judge_unused(settings, environ, problems, on_gpus=bool(gpus))
    run_dir, lengths = run_folder(settings)
    if Path(run_dir).is_symlink():
        problems.problem(
            f"{run_dir} is a symbolic link: a run writes only inside OUTPUT_ROOT; choose another SAVE_FILE"
        )
    model, conversion = model_folder(settings, environ, problems)
    python = environ.get("PYTHON", "").strip() or sys.executable  # run-eval.sh's, as the user set it
    servers = gpu_servers(settings, gpus, python, model, problems) if gpus else []
    steps: list[Step] = []
    if mode is Mode.DEMO:
        steps = demo_data(python, Path(run_dir, "data"), lengths, settings.demo_questions, problems)
    flags = _evaluator_flags(settings, environ, run_dir, lengths, model, on_gpus=bool(gpus))
    url = settings.url or (servers[-1][0][2] if servers else "")  # none: the CPU stack names its own
    to_url = (f"URL={url}" if settings.url else "", ["--url", url] if url else [])
    left = _check_evaluator([*flags, to_url], settings, problems)
    evaluate = [python, "-m", "mem_agent.eval_ruler_hqa", *(word for _, words in flags for word in words)]
    if left == 0 and conversion is None:
        nothing = f"nothing left to run in {run_dir}: every item has a result, so no server is started"
        return EvalPlan(settings, run_dir, evaluate, steps=(nothing,))
    stack: list[str] = []
    if gpus and settings.dry_run:
        used = f"{settings.dp * settings.tp} of {len(gpus)} GPU(s) ({' '.join(gpus)})"
        steps.append(
            f"dry run: DP={settings.dp} x TP={settings.tp} = {used}, DP_MODE={settings.dp_mode}, serving at {url}"
        )
    elif not url:
        if mode is Mode.SERVE:
            steps.append(f"no GPU found: serving {model} with vLLM's CPU build (slow beyond small models)")
        stack = [python, *CPU_STACK, "exec", *(["--model", model] if model else []), "--run-dir"]
        stack += [str(Path(run_dir, SERVER_LOGS)), "--start-timeout", str(settings.serve_timeout)]
    return EvalPlan(settings, run_dir, [*evaluate, *to_url[1]], tuple(steps), tuple(servers), tuple(stack), conversion)


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
    for cap in DEMO_CAPS if mode is Mode.DEMO else ():
        if not environ.get(f"MEM_{cap.upper()}", "").strip():
            value = str(getattr(settings, f"demo_{cap}"))
            flags.append((f"DEMO_{cap.upper()}={value}", [f"--{cap.replace('_', '-')}", value]))
    flags.append(("", ["--tokenizer", model] if model else []))
    extra = settings.extra_eval_args.split()
    return [*flags, (f"EXTRA_EVAL_ARGS={' '.join(extra)}", extra)]


def _check_evaluator(flags: Flags, settings: EvalSettings, problems: Problems) -> int | None:
    """The evaluator's own parser and checks (in-process) over the flags it will run with, each
    setting's added in turn: a problem the added flags bring is named by that setting, once, and its
    flags are left out of the later checks. Then what the request needs of this machine, and the items
    left to run, the data read in full only once every other setting is right; None while unknown."""
    words: list[str] = []
    seen: set[str] = set()
    checked = None
    for owner, more in flags:
        try:
            request = parse_request([*words, *more], raising=True)
            checked, found = (request, check_arguments(request)), []
        except (UsageError, ValueError) as error:
            found = [text for text in _problems(error) if text not in seen]
        problems.extend(found, f"{owner}: " if owner else "")
        seen.update(found)
        words += [] if owner and found else more
    if checked is None:
        return None
    check_needs(*checked, settings, problems)
    try:
        return None if problems.found else left_to_run(*checked)
    except (UsageError, ValueError) as error:
        problems.extend(_problems(error))
        return None


def _problems(error: Exception) -> list[str]:
    return getattr(error, "problems", None) or [str(error)]


def launch(plan: EvalPlan) -> int:
    """Run `plan`: under the run folder's lock, every session it starts stopped at the end or on a stop
    signal (exit status 128 + its number)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)  # a test's stand-in stdout may have none
    if reconfigure is not None:
        reconfigure(line_buffering=True)  # ours and the children's lines in order
    if plan.settings.dry_run:
        return _execute(plan, None, ())
    with stopped_together(Group(plan.settings.serve_stop_timeout)) as group:
        try:
            # kept for this process's life and passed to the evaluator, which runs under it (LOCK_FD_ENV)
            descriptor = open_lock(lock_path(Path(plan.run_dir)))
            hold_descriptor(descriptor, Path(plan.run_dir), os.getpid(), "run-eval.sh", "choose another SAVE_FILE")
            os.environ[LOCK_FD_ENV] = str(descriptor)
            return _execute(plan, group, (descriptor,))
        except (UsageError, ServerStartError) as error:  # a held folder, a link on the way; a server that failed
            print(printable(f"error: {error}"), file=sys.stderr)
            return 2 if isinstance(error, UsageError) else 1


def _execute(plan: EvalPlan, group: Group | None, lock: tuple[int, ...]) -> int:
    """The plan's commands in order, each printed instead where there is no `group` (a dry run); the
    evaluator (and the stack running it) keeps the run folder's `lock`."""
    settings, run_dir = plan.settings, Path(plan.run_dir)

    def run(name: str, argv: Sequence[str], pass_fds: Sequence[int] = ()) -> int:
        if group is None:
            print(shell_line(argv))
            return 0
        return group.run(name, argv, pass_fds)

    if plan.conversion is not None and (code := convert(plan.conversion, lambda argv: run("convert", argv))):
        return code
    for step in plan.steps:
        if isinstance(step, str):
            print(printable(step))
        elif code := run(*step):
            return code
    for wave in plan.servers:
        started = []
        for name, argv, url in wave:
            if group is None:
                print(shell_line(argv))
                continue
            log = run_dir / SERVER_LOGS / f"{name}.log"
            started.append((group.start(name, argv, log, log_root=run_dir), url))
            print(printable(f"started {name} (pid {started[-1][0].pid}, log {log})"))
        for process, url in started:
            seconds = wait_healthy(process, f"{url}/health", settings.serve_timeout, settings.health_interval)
            print(f"{process.name} is up at {url} after {seconds:.0f} s", flush=True)
    if plan.stack and group is not None:  # the stack writes its logs where it is told: no link on the way there
        check_outputs([run_dir / SERVER_LOGS / name for name in STACK_LOGS], root=run_dir)
    evaluate = [*plan.stack, "--", *plan.evaluate] if plan.stack else plan.evaluate
    return run("local_stack" if plan.stack else "evaluator", evaluate, lock)


def main(argv: Sequence[str] | None = None) -> int:
    return COMMAND.run(argv, os.environ, _plan, launch)


if __name__ == "__main__":
    raise SystemExit(main())
