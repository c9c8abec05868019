"""A rollout step's turn samples as the host's train-data dict: one row per turn, each carrying
its trajectory's advantage (the custom convert hook, mem_agent.custom_convert, documents the keys).

Every row is checked against the host's contract first (response length within the tokens, one
loss-mask entry and one logprob per response token): a row that breaks it stops the step with a
TrainDataError naming the row, rather than training on misaligned tokens.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from mem_agent.agent.records import TrainDataError
from mem_agent.host.flags import check_host_args
from mem_agent.host.hook_config import scored_rows

__all__ = ["flatten", "train_data"]


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


def train_data(args: Any, samples: Sequence[Any]) -> dict[str, list[Any]]:
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
