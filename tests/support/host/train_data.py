"""From the rollout's nested output to each DP rank's training data, as the host does it.

- `flatten_rollout`: validate_rollout_id_annotated (slime/observability/rollout_data_utils.py:92-121)
  then flatten (slime/ray/rollout.py:601-604): a list of Samples at depth >= 2 with more than one
  element must share one non-None `rollout_id`.
- `convert`: `--custom-convert-samples-to-train-data-path` when set (rollout.py:639-640), else the
  host's own convert (:642-752; vime/data/batch_builder.py `BatchBuilder.convert` alike): the
  reward post-process hook or the built-in group normalisation, a fresh id no other row uses for
  each missing `rollout_id` (:647-655), loss masks (`remove_sample` zeroes one), and
  `rollout_mask_sums` per rollout (:688-700).
- `split_by_dp`: slime's `_split_train_data_by_dp` (:757-824) and current vime's
  `BatchBuilder.split_by_dp`: `rollout_ids` is required (a KeyError otherwise: steps are cut by
  rollout), the per-row keys each host forwards (others, `metadata` included, never reach a
  rank), `raw_reward` and `total_lengths` whole, the schedule fields, then tensorised
  (rollout_data_utils.py:30-52: token ids as int64, masks int32, logprobs float32,
  `rollout_mask_sums` float32).
- `token_weights`: the loss reducer's weight of each response token of one step
  (slime/backends/megatron_utils/cp_utils.py:47-124 and loss.py:1317-1366): with
  `--calculate-per-token-loss`, 1 / (all masked tokens of the step, each fully masked row counting
  1); without it, 1 / (rows' rollout_mask_sums x global batch size), i.e. every trajectory weighs
  the same whatever its length or turn count.
- `check_train_data`: the row invariants the trainer's consumer relies on (aligned lengths, 0/1
  masks, Python ints, per-rollout mask sums), for tests to assert on any train-data dict.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Hashable
from typing import Any

import torch

from support.host.args import backend_of
from support.host.dp_schedule import DpSchedule, build_dp_schedule
from support.host.loader import load_function
from support.host.sample import Sample

SLIME_ROW_KEYS = ("tokens", "multimodal_train_inputs", "response_lengths", "rewards", "truncated", "loss_masks")
SLIME_ROW_KEYS += ("round_number", "sample_indices", "rollout_ids", "rollout_mask_sums", "rollout_log_probs")
SLIME_ROW_KEYS += ("rollout_top_p_token_ids", "rollout_top_p_token_offsets", "rollout_routed_experts")
SLIME_ROW_KEYS += ("source_names", "prompt", "teacher_log_probs")
VIME_ROW_KEYS = (*SLIME_ROW_KEYS[:11], "rollout_topk_token_ids", "rollout_topk_log_probs", *SLIME_ROW_KEYS[11:13])
VIME_ROW_KEYS += ("rollout_top_p_log_probs", *SLIME_ROW_KEYS[13:])
_DTYPES = {"tokens": torch.long, "loss_masks": torch.int, "rollout_log_probs": torch.float32}


def validate_rollout_id_annotated(node: Any, depth: int = 0) -> None:
    # A Sample is any dataclass here (upstream: isinstance of its own Sample), so that a fake
    # checkout with a Sample of its own (tests/support/fake_trainer.py) goes through.
    if dataclasses.is_dataclass(node):
        return
    assert isinstance(node, list), f"unexpected rollout output node type: {type(node).__name__}"
    if node and dataclasses.is_dataclass(node[0]):
        if depth >= 2 and len(node) > 1:
            ids = [sample.rollout_id for sample in node]
            assert None not in ids, f"Compact rollout returned {len(node)} samples but rollout_id is unset: {ids}"
            assert len(set(ids)) == 1, f"Sibling samples from one compact rollout must share rollout_id; got {ids}"
        return
    for item in node:
        validate_rollout_id_annotated(item, depth + 1)


def flatten_rollout(data: list[Any]) -> list[Sample]:
    validate_rollout_id_annotated(data)
    while isinstance(data[0], list):
        data = list(itertools.chain.from_iterable(data))
    return data


def _builtin_post_process(args: Any, samples: list[Sample]) -> tuple[list[Any], list[float]]:
    raw = [sample.get_reward_value(args) for sample in samples]
    if args.advantage_estimator not in ("grpo", "gspo", "cispo", "reinforce_plus_plus_baseline"):
        return raw, raw
    if not args.rewards_normalization:
        return raw, raw
    values = torch.tensor(raw, dtype=torch.float)
    if values.shape[-1] == args.n_samples_per_prompt * args.rollout_batch_size:
        values = values.reshape(-1, args.n_samples_per_prompt)
    else:
        values = values.view(-1, values.shape[-1])
    values = values - values.mean(dim=-1, keepdim=True)
    if args.advantage_estimator in ("grpo", "gspo", "cispo") and args.grpo_std_normalization:
        values = values / (values.std(dim=-1, keepdim=True) + 1e-6)
    return raw, values.flatten().tolist()


def fresh_rollout_ids(samples: list[Sample]) -> list[Hashable]:
    ids: list[Hashable] = [sample.rollout_id for sample in samples]
    taken, fresh = {rid for rid in ids if rid is not None}, 0
    for position, rid in enumerate(ids):
        if rid is None:
            while fresh in taken:
                fresh += 1
            ids[position], taken = fresh, taken | {fresh}
    return ids


def convert(args: Any, samples: list[Sample]) -> dict[str, list[Any]]:
    if args.custom_convert_samples_to_train_data_path is not None:
        return load_function(args.custom_convert_samples_to_train_data_path)(args, samples)
    if args.custom_reward_post_process_path is not None:
        raw, rewards = load_function(args.custom_reward_post_process_path)(args, samples)
    else:
        raw, rewards = _builtin_post_process(args, samples)
    assert len(raw) == len(samples) and len(rewards) == len(samples)
    ids = fresh_rollout_ids(samples)
    masks = []
    for sample in samples:
        mask = sample.loss_mask if sample.loss_mask is not None else [1] * sample.response_length
        assert len(mask) == sample.response_length, f"loss mask length {len(mask)} != {sample.response_length}"
        masks.append([0] * sample.response_length if sample.remove_sample else mask)
    totals: dict[Hashable, int] = {}
    for rid, mask in zip(ids, masks, strict=True):
        totals[rid] = totals.get(rid, 0) + sum(mask)
    data: dict[str, list[Any]] = {
        "tokens": [sample.tokens for sample in samples],
        "response_lengths": [sample.response_length for sample in samples],
        "rewards": rewards,
        "raw_reward": raw,
        "truncated": [int(sample.status == Sample.Status.TRUNCATED) for sample in samples],
        "sample_indices": [sample.index for sample in samples],
        "rollout_ids": ids,
        "loss_masks": masks,
        "rollout_mask_sums": [totals[rid] for rid in ids],
    }
    if samples[0].rollout_log_probs is not None:
        data["rollout_log_probs"] = [sample.rollout_log_probs for sample in samples]
    return data


def _tensorise(rank: dict[str, Any]) -> None:
    for key, dtype in _DTYPES.items():
        if key in rank:
            rank[key] = [torch.as_tensor(value, dtype=dtype) for value in rank[key]]
    if "rollout_mask_sums" in rank:
        rank["rollout_mask_sums"] = torch.as_tensor(rank["rollout_mask_sums"], dtype=torch.float32)


def split_by_dp(args: Any, data: dict[str, list[Any]], parallel: dict[str, int]) -> tuple[list[dict], DpSchedule]:
    total_lengths = [len(tokens) for tokens in data["tokens"]]
    schedule = build_dp_schedule(
        args, parallel, total_lengths, global_batch_size=args.global_batch_size, rollout_indices=data["rollout_ids"]
    )
    keys = VIME_ROW_KEYS if backend_of(args) == "vime" else SLIME_ROW_KEYS
    ranks = []
    for rank, partition in enumerate(schedule.partitions):
        part: dict[str, Any] = {"partition": partition}
        part |= {key: [data[key][i] for i in partition] for key in keys if key in data}
        part |= {"raw_reward": data["raw_reward"], "total_lengths": total_lengths}
        part |= {"global_batch_sizes": schedule.global_batch_sizes, "num_microbatches": schedule.num_microbatches}
        part["micro_batch_indices"] = schedule.micro_batch_indices[rank]
        _tensorise(part)
        ranks.append(part)
    return ranks, schedule


def token_weights(data: dict[str, list[Any]], rows: list[int], args: Any) -> list[list[float]]:
    """Each response token's weight in one step's loss (rows: the step's global row positions)."""
    masks = [data["loss_masks"][row] for row in rows]
    if args.calculate_per_token_loss:
        denominator = sum(max(sum(mask), 1) for mask in masks)
        return [[m / denominator for m in mask] for mask in masks]
    sums = [max(data["rollout_mask_sums"][row], 1) for row in rows]
    return [[m / (total * args.global_batch_size) for m in mask] for mask, total in zip(masks, sums, strict=True)]


def check_train_data(data: dict[str, list], *, rollout_counted: bool = True) -> None:
    """The train-data consumer's row invariants (lengths, masks, ints, per-rollout mask sums)."""
    rows = len(data["tokens"])
    for key, values in data.items():
        if isinstance(values, list) and key != "metadata":
            assert len(values) == rows, f"{key} has {len(values)} entries for {rows} rows"
    for i in range(rows):
        length = data["response_lengths"][i]
        assert 0 < length <= len(data["tokens"][i]), f"row {i}: response_length {length}"
        assert len(data["loss_masks"][i]) == length and set(data["loss_masks"][i]) <= {0, 1}
        assert all(type(t) is int for t in data["tokens"][i]), f"row {i}: tokens must be python ints"
        assert isinstance(data["rewards"][i], float)
    if rollout_counted:
        totals: dict[Any, int] = {}
        for rid, mask in zip(data["rollout_ids"], data["loss_masks"], strict=True):
            totals[rid] = totals.get(rid, 0) + sum(mask)
        assert data["rollout_mask_sums"] == [totals[rid] for rid in data["rollout_ids"]]
