"""The host's step and DP split: whole rollouts per step, packed by token budget, dealt to ranks.

Mirrors build_dp_schedule (slime/utils/dp_schedule.py:82-209, 624b824; vime/utils/dp_schedule.py
alike) with its packers (slime/utils/seqlen_balancing.py `first_fit_pack`, `_split_bin_by_tokens`,
`expand_bins_by_splitting`):

1. rows are grouped by rollout id in first-seen order and cut into steps of `global_batch_size`
   rollouts; trailing rollouts that do not fill a step are dropped; at least one step
   (dp_schedule.py:130-139);
2. every step needs at least `dp_size` rows (:151-154);
3. dynamic batch size: first-fit packing under `max_tokens_per_gpu * cp_size` tokens per
   micro-batch, a row longer than that alone in its own (:55-79); static: `micro_batch_size`
   rows per micro-batch;
4. the micro-batch count is raised to a multiple of `dp_size` by splitting the largest
   multi-row bin into two token-balanced halves; if that is impossible, or in the static path,
   it is an AssertionError (:167-185);
5. micro-batches are dealt to ranks round-robin (:197-198), and each rank gets its global row
   positions (`partitions`) and `micro_batch_indices` that tile them (:200-207).

`--balance-data` (Karmarkar-Karp over FLOPs, :193-196) is modelled by a greedy equal-count split
on token sums: it moves micro-batches between ranks, never rows between steps.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DpSchedule:
    partitions: list[list[int]]
    micro_batch_indices: list[list[list[int]]]
    num_microbatches: list[int]
    global_batch_sizes: list[int]


def first_fit_pack(lengths: Sequence[int], budget: int) -> list[list[int]]:
    bins: list[list[int]] = []
    sums: list[int] = []
    for position, length in enumerate(lengths):
        for slot, total in enumerate(sums):
            if total + length <= budget:
                bins[slot].append(position)
                sums[slot] += length
                break
        else:
            bins.append([position])
            sums.append(length)
    return bins


def _halves(members: list[int], lengths: Sequence[int]) -> tuple[list[int], list[int]]:
    halves: tuple[list[int], list[int]] = ([], [])
    sums = [0, 0]
    for position in sorted(members, key=lambda p: -lengths[p]):
        side = 0 if sums[0] <= sums[1] else 1
        halves[side].append(position)
        sums[side] += lengths[position]
    return halves


def expand_bins(bins: list[list[int]], target: int, lengths: Sequence[int]) -> None:
    while len(bins) < target:
        splittable = [(sum(lengths[p] for p in members), slot) for slot, members in enumerate(bins) if len(members) > 1]
        if not splittable:
            return
        _, slot = max(splittable)
        bins[slot], right = _halves(bins[slot], lengths)
        bins.append(right)


def _deal(bins: list[list[int]], lengths: Sequence[int], dp_size: int, balance: bool) -> list[list[int]]:
    if not balance:
        return [list(range(rank, len(bins), dp_size)) for rank in range(dp_size)]
    per_rank = len(bins) // dp_size
    loads, dealt = [0] * dp_size, [[] for _ in range(dp_size)]
    for slot in sorted(range(len(bins)), key=lambda s: -sum(lengths[p] for p in bins[s])):
        rank = min((r for r in range(dp_size) if len(dealt[r]) < per_rank), key=lambda r: loads[r])
        dealt[rank].append(slot)
        loads[rank] += sum(lengths[p] for p in bins[slot])
    return dealt


def build_dp_schedule(
    args: Any,
    parallel: dict[str, int],
    total_lengths: Sequence[int],
    *,
    global_batch_size: int,
    rollout_indices: Sequence[Hashable],
) -> DpSchedule:
    dp_size, cp_size = parallel["dp_size"], parallel["cp_size"]
    by_rollout: dict[Hashable, list[int]] = {}
    for position, rid in enumerate(rollout_indices):
        by_rollout.setdefault(rid, []).append(position)
    rollouts = list(by_rollout)
    num_steps = len(rollouts) // global_batch_size
    assert num_steps >= 1, f"num_rollouts ({len(rollouts)}) < global_batch_size ({global_batch_size})"
    schedule = DpSchedule([[] for _ in range(dp_size)], [[] for _ in range(dp_size)], [], [])
    for step in range(num_steps):
        step_rollouts = rollouts[step * global_batch_size : (step + 1) * global_batch_size]
        rows = [position for rid in step_rollouts for position in by_rollout[rid]]
        lengths = [total_lengths[p] for p in rows]
        schedule.global_batch_sizes.append(global_batch_size)
        assert len(rows) >= dp_size, f"step {step}: {len(rows)} samples < dp_size {dp_size}"
        if args.use_dynamic_batch_size:
            bins = first_fit_pack(lengths, args.max_tokens_per_gpu * cp_size)
        else:
            size = args.micro_batch_size
            bins = [list(range(i, min(i + size, len(rows)))) for i in range(0, len(rows), size)]
        target = max(-(-len(bins) // dp_size) * dp_size, dp_size)
        if target != len(bins):
            assert args.use_dynamic_batch_size, f"static path: {len(bins)} micro-batches for dp_size {dp_size}"
            expand_bins(bins, target, lengths)
            assert len(bins) == target, f"dynamic path: could only produce {len(bins)} mbs, need {target}"
        schedule.num_microbatches.append(len(bins) // dp_size)
        for rank, slots in enumerate(_deal(bins, lengths, dp_size, args.balance_data)):
            for slot in slots:
                start = len(schedule.partitions[rank])
                schedule.partitions[rank].extend(rows[local] for local in bins[slot])
                schedule.micro_batch_indices[rank].append(list(range(start, start + len(bins[slot]))))
    return schedule
