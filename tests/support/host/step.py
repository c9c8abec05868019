"""One whole training rollout step of the host, in the order slime HEAD and current vime run it.

RolloutManager.generate (slime/ray/rollout.py:492-511; vime's manager with its BatchBuilder):
the rollout function's groups, the rollout-id contract and flattening (:583-606),
`log_rollout_data` over the flat samples (:506), the convert (:510) and the DP split (:511).
`StepResult` keeps every stage so a test can check each from its side.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from support.host.args import parallel_config
from support.host.data_source import DataSource
from support.host.dp_schedule import DpSchedule
from support.host.metrics import log_rollout_data
from support.host.rollout_loop import RolloutOutput, RolloutState, generate_rollout_async
from support.host.sample import Sample
from support.host.train_data import convert, flatten_rollout, split_by_dp


@dataclass
class StepResult:
    output: RolloutOutput
    samples: list[Sample]
    log: dict[str, Any] | None  # None: the custom log function asked the host to skip its own
    data: dict[str, list[Any]]
    ranks: list[dict[str, Any]]
    schedule: DpSchedule
    state: RolloutState


async def run_rollout(
    args: Any, source: DataSource, closers: tuple[Any, ...] = ()
) -> tuple[RolloutOutput, RolloutState]:
    """The rollout function alone, in a fresh event loop's task (close our clients before it ends)."""
    state = RolloutState.for_args(args)
    try:
        return await generate_rollout_async(state, source), state
    finally:
        for close in closers:
            await close()


def run_step(
    args: Any, source: DataSource, *, dp_size: int = 1, closers: tuple[Any, ...] = (), rollout_id: int = 0
) -> StepResult:
    output, state = asyncio.run(run_rollout(args, source, closers))
    samples = flatten_rollout(output.samples)
    log = log_rollout_data(rollout_id, args, samples, output.metrics, output.seconds)
    data = convert(args, samples)
    ranks, schedule = split_by_dp(args, data, parallel_config(dp_size))
    return StepResult(output, samples, log, data, ranks, schedule, state)
