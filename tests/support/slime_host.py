"""A test double of the trainer host (slime / vime), which cannot be installed from a registry.

It mirrors, field for field and rule for rule, what our hooks touch in THUDM/slime at HEAD
(624b824, 2026-08), read in: `slime/utils/types.py` (Sample), `slime/rollout/data_source.py`
(group_index and index assignment), `slime/rollout/sglang_rollout.py` (GenerateState's sampling
params, generate_and_rm, generate_and_rm_group), `slime/rollout/rm_hub/__init__.py`
(batched_async_rm with a custom rm), `slime/observability/rollout_data_utils.py`
(validate_rollout_id_annotated), `slime/ray/rollout.py` (_post_process_rewards,
_convert_samples_to_train_data, _split_train_data_by_dp) and `slime/utils/dp_schedule.py`
(build_dp_schedule's step split). vime (vllm-project/vime, `vime/rollout/vllm_rollout.py`,
`vime/ray/rollout.py`) has the same Sample and hook calls; its older train-data consumer counts
samples, trims a step's rows to a multiple of the global batch size and copies a fixed list of
keys per DP rank, without rollout_ids. Nothing here is our code under test: it is the contract our
hooks must satisfy, written down.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import inspect
import itertools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass
class Sample:
    """slime.utils.types.Sample: every field, in order, and the two methods hooks may call."""

    group_index: int | None = None
    index: int | None = None
    rollout_id: int | None = None
    prompt: str | list[dict[str, str]] = ""
    tokens: list[int] = field(default_factory=list)
    multimodal_inputs: dict[str, Any] | None = None
    multimodal_train_inputs: dict[str, Any] | None = None
    multimodal_train_input_id: str | None = None
    apply_chat_template_kwargs: dict = field(default_factory=dict)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    weight_versions: list[str] = field(default_factory=list)
    rollout_log_probs: list[float] | None = None
    rollout_top_p_token_ids: list[int] | None = None
    rollout_top_p_token_offsets: list[int] | None = None
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
    spec_info: dict = field(default_factory=dict)  # SpecInfo upstream; no hook reads it
    prefix_cache_info: dict = field(default_factory=dict)  # PrefixCacheInfo upstream; no hook reads it

    def get_reward_value(self, args: argparse.Namespace) -> float:
        return self.reward if not args.reward_key else self.reward[args.reward_key]

    @property
    def effective_response_length(self) -> int:
        return sum(self.loss_mask) if self.loss_mask is not None else self.response_length


def host_args(
    router_url: str, *, backend: str = "vime", hf_checkpoint: str, n_samples_per_prompt: int, **overrides: Any
) -> argparse.Namespace:
    """The trainer's parsed flags that our hooks and the host's rollout and convert code read (real names)."""
    host, port = router_url.removeprefix("http://").rsplit(":", 1)
    args = argparse.Namespace(
        hf_checkpoint=hf_checkpoint,
        n_samples_per_prompt=n_samples_per_prompt,
        rollout_batch_size=1,
        global_batch_size=n_samples_per_prompt,
        rollout_temperature=1.0,
        rollout_top_p=1.0,
        rollout_top_k=-1,
        rollout_max_response_len=1024,
        rollout_stop=None,
        rollout_stop_token_ids=None,
        rollout_skip_special_tokens=False,
        rollout_seed=42,
        rollout_num_gpus=1,
        rollout_num_gpus_per_engine=1,
        group_rm=False,
        partial_rollout=False,
        mask_offpolicy_in_partial_rollout=False,
        reward_key=None,
        eval_reward_key=None,
        advantage_estimator="grpo",
        rewards_normalization=True,
        grpo_std_normalization=True,
        log_passrate=False,
        apply_chat_template=False,
        disable_rollout_trim_samples=False,
        custom_generate_function_path="mem_agent.rollout.generate",
        custom_rm_path="mem_agent.rollout.reward",
        custom_reward_post_process_path="mem_agent.rollout.reward_post_process",
        custom_convert_samples_to_train_data_path="mem_agent.custom_convert.convert_samples_to_train_data",
    )
    if backend == "vime":
        args.vllm_router_ip, args.vllm_router_port, args.vllm_server_concurrency = host, int(port), 64
        args.vllm_enable_deterministic_inference = False
    else:
        args.sglang_router_ip, args.sglang_router_port, args.sglang_server_concurrency = host, int(port), 64
        args.sglang_enable_deterministic_inference = False
    for name, value in overrides.items():
        setattr(args, name, value)
    return args


def data_source_groups(rows: list[dict], n_samples_per_prompt: int, first_index: int = 0) -> list[list[Sample]]:
    """RolloutDataSource.get_samples: n deep copies per prompt; group_index per prompt, index per copy."""
    groups, index = [], first_index
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
    """GenerateState.sampling_params: the dict a custom generate receives (a copy per sample)."""
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


Generate = Callable[..., Awaitable[Any]]
Reward = Callable[..., Awaitable[Any]]


async def generate_and_rm(args, sample: Sample, params: dict, generate: Generate, rm: Reward, evaluation: bool):
    """sglang_rollout.generate_and_rm with a custom generate and a custom rm (batched_async_rm calls it)."""
    if args.partial_rollout and args.mask_offpolicy_in_partial_rollout and sample.response_length > 0:
        sample.loss_mask = [0] * sample.response_length
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        return sample  # a resumed sample that already finished
    if "evaluation" in inspect.signature(generate).parameters:
        output = await generate(args, sample, params, evaluation=evaluation)
    else:
        output = await generate(args, sample, params)
    if args.group_rm:
        return output
    if isinstance(output, list):
        if any(s.status == Sample.Status.ABORTED for s in output):
            return output  # no reward model for a list with an aborted sibling
        needing = [s for s in output if s.reward is None]
        for s, value in zip(needing, await rm(args, needing), strict=True):  # vime zips strictly
            s.reward = value
        return output
    if output.status == Sample.Status.ABORTED:
        return output
    if output.reward is None:
        output.reward = await rm(args, output)
    return output


async def generate_and_rm_group(args, group: list[Sample], generate: Generate, rm: Reward, evaluation: bool = False):
    """sglang_rollout.generate_and_rm_group: one task per sample, the group's shape preserved."""
    for sample in group:
        sample.session_id = sample.session_id or str(uuid.uuid4())
    tasks = []
    for position, sample in enumerate(group):
        params = sampling_params(args)
        if getattr(args, "sglang_enable_deterministic_inference", False):
            params["sampling_seed"] = args.rollout_seed + position
        if getattr(args, "vllm_enable_deterministic_inference", False):
            params["seed"] = args.rollout_seed + position
        tasks.append(generate_and_rm(args, sample, params, generate, rm, evaluation))
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


def trim_rows(rows: list[Sample], global_batch_size: int) -> list[Sample]:
    """vime's older _get_rollout_data: keep a multiple of global_batch_size rows (samples, not rollouts)."""
    keep = len(rows) // global_batch_size * global_batch_size
    assert keep, f"not enough samples {len(rows)} for global_batch_size {global_batch_size}"
    return rows[:keep]


def host_convert(args, samples: list[Sample], post_process: Callable) -> dict[str, list]:
    """slime HEAD's own _convert_samples_to_train_data, used when only a reward post-process hook is set."""
    raw_rewards, rewards = post_process(args, samples)
    assert len(raw_rewards) == len(samples) and len(rewards) == len(samples)
    rollout_ids = [s.rollout_id if s.rollout_id is not None else s.index for s in samples]
    loss_masks = []
    for sample in samples:
        mask = sample.loss_mask if sample.loss_mask is not None else [1] * sample.response_length
        assert len(mask) == sample.response_length, "loss mask length != response length"
        loss_masks.append([0] * sample.response_length if sample.remove_sample else mask)
    totals: dict[Any, int] = {}
    for rid, mask in zip(rollout_ids, loss_masks, strict=True):
        totals[rid] = totals.get(rid, 0) + sum(mask)
    data = {
        "tokens": [s.tokens for s in samples],
        "response_lengths": [s.response_length for s in samples],
        "rewards": rewards,
        "raw_reward": raw_rewards,
        "truncated": [int(s.status == Sample.Status.TRUNCATED) for s in samples],
        "sample_indices": [s.index for s in samples],
        "rollout_ids": rollout_ids,
        "loss_masks": loss_masks,
        "rollout_mask_sums": [totals[rid] for rid in rollout_ids],
    }
    if samples[0].rollout_log_probs is not None:
        data["rollout_log_probs"] = [s.rollout_log_probs for s in samples]
    return data


# The keys each DP rank receives, per row; anything else in the dict is never read.
SLIME_ROW_KEYS = ("tokens", "response_lengths", "rewards", "truncated", "loss_masks", "round_number")
SLIME_ROW_KEYS += ("sample_indices", "rollout_ids", "rollout_mask_sums", "rollout_log_probs", "teacher_log_probs")
VIME_ROW_KEYS = ("tokens", "response_lengths", "rewards", "truncated", "loss_masks", "round_number")
VIME_ROW_KEYS += ("sample_indices", "rollout_log_probs", "rollout_routed_experts", "teacher_log_probs")


def split_for_dp(data: dict[str, list], dp_size: int, *, rollout_counted: bool) -> list[dict[str, list]]:
    """_split_train_data_by_dp's key handling: per-row keys from a fixed list, raw_reward whole."""
    keys = SLIME_ROW_KEYS if rollout_counted else VIME_ROW_KEYS
    rows = len(data["tokens"])
    ranks = []
    for rank in range(dp_size):
        partition = list(range(rank, rows, dp_size))
        part = {key: [data[key][i] for i in partition] for key in keys if key in data}
        part["raw_reward"] = data["raw_reward"]
        ranks.append(part)
    return ranks


def check_train_data(data: dict[str, list], *, rollout_counted: bool) -> None:
    """The train-data consumer's contract (the split, build_dp_schedule, tensorising, the loss reducer)."""
    rows = len(data["tokens"])
    for key in (*SLIME_ROW_KEYS, "raw_reward"):
        if key in data:
            assert len(data[key]) == rows, f"{key} has {len(data[key])} entries for {rows} rows"
    for i in range(rows):
        length = data["response_lengths"][i]
        assert 0 < length <= len(data["tokens"][i]), f"row {i}: response_length {length}"
        assert len(data["loss_masks"][i]) == length, f"row {i}: loss mask length"
        assert set(data["loss_masks"][i]) <= {0, 1}
        assert all(type(t) is int for t in data["tokens"][i]), f"row {i}: tokens must be python ints"
        if "rollout_log_probs" in data:
            assert len(data["rollout_log_probs"][i]) == length, f"row {i}: rollout_log_probs length"
        assert isinstance(data["rewards"][i], float)
    if rollout_counted:
        assert None not in data["rollout_ids"]
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
