"""A test double of the trainer host (slime / vime), which cannot be installed from a registry.

It mirrors, field for field and rule for rule, what our hooks touch in slime at HEAD (read in
THUDM/slime: `slime/utils/types.py` Sample, `slime/rollout/data_source.py` group and index
assignment, `slime/rollout/sglang_rollout.py` generate_and_rm / generate_and_rm_group,
`slime/observability/rollout_data_utils.py` validate_rollout_id_annotated, `slime/ray/rollout.py`
_convert_samples_to_train_data / _split_train_data_by_dp, `slime/utils/dp_schedule.py`
build_dp_schedule). vime's Sample and hook calls are the same; its train-data consumer is the
older sample-counted one (no rollout_ids). Nothing here is our code under test: it is the
contract our hooks must satisfy, written down.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass
class Sample:
    """slime.utils.types.Sample (the fields a custom generate hook reads or writes)."""

    group_index: int | None = None
    index: int | None = None
    rollout_id: int | None = None
    prompt: str | list[dict[str, str]] = ""
    tokens: list[int] = field(default_factory=list)
    multimodal_inputs: dict[str, Any] | None = None
    multimodal_train_inputs: dict[str, Any] | None = None
    apply_chat_template_kwargs: dict = field(default_factory=dict)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    weight_versions: list[str] = field(default_factory=list)
    rollout_log_probs: list[float] | None = None
    rollout_routed_experts: Any = None
    remove_sample: bool = False
    teacher_log_probs: list[float] | None = None

    class Status(Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    status: Status = Status.PENDING
    metadata: dict = field(default_factory=dict)
    generate_function_path: str | None = None
    custom_rm_path: str | None = None
    train_metadata: dict | None = None
    session_id: str | None = None
    non_generation_time: float = 0.0


def host_args(
    router_url: str, *, backend: str = "vime", hf_checkpoint: str, n_samples_per_prompt: int
) -> argparse.Namespace:
    """The attributes of the trainer's `args` that our hooks and the host's rollout loop read."""
    host, port = router_url.removeprefix("http://").rsplit(":", 1)
    args = argparse.Namespace(
        hf_checkpoint=hf_checkpoint,
        n_samples_per_prompt=n_samples_per_prompt,
        rollout_temperature=1.0,
        rollout_top_p=1.0,
        rollout_top_k=-1,
        rollout_max_response_len=1024,
        rollout_num_gpus=1,
        rollout_num_gpus_per_engine=1,
        group_rm=False,
        partial_rollout=False,
        custom_rm_path="mem_agent.rollout.reward",
    )
    if backend == "vime":
        args.vllm_router_ip, args.vllm_router_port, args.vllm_server_concurrency = host, int(port), 64
    else:
        args.sglang_router_ip, args.sglang_router_port, args.sglang_server_concurrency = host, int(port), 64
    return args


def data_source_groups(rows: list[dict], n_samples_per_prompt: int) -> list[list[Sample]]:
    """RolloutDataSource.get_samples: n deep copies per prompt, group_index per prompt, index per copy."""
    groups, index = [], 0
    for group_index, row in enumerate(rows):
        prompt = Sample(prompt=row["prompt"], label=row["label"], metadata=copy.deepcopy(row["metadata"]))
        group = []
        for _ in range(n_samples_per_prompt):
            sample = copy.deepcopy(prompt)
            sample.group_index, sample.index = group_index, index
            index += 1
            group.append(sample)
        groups.append(group)
    return groups


def sampling_params(args: argparse.Namespace) -> dict[str, Any]:
    """GenerateState.sampling_params (the dict handed to a custom generate)."""
    return {
        "temperature": args.rollout_temperature,
        "top_p": args.rollout_top_p,
        "top_k": args.rollout_top_k,
        "max_new_tokens": args.rollout_max_response_len,
        "stop": None,
        "stop_token_ids": None,
        "skip_special_tokens": True,
        "no_stop_trim": True,
        "spaces_between_special_tokens": False,
    }


Generate = Callable[..., Awaitable[Any]]
Reward = Callable[..., Awaitable[Any]]


async def generate_and_rm(args, sample: Sample, params: dict, generate: Generate, rm: Reward, evaluation: bool):
    """sglang_rollout.generate_and_rm for a custom generate and custom rm, group_rm off."""
    output = await generate(args, sample, params, evaluation=evaluation)
    if isinstance(output, list):
        if any(s.status == Sample.Status.ABORTED for s in output):
            return output
        needing = [s for s in output if s.reward is None]
        for s, value in zip(needing, await rm(args, needing), strict=True):
            s.reward = value
        return output
    if output.status == Sample.Status.ABORTED:
        return output
    if output.reward is None:
        output.reward = await rm(args, output)
    return output


async def generate_and_rm_group(args, group: list[Sample], generate: Generate, rm: Reward, evaluation: bool = False):
    for sample in group:
        sample.session_id = sample.session_id or str(uuid.uuid4())
    params = sampling_params(args)
    tasks = [generate_and_rm(args, sample, dict(params), generate, rm, evaluation) for sample in group]
    return list(await asyncio.gather(*tasks))


def validate_rollout_id_annotated(node: Any, depth: int = 0) -> None:
    """rollout_data_utils.validate_rollout_id_annotated: fan-out siblings share a non-None rollout_id."""
    if isinstance(node, Sample):
        return
    assert isinstance(node, list), f"unexpected rollout output node type: {type(node).__name__}"
    if node and isinstance(node[0], Sample):
        if depth >= 2 and len(node) > 1:
            ids = [sample.rollout_id for sample in node]
            assert None not in ids, f"rollout_id unset on a sibling: {ids}"
            assert len(set(ids)) == 1, f"siblings must share rollout_id, got {ids}"
        return
    for item in node:
        validate_rollout_id_annotated(item, depth + 1)


def flatten_rollout(data: list) -> list[Sample]:
    """RolloutManager._get_rollout_data: validate, then flatten nested lists."""
    validate_rollout_id_annotated(data)
    while isinstance(data[0], list):
        data = list(itertools.chain.from_iterable(data))
    return data


PER_ROW_KEYS = ("tokens", "response_lengths", "rewards", "truncated", "loss_masks", "sample_indices")


def check_train_data(data: dict[str, list], *, rollout_counted: bool) -> None:
    """The train-data consumer's contract (_split_train_data_by_dp, build_dp_schedule, the loss).

    `rollout_counted`: slime HEAD (steps cut by rollout_ids, per-rollout loss denominators);
    otherwise the sample-counted interface of slime v0.2.x and vime.
    """
    rows = len(data["tokens"])
    for key in (*PER_ROW_KEYS, "raw_reward", "rollout_log_probs"):
        if key in data:
            assert len(data[key]) == rows, f"{key} has {len(data[key])} entries for {rows} rows"
    for i in range(rows):
        length = data["response_lengths"][i]
        assert 0 < length <= len(data["tokens"][i]), f"row {i}: response_length {length}"
        assert len(data["loss_masks"][i]) == length, f"row {i}: loss mask length"
        assert set(data["loss_masks"][i]) <= {0, 1}
        assert all(isinstance(t, int) for t in data["tokens"][i])
        if "rollout_log_probs" in data:
            assert len(data["rollout_log_probs"][i]) == length, f"row {i}: rollout_log_probs length"
        assert isinstance(data["rewards"][i], float)
    if rollout_counted:
        assert len(data["rollout_ids"]) == rows and None not in data["rollout_ids"]
        totals: dict[Any, int] = {}
        for rid, mask in zip(data["rollout_ids"], data["loss_masks"], strict=True):
            totals[rid] = totals.get(rid, 0) + sum(mask)
        assert data["rollout_mask_sums"] == [totals[rid] for rid in data["rollout_ids"]]


def steps_by_rollout(data: dict[str, list], global_batch_size: int) -> list[list[int]]:
    """build_dp_schedule's step split: rows grouped by rollout id, global_batch_size rollouts a step."""
    by_rollout: dict[Any, list[int]] = {}
    for position, rid in enumerate(data["rollout_ids"]):
        by_rollout.setdefault(rid, []).append(position)
    rollout_ids = list(by_rollout)
    num_steps = len(rollout_ids) // global_batch_size
    assert num_steps >= 1, "need at least one rollout per step"
    return [
        [pos for rid in rollout_ids[s * global_batch_size : (s + 1) * global_batch_size] for pos in by_rollout[rid]]
        for s in range(num_steps)
    ]
