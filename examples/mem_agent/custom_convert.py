"""Turn samples -> the host's train-data dict (Multi-Conv GRPO unrolled to one row per turn).

    --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data

The host hands over the flat list of turn samples of a rollout step. Group statistics are taken
per trajectory first (`mem_agent.host.trajectory_rows`, the same code as the reward post-process hook,
which the host does not call when a convert function is set), then each row gets its trajectory's
value: MemAgent gives every token of every turn the same advantage.

Keys (lists aligned per row): `tokens` (prompt + response ids), `response_lengths`, `rewards` (the
row's advantage: the host's GRPO turns it into per-token returns as is), `raw_reward`,
`truncated`, `loss_masks` (one entry per response token), `sample_indices`, `rollout_ids` and
`rollout_mask_sums`. `rollout_log_probs`, `round_number` and `metadata` appear only when every
sample has them (the hosts forward `metadata` to no rank; it is there for custom losses).

Both current hosts, slime HEAD (slime/ray/rollout.py `_split_train_data_by_dp`) and current vime
(`vime/data/batch_builder.py` `BatchBuilder.split_by_dp`), require `rollout_ids`, count
`--global-batch-size` in rollouts (trajectories: `vime/utils/dp_schedule.py` / `slime/utils/
dp_schedule.py`), keep all rows of a trajectory in one optimizer step and drop trailing
trajectories that do not fill one; they never trim rows. How the loss weighs the rows is the
host's `--calculate-per-token-loss`: with it (the launch script's default, MemAgent's token mean)
every response token of a step's turn rows weighs the same; without it the reducer divides each
row by `rollout_mask_sums`, the loss-mask total of its whole trajectory, so every trajectory
weighs the same whatever its turn count. Older sample-counted hosts (slime v0.2.x, old vime)
copy only the keys they know and may trim a step's last rows; a trajectory cut that way is
masked here (see trajectory_rows).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from mem_agent.agent.records import TrainDataError
from mem_agent.host.flags import check_host_args
from mem_agent.host.hook_config import scored_rows

__all__ = ["TrainDataError", "convert_samples_to_train_data"]


def flatten(samples: Sequence[Any]) -> list[Any]:
    rows = list(samples)
    while rows and isinstance(rows[0], list):
        rows = list(itertools.chain.from_iterable(rows))
    return rows


def _check_row(position: int, row: Any) -> None:
    length = row.response_length
    if not 0 < length <= len(row.tokens):
        raise TrainDataError(f"row {position}: response_length {length} does not fit its {len(row.tokens)} tokens")
    if row.loss_mask is not None and len(row.loss_mask) != length:
        raise TrainDataError(f"row {position}: loss mask has {len(row.loss_mask)} entries for {length} tokens")
    if row.rollout_log_probs is not None and len(row.rollout_log_probs) != length:
        raise TrainDataError(f"row {position}: {len(row.rollout_log_probs)} logprobs for {length} tokens")


def _loss_mask(row: Any, trainable: bool) -> list[int]:
    if not trainable or getattr(row, "remove_sample", False):
        return [0] * row.response_length
    if row.loss_mask is None:
        return [1] * row.response_length
    return [int(value) for value in row.loss_mask]


def _mask_sums(rollout_ids: list[Hashable], loss_masks: list[list[int]]) -> list[int]:
    totals: dict[Hashable, int] = defaultdict(int)
    for rollout, mask in zip(rollout_ids, loss_masks, strict=True):
        totals[rollout] += sum(mask)
    return [totals[rollout] for rollout in rollout_ids]


def convert_samples_to_train_data(args: Any, samples: Sequence[Any]) -> dict[str, list[Any]]:
    """The train-data dict of a rollout step; raises TrainDataError on a row that breaks the contract."""
    check_host_args(args)
    rows = flatten(samples)
    if not rows:
        raise TrainDataError("no samples to convert")
    for position, row in enumerate(rows):
        _check_row(position, row)
    scored = scored_rows(args, rows)
    loss_masks = [_loss_mask(row, trainable) for row, trainable in zip(rows, scored.trainable, strict=True)]
    status_type = type(rows[0]).Status
    data: dict[str, list[Any]] = {
        "tokens": [[int(token) for token in row.tokens] for row in rows],
        "response_lengths": [int(row.response_length) for row in rows],
        "rewards": scored.advantages,
        "raw_reward": scored.raw_rewards,
        "truncated": [int(row.status == status_type.TRUNCATED) for row in rows],
        "loss_masks": loss_masks,
        "sample_indices": [row.index for row in rows],
        "rollout_ids": scored.rollout_ids,
        "rollout_mask_sums": _mask_sums(scored.rollout_ids, loss_masks),
    }
    if all(row.rollout_log_probs is not None for row in rows):
        data["rollout_log_probs"] = [[float(value) for value in row.rollout_log_probs] for row in rows]
    if all("round_number" in (row.metadata or {}) for row in rows):
        data["round_number"] = [row.metadata["round_number"] for row in rows]
    if all(getattr(row, "train_metadata", None) is not None for row in rows):
        data["metadata"] = [row.train_metadata for row in rows]
    return data
