"""train.py imported and its rollout step run in a child process, the import under a time bound.

The step is the trainer's own path: train.py, its parser over the launch's flags (host_args.py),
`create_rollout_manager(args, pg)` (pg None: GPU bundles), `ray.get(manager.generate.remote(0))`.
Importing train.py runs the checkout's code, which may exit, raise KeyboardInterrupt, block, call
`os._exit` or change the process for good; so it runs in a "spawn" child, and this process turns each
of those into a one-line FAIL (a blocked import: the child's process group is killed). A thread
could not: it cannot be stopped, `signal.signal` fails outside the main thread, and an `os._exit`
would end the preflight. The child leads its own process group (a Ctrl-C reaches only this process,
which stops it), ends itself when this process is gone, and writes only to stderr.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mem_agent.host.clients import close_all_clients
from mem_agent.launch.recipe import Group
from mem_agent.preflight import stand_ins
from mem_agent.preflight.checks import CheckFailed, KeyReads, shown_path, silent_breaks, spy_hooks, stage, where
from mem_agent.preflight.host_args import host_args, launch_words

PROGRESS_S = 10.0  # at most this long between two progress lines
PARENT_POLL_S = 0.5
STOP_WAIT_S = 5.0
EXIT_GRACE_S = 2.0  # a child with a verdict sent: its time to exit (its exit handlers run) before the kill

# The launch flags that name our hooks (each is watched during the step; see checks.py).
HOOKS = ("generate_function", "rm", "reward_post_process", "convert_samples_to_train_data")


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


def import_train(root: Path, entry: Path) -> Any:
    """The trainer's entry point as a module (its `if __name__ == "__main__"` part does not run)."""
    shown = shown_path(entry, root)
    if not entry.is_file():
        raise CheckFailed("train", shown, "missing: the launch script runs this file (the trainer's entry point)")
    spec: Any = importlib.util.spec_from_file_location("mem_agent_preflight_train", entry)
    module = importlib.util.module_from_spec(spec)
    with stage("train", root, shown, exiting=" while train.py was imported: nothing to run"):
        spec.loader.exec_module(module)
    for name in ("parse_args", "create_rollout_manager"):
        if not callable(getattr(module, name, None)):
            raise CheckFailed("train", shown, f"no {name}: train.py no longer builds the run the way the hooks expect")
    return module


def run_step(request: StepRequest, imported: Callable[[], None]) -> tuple[str, list[str]]:
    """train.py's path for rollout 0: what it did, in words, and the stand-ins; raises CheckFailed at the
    first incompatibility. `imported` is called once train.py is imported (the end of its time bound)."""
    root, reads = request.root, KeyReads()
    if request.protocol:
        os.environ["MEM_PROTOCOL"] = request.protocol
    sys.path.insert(0, str(root))
    stand_ins.install(root)
    train = import_train(root, request.entry)
    imported()
    args, parser_stand_ins = host_args(train.parse_args, request.groups, request.host, root, request.router)
    hooks = [path for path in (getattr(args, f"custom_{name}_path", None) for name in HOOKS) if path]
    ray = sys.modules["ray"]  # the in-process stand-in
    with spy_hooks(hooks, reads), stage("manager", root, where(train.create_rollout_manager, root)):
        manager, _ = train.create_rollout_manager(args, None)  # as train.py calls it; pg: no GPU bundles
        parallel = {"dp_size": request.dp_size, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
        ray.get(manager.set_train_parallel_config.remote(parallel))  # what the train actors report
    manager_class = type(manager._instance)
    try:
        with spy_hooks(hooks, reads), stage("generate", root, where(manager_class, root)):
            ranks = [ray.get(getattr(ref, "inner", ref)) for ref in ray.get(manager.generate.remote(0))]
    finally:
        close_all_clients()  # our hooks' HTTP sessions, on the loop the host ran them on
    silent_breaks(reads, root, manager_class)
    # the mean raw reward of the trajectories (each turn row carries its own's): ground truths reach it via the host
    emitted = reads.emitted
    rewards = dict(zip(emitted.get("rollout_ids", []), map(float, emitted.get("raw_reward", [])), strict=True))
    steps = len(ranks[0].get("global_batch_sizes", [])) if ranks else 0
    done = (
        f"{len(rewards)} trajectories, {len(reads.samples)} turn rows, {steps} optimizer step(s) of "
        f"{args.global_batch_size} trajectories over dp={len(ranks)}, mean reward "
        f"{sum(rewards.values()) / max(len(rewards), 1):.2f}, "
        f"{len(launch_words(request.groups))} launch words parsed by the host"
    )
    replaced = stand_ins.REPLACED
    engines = [f"{', '.join(replaced)} (no engines: the given server serves)"] if replaced else []
    ray_stand_in = f"Ray in-process, stubbed modules: {', '.join(stand_ins.STUBBED)}"
    return done, [ray_stand_in, *parser_stand_ins, "the placement groups (None: GPU bundles)", *engines]


def _child_main(connection: Connection, request: StepRequest, parent: int) -> None:
    """The child: import train.py and run the step; every outcome is one message (never a traceback).
    None says that train.py is imported."""
    os.setpgid(0, 0)

    def end_with_parent() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=end_with_parent, name="preflight-parent-watch", daemon=True).start()
    os.dup2(2, 1)
    try:
        with stage("preflight", request.root, "mem_agent.preflight"):  # ours, not the checkout's: still one line
            connection.send(run_step(request, lambda: connection.send(None)))
    except CheckFailed as failure:
        connection.send(failure)
    finally:
        connection.close()


def run_in_child(
    request: StepRequest, import_timeout_s: float, progress: Callable[[str], None]
) -> tuple[str, list[str]]:
    """run_step's report from a child process; a CheckFailed for every way it can go wrong."""
    context = multiprocessing.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=_child_main, args=(writer, request, os.getpid()), name="mem_agent-preflight")
    process.start()
    writer.close()  # the child holds the only writer: its end is an EOF here
    train, started, imported, verdict = shown_path(request.entry, request.root), time.monotonic(), False, None
    try:
        while verdict is None:
            left = import_timeout_s - (time.monotonic() - started)
            if not imported and left <= 0:
                detail = f"importing it did not finish within {import_timeout_s:g} s (--import-timeout): it blocks"
                raise CheckFailed("train", train, f"{detail} at import time (waiting for a cluster, a lock or input?)")
            if not reader.poll(PROGRESS_S if imported else min(PROGRESS_S, import_timeout_s / 2, left)):
                if imported or time.monotonic() - started < import_timeout_s:
                    doing = "running the rollout step of" if imported else "importing"
                    progress(f"preflight: still {doing} {train} after {time.monotonic() - started:.0f} s")
                continue
            try:
                verdict = reader.recv()  # None: train.py is imported
            except EOFError:
                process.join(STOP_WAIT_S)
                detail = f"the process running it ended with exit status {process.exitcode} and no verdict"
                raise CheckFailed("step" if imported else "train", train, detail) from None
            imported = True
    finally:
        reader.close()
        process.join(EXIT_GRACE_S if verdict is not None else 0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # the child's whole group, whatever it is doing
        process.join(STOP_WAIT_S)
        sys.stderr.flush()
    if isinstance(verdict, CheckFailed):
        raise verdict
    return verdict
