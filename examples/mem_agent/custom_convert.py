"""Turn samples -> the host's train-data dict (Multi-Conv GRPO unrolled to one row per turn).

    --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data

The host hands over the flat list of turn samples of a rollout step. Advantages are computed per
trajectory with the same code as `mem_agent.rollout.reward_post_process` (the host does not call
that hook when a convert function is set), then each row gets its trajectory's value.

Keys (lists aligned per row): `tokens` (prompt + response ids), `response_lengths`, `rewards` (the
row's advantage: the host's GRPO turns it into per-token returns as is), `raw_reward`,
`truncated`, `loss_masks` (one entry per response token), `sample_indices`, and for slime HEAD
`rollout_ids` (steps are cut by trajectory, so a trajectory's turns are never split across steps)
and `rollout_mask_sums` (the loss-mask total of the row's whole trajectory: the loss reducer's
per-trajectory denominator, so a trajectory of 12 turns counts once, like one of 2). Optional
`rollout_log_probs`, `round_number` and `metadata` appear only when every sample has them.
The sample-counted interface of older slime and vime reads only the keys it knows and ignores
the rest, so the same dict serves both; there, the host may trim the last rows of a step to a
multiple of the global batch size before this function sees them (vime:
--disable-rollout-trim-samples avoids it).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from mem_agent.rollout import reward_post_process, rollout_key, trajectory_is_valid


class TrainDataError(ValueError):
    """Samples that break the host's row invariants; the message names the row."""


def flatten(samples: Sequence[Any]) -> list[Any]:
    rows = list(samples)
    while rows and isinstance(rows[0], list):
        rows = list(itertools.chain.from_iterable(rows))
    return rows


def _loss_mask(sample: Any, position: int) -> list[int]:
    mask = sample.loss_mask if sample.loss_mask is not None else [1] * sample.response_length
    if len(mask) != sample.response_length:
        raise TrainDataError(f"row {position}: loss mask has {len(mask)} entries for {sample.response_length} tokens")
    if getattr(sample, "remove_sample", False) or not trajectory_is_valid(sample):
        return [0] * sample.response_length
    return [int(value) for value in mask]


def convert_samples_to_train_data(args: Any, samples: Sequence[Any]) -> dict[str, list[Any]]:
    rows = flatten(samples)
    if not rows:
        raise TrainDataError("no samples to convert")
    for position, row in enumerate(rows):
        if not 0 < row.response_length <= len(row.tokens):
            raise TrainDataError(
                f"row {position}: response_length {row.response_length} does not fit its {len(row.tokens)} tokens"
            )
    raw_rewards, advantages = reward_post_process(args, rows)
    loss_masks = [_loss_mask(row, position) for position, row in enumerate(rows)]
    rollout_ids = [rollout_key(row) for row in rows]
    totals: dict[Any, int] = defaultdict(int)
    for rollout, mask in zip(rollout_ids, loss_masks, strict=True):
        totals[rollout] += sum(mask)
    status_type = type(rows[0]).Status
    data: dict[str, list[Any]] = {
        "tokens": [list(row.tokens) for row in rows],
        "response_lengths": [row.response_length for row in rows],
        "rewards": advantages,
        "raw_reward": raw_rewards,
        "truncated": [int(row.status == status_type.TRUNCATED) for row in rows],
        "loss_masks": loss_masks,
        "sample_indices": [row.index for row in rows],
        "rollout_ids": rollout_ids,
        "rollout_mask_sums": [totals[rollout] for rollout in rollout_ids],
    }
    if all(row.rollout_log_probs is not None for row in rows):
        for position, row in enumerate(rows):
            if len(row.rollout_log_probs) != row.response_length:
                raise TrainDataError(
                    f"row {position}: {len(row.rollout_log_probs)} logprobs for {row.response_length} tokens"
                )
        data["rollout_log_probs"] = [list(row.rollout_log_probs) for row in rows]
    if all(isinstance(row.metadata, dict) and "round_number" in row.metadata for row in rows):
        data["round_number"] = [row.metadata["round_number"] for row in rows]
    if all(getattr(row, "train_metadata", None) is not None for row in rows):
        data["metadata"] = [row.train_metadata for row in rows]
    return data
