"""One rollout step of the trainer's own entry path, in the child process (child.py): train.py
imported, its `parse_args`' module over the launch's flags (host_args.py), its
`create_rollout_manager(args, pg)` (pg None: GPU bundles) loading the data source, rollout function
and our hooks by the paths `args` holds, and `ray.get(manager.generate.remote(0))`: the rollout,
our hooks, the host's post-processing, our convert and its DP split. Each failure is a
`CheckFailed` naming the checkout file and line it came from.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mem_agent.host.clients import close_all_clients
from mem_agent.launch.recipe import Group
from mem_agent.preflight import stand_ins
from mem_agent.preflight.checks import CheckFailed, KeyReads, shown_path, silent_breaks, spy_hooks, stage, where
from mem_agent.preflight.host_args import host_args

# The launch flags that name our hooks (each is watched during the step; see checks.py).
HOOK_FLAGS = (
    "custom_generate_function_path",
    "custom_rm_path",
    "custom_reward_post_process_path",
    "custom_convert_samples_to_train_data_path",
)


@dataclasses.dataclass(frozen=True)
class StepRequest:
    """What the child process needs for the step (it crosses the process boundary pickled)."""

    host: str
    root: Path
    entry: Path  # the launch's train.py
    groups: tuple[Group, ...]  # the launch's flag groups, in order
    router: tuple[str, int]
    protocol: str
    dp_size: int


@dataclasses.dataclass
class StepReport:
    trajectories: int
    rows: int
    steps: int
    ranks: int
    stand_ins: list[str]
    mean_reward: float  # the trajectories' mean raw reward: ground truths reach the reward through the host


def import_train(root: Path, entry: Path) -> Any:
    """The trainer's entry point as a module (its `if __name__ == "__main__"` part does not run)."""
    shown = shown_path(entry, root)
    if not entry.is_file():
        raise CheckFailed("train", shown, "missing: the launch script runs this file (the trainer's entry point)")
    spec = importlib.util.spec_from_file_location("mem_agent_preflight_train", entry)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with stage("train", root, shown, exiting=" while train.py was imported: nothing to run"):
        spec.loader.exec_module(module)
    for name in ("parse_args", "create_rollout_manager"):
        if not callable(getattr(module, name, None)):
            raise CheckFailed("train", shown, f"no {name}: train.py no longer builds the run the way the hooks expect")
    return module


def _generate(train: Any, args: Any, request: StepRequest) -> tuple[KeyReads, list]:
    """create_rollout_manager and generate(0), our hooks watched; returns what they saw and the ranks."""
    root, reads = request.root, KeyReads()
    hooks = [path for path in (getattr(args, name, None) for name in HOOK_FLAGS) if path]
    ray = sys.modules["ray"]  # the in-process stand-in
    with spy_hooks(hooks, reads), stage("manager", root, where(train.create_rollout_manager, root)):
        manager, _ = train.create_rollout_manager(args, None)  # as train.py calls it; pg: no GPU bundles
        parallel = {"dp_size": request.dp_size, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
        ray.get(manager.set_train_parallel_config.remote(parallel))  # what the train actors report
    manager_class = type(manager._instance)
    try:
        with spy_hooks(hooks, reads), stage("generate", root, where(manager_class, root)):
            refs = ray.get(manager.generate.remote(0))
            ranks = [ray.get(getattr(ref, "inner", ref)) for ref in refs]
    finally:
        close_all_clients()  # our hooks' HTTP sessions, on the loop the host ran them on
    silent_breaks(reads, root, manager_class)
    return reads, ranks


def run_step(request: StepRequest, imported: Callable[[], None]) -> StepReport:
    """train.py's path for rollout 0; raises CheckFailed at the first incompatibility. `imported`
    is called once train.py is imported (the end of the import's time bound)."""
    if request.protocol:
        os.environ["MEM_PROTOCOL"] = request.protocol
    sys.path.insert(0, str(request.root))
    start_up = stand_ins.install(request.root)
    train = import_train(request.root, request.entry)
    imported()
    args, parser_stand_ins = host_args(train.parse_args, request.groups, request.host, request.root, request.router)
    reads, ranks = _generate(train, args, request)
    report_stand_ins = [
        f"Ray in-process, stubbed modules: {', '.join(stand_ins.STUBBED)}",
        *parser_stand_ins,
        "the placement groups (None: GPU bundles)",
    ]
    if start_up.replaced:
        report_stand_ins.append(f"{', '.join(start_up.replaced)} (no engines: the given server serves)")
    # every turn row of a trajectory carries the trajectory's raw reward
    rewards = dict(
        zip(reads.emitted.get("rollout_ids", []), map(float, reads.emitted.get("raw_reward", [])), strict=True)
    )
    return StepReport(
        trajectories=len(rewards),
        rows=len(reads.samples),
        steps=len(ranks[0].get("global_batch_sizes", [])) if ranks else 0,
        ranks=len(ranks),
        stand_ins=report_stand_ins,
        mean_reward=sum(rewards.values()) / max(len(rewards), 1),
    )
