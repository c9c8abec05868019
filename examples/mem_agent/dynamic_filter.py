"""Trajectory-aware dynamic-sampling filters for the host's `--dynamic-sampling-filter-path`.

    --dynamic-sampling-filter-path mem_agent.dynamic_filter.keep_groups_with_reward_contrast

DAPO's dynamic sampling keeps a prompt's group only if its rewards are not all equal. The host's
own filters read one reward per group member; with the memory agent a member is one trajectory's
list of turn samples, so those crash and the hooks refuse them. These count per trajectory, never
per turn, leave failed and aborted trajectories out, and end a rollout on a model whose groups
never show contrast: after MEM_FILTER_MAX_ROUNDS (default 8) rounds of drops every group is kept
until the rollout is full (`host/group_filter.py` says how).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mem_agent.host.group_filter import keep_with_contrast, keep_with_contrast_or_fill

__all__ = ["keep_groups_with_reward_contrast", "keep_groups_with_reward_contrast_or_fill"]


def keep_groups_with_reward_contrast(args: Any, samples: Sequence[Any], **kwargs: Any) -> Any:
    """Keep a prompt's group only if its valid trajectories' rewards are not all equal (DAPO),
    up to the MEM_FILTER_MAX_ROUNDS bound per rollout."""
    return keep_with_contrast(args, samples)


def keep_groups_with_reward_contrast_or_fill(args: Any, samples: Sequence[Any], **kwargs: Any) -> Any:
    """As above, but the host keeps a rejected group when it would otherwise sample another round."""
    return keep_with_contrast_or_fill(args, samples)
