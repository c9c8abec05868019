"""One rollout step of the trainer's own entry path: train.py, args, RolloutManager, generate(0).

What runs is what train.py runs: its module is imported (its imports are the host's layout), its
`parse_args`' module parses the launch's flags (host_args.py), its `create_rollout_manager(args,
pg)` builds the host's RolloutManager, which loads the data source, rollout function and our
hooks by the paths `args` holds (the host's own defaults for `--data-source-path` and
`--rollout-function-path`), and `ray.get(manager.generate.remote(0))` runs the rollout, our
hooks, the host's post-processing, our convert and the host's DP split.

Stand-ins, each listed in the report: Ray runs in-process and modules this machine lacks are
import-time placeholders (stand_ins.py), the placement groups are None (they are GPU bundles),
and the engine start-up starts no engine (engines.py): the server the preflight was given serves
the rollout. This module runs in the child process of child.py, which installs nothing in the
preflight's own process.

Each failure is a `CheckFailed` naming the checkout file and line it came from.
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
from mem_agent.preflight import engines, stand_ins
from mem_agent.preflight.checks import KeyReads, silent_breaks, spy_hooks
from mem_agent.preflight.failures import CheckFailed, describe, shown_path, stage, where
from mem_agent.preflight.host_args import HostArgs, host_args, validate
from mem_agent.preflight.launch import Launch

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
    launch: Launch
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
    """The trainer's entry point as a module (its `if __name__ == "__main__"` part does not run).
    An exception, an exit or an interrupt while it is imported is a FAIL at the line that raised it."""
    shown = shown_path(entry, root)
    if not entry.is_file():
        raise CheckFailed("train", shown, "missing: the launch script runs this file (the trainer's entry point)")
    spec = importlib.util.spec_from_file_location("mem_agent_preflight_train", entry)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (SystemExit, KeyboardInterrupt) as error:
        found, detail = describe(error, root)
        raise CheckFailed("train", found or shown, f"{detail} while train.py was imported: nothing to run") from None
    except Exception as error:
        found, detail = describe(error, root)
        raise CheckFailed("train", found or shown, detail) from None
    for name in ("parse_args", "create_rollout_manager"):
        if not callable(getattr(module, name, None)):
            raise CheckFailed("train", shown, f"no {name}: train.py no longer builds the run the way the hooks expect")
    return module


def _parsed_args(train: Any, request: StepRequest) -> HostArgs:
    """The launch's flags through the host's parser, the router filled in, then the host's validation."""
    engine = engines.ENGINES[request.host]
    parsed = host_args(train.parse_args, request.launch, engine=engine, root=request.root)
    engines.set_router(parsed.args, engine, *request.router)
    with stage("flags", request.root, parsed.parser_file):
        validate(parsed, train.parse_args)
    return parsed


def _mean_reward(data: dict[str, Any]) -> float:
    """The trajectories' mean raw reward (every turn row of a trajectory carries the trajectory's)."""
    per_trajectory = dict(zip(data.get("rollout_ids", []), map(float, data.get("raw_reward", [])), strict=True))
    return sum(per_trajectory.values()) / max(len(per_trajectory), 1)


def _generate(train: Any, args: Any, request: StepRequest, start_up: engines.StartUpStandIn) -> tuple[KeyReads, list]:
    """create_rollout_manager and generate(0), our hooks watched; returns what they saw and the ranks."""
    root, reads = request.root, KeyReads()
    hooks = [path for path in (getattr(args, name, None) for name in HOOK_FLAGS) if path]
    ray = sys.modules["ray"]  # the in-process stand-in
    with (
        spy_hooks(hooks, reads),
        stand_ins.before_actor_start(start_up),
        stage("manager", root, where(train.create_rollout_manager, root)),
    ):
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
    stand_ins.install(request.root)
    train = import_train(request.root, request.launch.entry)
    imported()
    parsed = _parsed_args(train, request)
    start_up = engines.StartUpStandIn(request.root)
    reads, ranks = _generate(train, parsed.args, request, start_up)
    global_sizes = ranks[0]["global_batch_sizes"] if ranks and "global_batch_sizes" in ranks[0] else []
    report_stand_ins = [
        f"Ray in-process, stubbed modules: {', '.join(stand_ins.installed())}",
        *request.launch.stand_ins,
        *parsed.stand_ins,
        "the placement groups (None: GPU bundles)",
    ]
    if start_up.replaced:
        report_stand_ins.append(f"{', '.join(start_up.replaced)} (no engines: the given server serves)")
    trajectories = len(set(reads.emitted.get("rollout_ids", [])))
    return StepReport(
        trajectories, len(reads.samples), len(global_sizes), len(ranks), report_stand_ins, _mean_reward(reads.emitted)
    )
