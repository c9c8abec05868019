"""The host's dynamic-sampling filter contract, and its own sample-level filter.

Mirrors slime/rollout/filter_hub/base_types.py (624b824; vime's filter_hub alike):
`DynamicFilterOutput` (:5-11), `call_dynamic_filter` (:27-37, a legacy bool is wrapped),
`should_drop_dynamic_filter_output` (:14-24, `keep_when_insufficient` keeps a rejected group when
no more than `target` candidates remain) and `MetricGatherer` (:40-54, drop reasons become
`rollout/dynamic_filter/drop_<reason>` counts). `check_reward_nonzero_std` is the host's own
filter (filter_hub/dynamic_sampling_filters.py:9-16): it reads one reward per group member, so a
group of turn lists makes it fail with the AttributeError users see.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass
class DynamicFilterOutput:
    keep: bool
    reason: str | None = None
    keep_when_insufficient: bool = False


def call_dynamic_filter(fn: Any, *args: Any, **kwargs: Any) -> DynamicFilterOutput:
    if fn is None:
        return DynamicFilterOutput(keep=True)
    output = fn(*args, **kwargs)
    return output if isinstance(output, DynamicFilterOutput) else DynamicFilterOutput(keep=output)


def should_drop_dynamic_filter_output(
    output: DynamicFilterOutput, *, remaining_batch_size: int, target_data_size: int
) -> bool:
    if output.keep:
        return False
    return not (output.keep_when_insufficient and remaining_batch_size <= target_data_size)


class MetricGatherer:
    def __init__(self) -> None:
        self.drops: Counter[str] = Counter()

    def on_dynamic_filter_drop(self, reason: str | None) -> None:
        if reason:
            self.drops[reason] += 1

    def collect(self) -> dict[str, int]:
        return {f"rollout/dynamic_filter/drop_{reason}": count for reason, count in self.drops.items()}


def check_reward_nonzero_std(args: Any, samples: list[Any], **kwargs: Any) -> DynamicFilterOutput:
    rewards = [sample.get_reward_value(args) for sample in samples]
    keep = statistics.stdev(rewards) > 1e-6 if len(rewards) > 1 else False
    return DynamicFilterOutput(keep=keep, reason=None if keep else f"zero_std_{round(rewards[0], 1)}")
