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
masked (host/trajectory_rows.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mem_agent.agent.records import TrainDataError
from mem_agent.host.train_batch import train_data

__all__ = ["TrainDataError", "convert_samples_to_train_data"]


def convert_samples_to_train_data(args: Any, samples: Sequence[Any]) -> dict[str, list[Any]]:
    """The train-data dict of a rollout step; raises TrainDataError on a row that breaks the contract."""
    return train_data(args, samples)
