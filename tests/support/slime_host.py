"""The older helper names of the host double, kept for tests that still import them.

New tests use `support.host.*` directly (see its docstring for what it mirrors).
"""

from __future__ import annotations

from typing import Any

from support.host.args import host_args
from support.host.data_source import DataSource
from support.host.rollout_loop import RolloutState, sampling_params
from support.host.rollout_loop import generate_and_rm_group as _generate_and_rm_group
from support.host.sample import Sample
from support.host.train_data import flatten_rollout

__all__ = [
    "Sample",
    "check_train_data",
    "data_source_groups",
    "flatten_rollout",
    "generate_and_rm_group",
    "host_args",
    "sampling_params",
]


def data_source_groups(rows: list[dict], n_samples_per_prompt: int) -> list[list[Sample]]:
    """One call of the data source: n copies per prompt, numbered from the source's counters."""
    return DataSource(rows, n_samples_per_prompt).get_samples(len(rows))


async def generate_and_rm_group(args: Any, group: list[Sample], generate: Any, rm: Any, evaluation: bool = False):
    """The group task with the hooks the args name (`generate` and `rm` must be those hooks)."""
    assert f"{generate.__module__}.{generate.__name__}" == args.custom_generate_function_path
    assert f"{rm.__module__}.{rm.__name__}" == args.custom_rm_path
    return await _generate_and_rm_group(RolloutState.for_args(args), group, sampling_params(args), evaluation)


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
