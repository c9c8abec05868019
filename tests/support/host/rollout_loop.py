"""The host's rollout loop around our hooks: semaphore, group tasks, filter, over-sampling, abort.

Mirrors slime/rollout/sglang_rollout.py (624b824) and vime/rollout/vllm_rollout.py (file index
052693a, and its newer `abort_mode` path as vime's tests pin it, id 70447660666):

- `RolloutState` is GenerateState (sglang_rollout.py:83-149): the sampling params every task
  copies (:95-105), one semaphore of `server_concurrency x engines` (:94), the deterministic
  per-position seeds (:109-111; `sampling_seed` for SGLang, `seed` for vLLM), the pending group
  tasks, `remaining_batch_size` and `aborted`, plus current vime's two kinds of in-flight
  generations: `cancellable_tasks` (generate functions with `abort_mode = "request"`) and
  `active_server_generations` (the others).
- `generate_and_rm` (sglang_rollout.py:225-289): a finished sample is returned as is; the
  generate call holds the semaphore; an already-aborted state marks the sample ABORTED without
  calling generate; sample hooks run outside it (:264); a list output skips the rm when any
  element is ABORTED (:270-273) and asks the rm only for elements without a reward (:275-279).
- `generate_and_rm_group` (:297-336): a session id per sample, a copy of the params per sample.
- `abort` (:339-371, vime's request/server split): request-mode tasks are cancelled and their
  sample marked ABORTED; if any server-mode generation is in flight, every worker the router
  lists gets `/abort_requests`; then every pending group is awaited (and dropped: no partial
  rollout here).
- `generate_rollout_async` (:374-470): groups are fetched `over_sampling_batch_size` at a time
  while fewer than `rollout_batch_size` are pending; each finished group must hold exactly
  `n_samples_per_prompt` members (:425); the dynamic filter may drop it (:428-436); the loop
  stops at `rollout_batch_size` kept groups, aborts the rest, sorts by first index (:454).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from support.host.args import backend_of, router_url
from support.host.data_source import DataSource
from support.host.filters import MetricGatherer, call_dynamic_filter, should_drop_dynamic_filter_output
from support.host.loader import load_function
from support.host.rm import async_rm, batched_async_rm
from support.host.sample import Sample
from support.host.sample_hooks import apply_rollout_sample_hooks


@dataclass
class RolloutState:
    args: Any
    semaphore: asyncio.Semaphore
    pendings: set[asyncio.Task] = field(default_factory=set)
    remaining_batch_size: int = 0
    aborted: bool = False
    cancellable_tasks: set[asyncio.Task] = field(default_factory=set)
    abort_cancelled: set[asyncio.Task] = field(default_factory=set)
    active_server_generations: int = 0
    server_aborts: int = 0  # how many times abort() reached the engines (tests read it)

    @classmethod
    def for_args(cls, args: Any) -> RolloutState:
        per_engine = args.vllm_server_concurrency if backend_of(args) == "vime" else args.sglang_server_concurrency
        engines = max(1, args.rollout_num_gpus // args.rollout_num_gpus_per_engine)
        return cls(args, asyncio.Semaphore(per_engine * engines))


def sampling_params(args: Any) -> dict[str, Any]:
    """GenerateState.sampling_params (sglang_rollout.py:95-105): the dict a custom generate receives."""
    return {
        "temperature": args.rollout_temperature,
        "top_p": args.rollout_top_p,
        "top_k": args.rollout_top_k,
        "max_new_tokens": args.rollout_max_response_len,
        "stop": args.rollout_stop,
        "stop_token_ids": args.rollout_stop_token_ids,
        "skip_special_tokens": args.rollout_skip_special_tokens,
        "no_stop_trim": True,
        "spaces_between_special_tokens": False,
    }


async def _run_request_abortable(state: RolloutState, sample: Sample, call: Any) -> Any:
    task = asyncio.ensure_future(call)
    state.cancellable_tasks.add(task)
    try:
        return await task
    except asyncio.CancelledError:
        if task not in state.abort_cancelled:
            raise  # a cancellation the abort did not cause goes on up
        sample.status = Sample.Status.ABORTED
        return sample
    finally:
        state.cancellable_tasks.discard(task)


async def _run_server_abort(state: RolloutState, call: Any) -> Any:
    state.active_server_generations += 1
    try:
        return await call
    finally:
        state.active_server_generations -= 1


async def generate_and_rm(
    state: RolloutState, sample: Sample, params: dict[str, Any], evaluation: bool = False
) -> Sample | list[Sample]:
    args = state.args
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        assert args.group_rm or sample.reward is not None
        return sample
    async with state.semaphore:
        if state.aborted:
            sample.status = Sample.Status.ABORTED
            return sample
        generate = load_function(sample.generate_function_path or args.custom_generate_function_path)
        if "evaluation" in inspect.signature(generate).parameters:
            call = generate(args, sample, params, evaluation=evaluation)
        else:
            call = generate(args, sample, params)
        if getattr(generate, "abort_mode", None) == "request":
            output = await _run_request_abortable(state, sample, call)
        else:
            output = await _run_server_abort(state, call)
    output = await apply_rollout_sample_hooks(args, output, evaluation=evaluation)
    if args.group_rm:
        return output
    if isinstance(output, list):
        if not any(item.status == Sample.Status.ABORTED for item in output):
            needing = [item for item in output if item.reward is None]
            for item, value in zip(needing, await batched_async_rm(args, needing), strict=True):
                item.reward = value
        return output
    if output.status != Sample.Status.ABORTED and output.reward is None:
        output.reward = await async_rm(args, output)
    return output


async def generate_and_rm_group(
    state: RolloutState, group: list[Sample], params: dict[str, Any], evaluation: bool = False
) -> list[Any]:
    if state.aborted:
        return group
    tasks = []
    engine = "vllm" if backend_of(state.args) == "vime" else "sglang"
    seed_key = "seed" if engine == "vllm" else "sampling_seed"
    deterministic = getattr(state.args, f"{engine}_enable_deterministic_inference", False)
    for position, sample in enumerate(group):
        sample.session_id = sample.session_id or str(uuid.uuid4())
        copy_params = dict(params)
        if deterministic:
            copy_params[seed_key] = state.args.rollout_seed + position
        tasks.append(asyncio.ensure_future(generate_and_rm(state, sample, copy_params, evaluation)))
    return list(await asyncio.gather(*tasks))


async def _server_abort(state: RolloutState) -> None:
    state.server_aborts += 1
    async with aiohttp.ClientSession(trust_env=False) as session:
        async with session.get(f"{router_url(state.args)}/workers") as response:
            workers = [worker["url"] for worker in (await response.json())["workers"]]
        for url in workers:
            async with session.post(f"{url}/abort_requests", json={}) as response:
                response.raise_for_status()


async def abort(state: RolloutState) -> None:
    assert not state.aborted
    state.aborted = True
    for task in list(state.cancellable_tasks):
        state.abort_cancelled.add(task)
        task.cancel()
    if state.active_server_generations:
        await _server_abort(state)
    while state.pendings:
        _, state.pendings = await asyncio.wait(state.pendings, return_when=asyncio.FIRST_COMPLETED)


@dataclass
class RolloutOutput:
    samples: list[list[Any]]
    metrics: dict[str, Any]
    all_groups: list[list[Any]]
    seconds: float


async def generate_rollout_async(state: RolloutState, data_source: DataSource) -> RolloutOutput:
    args, started = state.args, time.monotonic()
    dynamic_filter = load_function(args.dynamic_sampling_filter_path) if args.dynamic_sampling_filter_path else None
    gatherer, target = MetricGatherer(), args.rollout_batch_size
    data: list[list[Any]] = []
    all_data: list[list[Any]] = []
    while len(data) < target:
        while state.remaining_batch_size < target:
            groups = data_source.get_samples(args.over_sampling_batch_size)
            for group in groups:
                task = asyncio.ensure_future(generate_and_rm_group(state, group, sampling_params(args)))
                state.pendings.add(task)
            state.remaining_batch_size += len(groups)
        done, state.pendings = await asyncio.wait(state.pendings, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            group = task.result()
            assert len(group) == args.n_samples_per_prompt, f"group of {len(group)} for n={args.n_samples_per_prompt}"
            all_data.append(group)
            output = call_dynamic_filter(dynamic_filter, args, group)
            if should_drop_dynamic_filter_output(
                output, remaining_batch_size=state.remaining_batch_size, target_data_size=target
            ):
                gatherer.on_dynamic_filter_drop(output.reason)
                state.remaining_batch_size -= 1
                continue
            if len(data) < target:
                data.append(group)
    await abort(state)
    assert len(data) == args.rollout_batch_size, f"Got {len(data)} groups, expected {args.rollout_batch_size}"
    data.sort(key=_first_index)
    return RolloutOutput(data, gatherer.collect(), sorted(all_data, key=_first_index), time.monotonic() - started)


def _first_index(group: list[Any]) -> int:
    first = group[0][0] if isinstance(group[0], list) else group[0]
    return first.index
