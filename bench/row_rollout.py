"""Training rows exactly as our hooks hand them to the trainer, from a real rollout step.

The host trainer (slime / vime) cannot be installed from a registry, so the rows come from the
same host double the tests use (tests/support/host): its data source makes n copies of each
prompt, its group task runs `mem_agent.rollout.generate` and the custom rm per sample
concurrently, and then we call `reward_post_process` and `convert_samples_to_train_data` on the
flat list, as the host does. Only `host_args`, `DataSource`, `RolloutState`, `sampling_params`
and `generate_and_rm_group` are used from it (host_double), so a rewrite of the double touches
this file at most in those names.

The inference side is real: whatever router URL is given (vllm-router in front of vLLM's CPU
build, speaking vime's `/inference/v1/generate`; or the SGLang shim for slime's wire format).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent import rollout
from mem_agent.custom_convert import convert_samples_to_train_data
from mem_agent.data.contexts import render_context
from mem_agent.data.qa_rows import parse_row
from mem_agent.data.train_rows import output_row
from mem_agent.host.clients import close_clients
from mem_agent.host.train_batch import flatten
from mem_agent.host.trajectory_rows import info_of

TESTS_DIR = Path(__file__).resolve().parents[1] / "tests"
# Small chunks and budgets: a ~450-token synthetic document becomes four memory turns and a final
# turn, so every row kind appears several times per trajectory in seconds on a CPU server.
SMALL_AGENT = {"MEM_CHUNK_TOKENS": "128", "MEM_MAX_MEMORY": "24", "MEM_MAX_FINAL": "24", "MEM_MAX_RETRIES": "0"}


@dataclass(frozen=True)
class TrainRow:
    """One row of the train-data dict, with what our metadata says about the turn it came from."""

    mode: str  # memagent | rememr1
    kind: str  # memory | final | none (a trajectory that produced no turn)
    rollout_id: int
    step: int
    tokens: list[int]
    response_length: int
    loss_mask: list[int]
    rollout_log_probs: list[float]


@dataclass(frozen=True)
class HostDouble:
    """The parts of tests/support/host a rollout step needs."""

    host_args: Any
    DataSource: Any
    RolloutState: Any
    sampling_params: Any
    generate_and_rm_group: Any


def host_double() -> HostDouble:
    """tests/support/host, imported as `support.host.*` (one module object under pytest too)."""
    if str(TESTS_DIR) not in sys.path:
        sys.path.append(str(TESTS_DIR))
    from support.host import args, data_source, rollout_loop

    return HostDouble(
        args.host_args,
        data_source.DataSource,
        rollout_loop.RolloutState,
        rollout_loop.sampling_params,
        rollout_loop.generate_and_rm_group,
    )


def trainer_rows(qa_rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """HotpotQA-layout rows -> prepare_data's training rows (question as prompt, documents in metadata)."""
    rows = []
    for position, raw in enumerate(qa_rows):
        row = parse_row(raw, f"row {position}", position)
        rows.append(output_row(row, render_context(row.paragraphs), len(row.paragraphs)))
    return rows


@contextlib.contextmanager
def agent_env(mode: str, overrides: Mapping[str, str] | None = None) -> Iterator[None]:
    """MEM_* for one rollout (the hooks read them once per process), restored afterwards."""
    values = {**SMALL_AGENT, **(overrides or {}), "MEM_MODE": mode}
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    rollout.reset_caches()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        rollout.reset_caches()


@dataclass(frozen=True)
class RolloutStep:
    """A rollout step's flat samples, the post-process hook's output and the convert's dict."""

    args: Any
    samples: list[Any]
    advantages: list[float]
    train_data: dict[str, list[Any]]

    def rows(self, mode: str) -> list[TrainRow]:
        data = self.train_data
        found = []
        for position, sample in enumerate(self.samples):
            info = info_of(sample)
            found.append(
                TrainRow(
                    mode=mode,
                    kind=str(info.get("turn", "none")),
                    rollout_id=int(data["rollout_ids"][position]),
                    step=int(info.get("step", -1)),
                    tokens=list(data["tokens"][position]),
                    response_length=int(data["response_lengths"][position]),
                    loss_mask=list(data["loss_masks"][position]),
                    rollout_log_probs=list(data["rollout_log_probs"][position]),
                )
            )
        return found


def run_rollout_step(
    router_url: str,
    model_path: Path,
    prompts: Sequence[Mapping[str, Any]],
    *,
    n_samples: int,
    backend: str = "vime",
) -> RolloutStep:
    """One host rollout step through the hooks, under whatever MEM_* the caller has set."""
    host = host_double()
    args = host.host_args(router_url, backend=backend, hf_checkpoint=str(model_path), n_samples_per_prompt=n_samples)
    groups = host.DataSource([dict(row) for row in prompts], n_samples).get_samples(len(prompts))

    async def step() -> list[Any]:
        try:
            state, params = host.RolloutState.for_args(args), host.sampling_params(args)
            return list(await asyncio.gather(*(host.generate_and_rm_group(state, group, params) for group in groups)))
        finally:
            await close_clients()

    samples = flatten(asyncio.run(step()))
    _, advantages = rollout.reward_post_process(args, samples)
    return RolloutStep(args, samples, advantages, convert_samples_to_train_data(args, samples))


def rollout_rows(
    router_url: str,
    model_path: Path,
    qa_rows: Sequence[Mapping[str, Any]],
    *,
    mode: str,
    n_samples: int,
    backend: str = "vime",
) -> list[TrainRow]:
    """The train rows of one rollout step in `mode` (memagent | rememr1), with the small agent settings."""
    with agent_env(mode):
        step = run_rollout_step(router_url, model_path, trainer_rows(qa_rows), n_samples=n_samples, backend=backend)
    if step.advantages != step.train_data["rewards"]:
        raise AssertionError("reward_post_process and the convert gave rows different advantages")
    return step.rows(mode)
