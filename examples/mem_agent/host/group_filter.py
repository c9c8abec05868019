"""Dynamic-sampling decisions over trajectories, not turns: which of a prompt's groups to keep.

DAPO's dynamic sampling keeps a prompt's group only if its rewards are not all equal: a group
where every answer scored the same has advantage 0 everywhere and only dilutes the step. The
host's own filters (`filter_hub.dynamic_sampling_filters.check_reward_nonzero_std`) read one
reward per group member; with the memory agent a member is one trajectory's list of turn
samples, so those filters crash (`'list' object has no attribute 'get_reward_value'`) and the
hooks refuse them. These decisions count per trajectory, never per turn: a trajectory's reward is its
final turn's, read through `--reward-key` as the host reads it, and a trajectory that failed or
was aborted is left out, exactly as it is left out of its group's advantage mean.

The host calls a filter with `(args, group)` and accepts either a bool or its own
`DynamicFilterOutput`; these return the host's type (imported from the host that is running, so
the drop reason reaches its `rollout/dynamic_filter/drop_*` metrics) and a bool where neither
slime nor vime is loaded. `keep_with_contrast_or_fill` also sets `keep_when_insufficient`, the host's fallback
that keeps a rejected group when dropping it would leave too few groups to fill the batch.

The bound. The host draws a new round of `--over-sampling-batch-size` prompts whenever drops leave
too few groups in flight, with no cap: on a model whose groups never show contrast (one that
always scores 0) a rollout never ends. So `keep_with_contrast` counts the groups it
drops in a rollout; once they reach MEM_FILTER_MAX_ROUNDS (default 8) rounds' worth
(x `--over-sampling-batch-size`, which the host defaults to `--rollout-batch-size`), it keeps
every group until the rollout's `--rollout-batch-size` groups are in, and logs one warning for
that rollout. Keeping adds no draw, so a rollout asks for at most that many rounds beyond the
groups it needs. The filter sees groups, not rollouts: a rollout ends, for it, when it has kept
`--rollout-batch-size` groups. A group that finishes in the same host wait as the last one the
host needed is counted towards the next rollout, which moves where the bound engages by a few
groups and never removes it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mem_agent.host.hook_config import settings
from mem_agent.host.reward_fields import reward_value
from mem_agent.host.trajectory_rows import info_of, untrainable_status

_HOST_FILTER_TYPES = ("slime.rollout.filter_hub.base_types", "vime.rollout.filter_hub.base_types")

__all__ = ["keep_with_contrast", "keep_with_contrast_or_fill", "trajectory_rewards"]

logger = logging.getLogger(__name__)


@dataclass
class _Window:
    """The groups this process's filter has seen in the current rollout (see the module docstring)."""

    kept: int = 0
    dropped: int = 0
    filling: bool = False


_WINDOWS: dict[int, _Window] = {}  # by id(args): one host run holds one args object


def _members(member: Any) -> list[Any]:
    return list(member) if isinstance(member, list | tuple) else [member]


def _final(turns: Sequence[Any]) -> Any:
    finals = [turn for turn in turns if info_of(turn).get("turn") == "final"]
    return finals[-1] if finals else turns[-1]


def trajectory_rewards(args: Any, group: Sequence[Any]) -> list[float]:
    """The outcome reward of each valid trajectory of one prompt's group, one number per trajectory."""
    rewards = []
    for member in group:
        turns = _members(member)
        if turns and not any(untrainable_status(turn) for turn in turns):
            rewards.append(reward_value(args, _final(turns)))
    return rewards


def _decision(args: Any, group: Sequence[Any]) -> tuple[bool, str | None]:
    rewards = trajectory_rewards(args, group)
    if len(rewards) < 2:
        return False, "no_valid_contrast"
    if max(rewards) - min(rewards) > 1e-6:
        return True, None
    return False, f"zero_std_{round(rewards[0], 1)}"


def _host_output(keep: bool, reason: str | None, keep_when_insufficient: bool) -> Any:
    for name in _HOST_FILTER_TYPES:
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "DynamicFilterOutput"):
            output = module.DynamicFilterOutput(keep=keep, reason=reason)
            if keep_when_insufficient:
                output.keep_when_insufficient = True
            return output
    return keep


def _bounded(args: Any, keep: bool, reason: str | None) -> tuple[bool, str | None]:
    """The decision, or a keep once this rollout has dropped its MEM_FILTER_MAX_ROUNDS rounds."""
    window = _WINDOWS.setdefault(id(args), _Window())
    target = max(1, int(args.rollout_batch_size))
    if not keep and not window.filling:
        rounds = settings().filter_max_rounds
        round_size = int(args.over_sampling_batch_size or target)
        if window.dropped < rounds * round_size:
            window.dropped += 1
            return False, reason
        window.filling = True  # invariant: a rollout drops at most rounds x round_size groups
        logger.warning(
            "dynamic filter: %d groups of this rollout had no reward contrast (MEM_FILTER_MAX_ROUNDS=%d rounds of %d); "
            "keeping the groups in flight, contrast or not, until the rollout's %d groups are in",
            window.dropped,
            rounds,
            round_size,
            target,
        )
    window.kept += 1
    if window.kept >= target:
        _WINDOWS[id(args)] = _Window()  # this rollout is full: the next one counts afresh
    return True, None


def keep_with_contrast(args: Any, group: Sequence[Any]) -> Any:
    """Keep a prompt's group only if its valid trajectories' rewards are not all equal (DAPO), up to
    the MEM_FILTER_MAX_ROUNDS bound per rollout; the host's own output type where it is loaded."""
    keep, reason = _bounded(args, *_decision(args, group))
    return _host_output(keep, reason, keep_when_insufficient=False)


def keep_with_contrast_or_fill(args: Any, group: Sequence[Any]) -> Any:
    """The same decision, unbounded, and the host keeps a rejected group when it would otherwise
    sample another round."""
    keep, reason = _decision(args, group)
    return _host_output(keep, reason, keep_when_insufficient=True)
