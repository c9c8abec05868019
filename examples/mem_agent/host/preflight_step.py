"""One rollout step of the trainer's own entry path, for check_host: train.py, args, RolloutManager.

What runs is what train.py runs: its module is imported (its imports are the host's layout), its
`parse_args`' module parses the launch script's flags (host/preflight_args.py), its
`create_rollout_manager(args, pg)` builds the host's RolloutManager, which loads the data source,
rollout function and our hooks by the paths `args` holds (the host's own defaults for
`--data-source-path` and `--rollout-function-path`), and `ray.get(manager.generate.remote(0))`
runs the rollout, our hooks, the host's post-processing, our convert and the host's DP split.

Stand-ins, each listed in the report: Ray runs in-process (host/stubs.py), modules this machine
lacks are import-time placeholders, the placement groups are None (they are GPU bundles), and the
engine start-up (`start_rollout_servers`) returns no engines: the server the preflight was given
serves the rollout.

Each failure is a `CheckFailed` naming the checkout file and line it came from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mem_agent.host.preflight_args import HostArgs, HostArgsError, host_args, validate
from mem_agent.host.preflight_checks import KeyReads, convert_keys_unread, spy_hooks

ENGINES = {"slime": "sglang", "vime": "vllm"}
# The launch flags that name our hooks (each is watched during the step; see preflight_checks).
HOOK_FLAGS = (
    "custom_generate_function_path",
    "custom_rm_path",
    "custom_reward_post_process_path",
    "custom_convert_samples_to_train_data_path",
)


class CheckFailed(Exception):
    def __init__(self, stage: str, where: str, detail: str) -> None:
        super().__init__(f"FAIL {stage}: {where}: {detail}")


def describe(error: BaseException, root: Path) -> tuple[str | None, str]:
    """(`file:line` of the deepest frame inside the checkout, or None), and `Type: message`."""
    where = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = Path(frame.filename)
        if path.is_absolute() and path.resolve().is_relative_to(root.resolve()):
            where = f"{path.resolve().relative_to(root.resolve())}:{frame.lineno}"
    message = " ".join(str(error).split()) or "(no message)"
    return where, f"{type(error).__name__}: {message[:300]}"


@contextlib.contextmanager
def stage(name: str, root: Path, fallback: str) -> Iterator[None]:
    """Report an error of the stage at the checkout line that raised it, else at `fallback`."""
    try:
        yield
    except CheckFailed:
        raise
    except Exception as error:
        where, detail = describe(error, root)
        raise CheckFailed(name, where or fallback, detail) from None


def where_defined(target: Any, root: Path) -> str:
    """`file:line` of a class or function, relative to the checkout."""
    try:
        path = Path(inspect.getsourcefile(target) or "?").resolve()
        line = inspect.getsourcelines(target)[1]
    except (OSError, TypeError):
        return getattr(target, "__module__", "?")
    shown = path.relative_to(root.resolve()) if path.is_relative_to(root.resolve()) else path
    return f"{shown}:{line}"


def import_train(root: Path, entry: Path) -> Any:
    """The trainer's entry point as a module (its `if __name__ == "__main__"` part does not run)."""
    shown = str(entry.relative_to(root)) if entry.is_relative_to(root) else str(entry)
    if not entry.is_file():
        raise CheckFailed("train", shown, "missing: the launch script runs this file (the trainer's entry point)")
    spec = importlib.util.spec_from_file_location("mem_agent_preflight_train", entry)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with stage("train", root, shown):
        spec.loader.exec_module(module)
    for name in ("parse_args", "create_rollout_manager"):
        if not callable(getattr(module, name, None)):
            raise CheckFailed("train", shown, f"no {name}: train.py no longer builds the run the way the hooks expect")
    return module


def _stand_in_servers(host: str, root: Path) -> list[str]:
    """Replace the engine start-up (`def start_rollout_servers`) wherever the host defines it."""
    replaced = []
    for path in sorted((root / host).rglob("*.py")):
        if "def start_rollout_servers(" not in path.read_text(errors="replace"):
            continue
        dotted = ".".join(path.relative_to(root).with_suffix("").parts)
        with stage("manager", root, str(path.relative_to(root))):
            module = importlib.import_module(dotted)
        real = module.start_rollout_servers
        shape = str(inspect.signature(real).return_annotation)

        def no_engines(args: Any, pg: Any, *rest: Any, _tuple: bool = "tuple" in shape, **kwargs: Any) -> Any:
            return ({}, []) if _tuple else {}

        module.start_rollout_servers = no_engines
        replaced.append(f"{dotted}.start_rollout_servers")
    return replaced


@dataclasses.dataclass
class StepReport:
    trajectories: int
    rows: int
    steps: int
    ranks: int
    stand_ins: list[str]
    mean_reward: float  # the trajectories' mean raw reward: ground truths reach the reward through the host


def _set_router(args: Any, engine: str, address: str, port: int) -> None:
    """What the engine start-up fills in: the router's address (the server the preflight uses)."""
    setattr(args, f"{engine}_router_ip", address)
    setattr(args, f"{engine}_router_port", port)


def _parsed_args(train: Any, host: str, root: Path, flags: list[str], router: tuple[str, int]) -> HostArgs:
    """The launch flags through the host's parser, the router filled in, then the host's validation."""
    engine = ENGINES[host]
    try:
        parsed = host_args(train.parse_args, flags, engine=engine, root=f"{root.resolve()}/")
    except HostArgsError as error:
        raise CheckFailed("flags", error.where, error.detail) from None
    _set_router(parsed.args, engine, *router)
    with stage("flags", root, parsed.parser_file):
        validate(parsed, train.parse_args)
    return parsed


def _silent_breaks(reads: KeyReads, root: Path, manager_class: type) -> None:
    """The two breaks that raise nowhere: a Sample field our hooks set that the host lacks, and a
    key our convert emits that the host never reads."""
    if reads.unknown_attributes and reads.sample_type is not None:
        named = ", ".join(f"{name} ({hook})" for name, hook in sorted(reads.unknown_attributes.items()))
        raise CheckFailed(
            "sample",
            where_defined(reads.sample_type, root),
            f"our hooks set {named} on the host's {reads.sample_type.__name__}, which declares no such field "
            "(renamed? the value would never reach the trainer)",
        )
    unread = convert_keys_unread(reads)
    if unread:
        raise CheckFailed(
            "convert",
            _relative(reads.reader or where_defined(manager_class, root), root),
            f"our convert emits {', '.join(unread)}, which the host's convert and split never read (renamed? "
            "the values would never reach the trainer)",
        )


def run_step(host: str, root: Path, entry: Path, flags: list[str], router: tuple[str, int], dp_size: int) -> StepReport:
    """train.py's path for rollout 0; raises CheckFailed at the first incompatibility."""
    train = import_train(root, entry)
    parsed = _parsed_args(train, host, root, flags, router)
    args = parsed.args
    stand_ins = [*parsed.stand_ins, "the placement groups (None: GPU bundles)"]
    stand_ins += [f"{name} (no engines: the given server serves)" for name in _stand_in_servers(host, root)]
    reads = KeyReads()
    hooks = [path for path in (getattr(args, name, None) for name in HOOK_FLAGS) if path]
    ray = sys.modules["ray"]  # the in-process stand-in (host/stubs.py)
    with spy_hooks(hooks, reads), stage("manager", root, where_defined(train.create_rollout_manager, root)):
        manager, _ = train.create_rollout_manager(args, None)  # as train.py calls it; pg: no GPU bundles
        parallel = {"dp_size": dp_size, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
        ray.get(manager.set_train_parallel_config.remote(parallel))  # what the train actors report
    manager_class = type(manager._instance)
    with spy_hooks(hooks, reads), stage("generate", root, where_defined(manager_class, root)):
        refs = ray.get(manager.generate.remote(0))
        ranks = [ray.get(getattr(ref, "inner", ref)) for ref in refs]
    _silent_breaks(reads, root, manager_class)
    global_sizes = ranks[0]["global_batch_sizes"] if ranks and "global_batch_sizes" in ranks[0] else []
    trajectories = len(set(reads.emitted.get("rollout_ids", [])))
    reward = _mean_reward(reads.emitted)
    return StepReport(trajectories, len(reads.samples), len(global_sizes), len(ranks), stand_ins, reward)


def _mean_reward(data: dict[str, Any]) -> float:
    """The trajectories' mean raw reward (every turn row of a trajectory carries the trajectory's)."""
    per_trajectory = dict(zip(data.get("rollout_ids", []), map(float, data.get("raw_reward", [])), strict=True))
    return sum(per_trajectory.values()) / max(len(per_trajectory), 1)


def _relative(where: str, root: Path) -> str:
    match = re.match(r"(.*):(\d+)$", where)
    if not match:
        return where
    path = Path(match.group(1))
    if path.is_absolute() and path.resolve().is_relative_to(root.resolve()):
        return f"{path.resolve().relative_to(root.resolve())}:{match.group(2)}"
    return where
