"""Trajectory records of a training rollout, built from the host's flat turn rows.

Written by the rollout log hook (rollout_log.py), which sees every row of a rollout after its
rewards and before the convert. Advantages are not on the rows yet at that point; they are a
pure function of the rows and the host's flags, so they are computed here with the very function
the convert calls (`host.hook_config.scored_rows`) and come out identical to what is trained.

Memory text costs nothing extra in MemAgent mode: the row's `response` is already the decoded
memory (the generate hook decodes it for the host's logs). Only where the memory differs from the
response (ReMemR1's recall blocks, thinking, a template file's text memory) does the generate
hook carry the memory's text in the row's metadata (`memory_text`).

Each record keeps the rewards of every trajectory of its prompt's GRPO group in the rollout
(`extra.group_rewards`), recorded or not: the group is what the advantages compare, and a group
whose rewards are all equal teaches nothing.

Which trajectories: `MEM_TRAJECTORY_COUNT` per recorded rollout, half of them correct (strict
reward > 0) and half not where both exist, topped up from the other kind where one falls short,
drawn with the rollout id as seed so a rerun records the same ones. Every `MEM_TRAJECTORY_EVERY`
rollouts (rollout ids divisible by it).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from mem_agent.common.guarded_files import atomic_output
from mem_agent.host.hook_config import scored_rows
from mem_agent.host.trajectory_rows import ground_truths, group_trajectories, info_of
from mem_agent.observability.metrics import TrajectoryFacts
from mem_agent.observability.trajectory_records import TrajectoryRecord, TurnRecord

TRAJECTORY_DIR = "trajectories"  # under the trainer's --save


def records_path(save_dir: Path, rollout_id: int) -> Path:
    return Path(save_dir) / TRAJECTORY_DIR / f"rollout_{rollout_id:06d}.jsonl"


def is_recorded(rollout_id: int, every: int) -> bool:
    return every > 0 and rollout_id % every == 0


def pick(trajectories: Sequence[TrajectoryFacts], count: int, seed: int) -> list[Hashable]:
    """Up to `count` trajectory keys, correct and wrong both represented, in the rollout's order."""
    rng = random.Random(seed)
    correct = [t.key for t in trajectories if t.status == "completed" and t.reward > 0]
    wrong = [t.key for t in trajectories if not (t.status == "completed" and t.reward > 0)]
    rng.shuffle(correct)
    rng.shuffle(wrong)
    half = min(count // 2, len(correct), len(wrong))
    taken = correct[:half] + wrong[:half]
    rest = correct[half:] + wrong[half:]
    chosen = set(taken + rest[: count - len(taken)])
    return [t.key for t in trajectories if t.key in chosen]


def records_of_rows(
    args: Any, samples: Sequence[Any], keys: Sequence[Hashable], *, rollout_id: int, mode: str
) -> list[TrajectoryRecord]:
    """The records of the trajectories named by `keys`, with the advantages the convert gives."""
    scored = scored_rows(args, samples)
    trajectories = group_trajectories(samples, scored.rollout_ids)
    group_rewards: dict[Hashable, list[float]] = {}  # every trajectory's, not only the recorded ones
    for trajectory in trajectories.values():
        group_rewards.setdefault(trajectory.group, []).append(float(scored.raw_rewards[trajectory.positions[0]]))
    records = []
    for key in keys:
        positions = trajectories[key].positions
        rows = [samples[p] for p in positions]
        advantages = [scored.advantages[p] for p in positions]
        final = trajectories[key].final
        scored_row = samples[final if final is not None else positions[0]]
        record = _record(rows, advantages, scored_row, scored.raw_rewards[positions[0]], key, rollout_id, mode)
        records.append(replace(record, extra={"group_rewards": group_rewards[trajectories[key].group]}))
    return records


def _record(
    rows: list[Any], advantages: list[float], scored_row: Any, reward: float, key: Hashable, rollout_id: int, mode: str
) -> TrajectoryRecord:
    info = info_of(scored_row)
    turns = [_turn(row, advantage) for row, advantage in zip(rows, advantages, strict=True)]
    turns = [turn for turn in turns if turn is not None]
    scores = info.get("scores")
    return TrajectoryRecord(
        source="train",
        item_id=str(key),
        question=scored_row.prompt if isinstance(scored_row.prompt, str) else str(scored_row.prompt),
        ground_truths=ground_truths(scored_row),
        mode=mode,
        status=str(info.get("trajectory_status", "failed")),
        answer=str(info.get("answer", "")),
        scores=dict(scores) if isinstance(scores, dict) else {},
        has_box=bool(info.get("has_box")),
        context_tokens=int(info.get("context_tokens", 0)),
        dropped_tokens=int(info.get("dropped_tokens", 0)),
        turns=turns,
        rollout_id=rollout_id,
        group_index=scored_row.group_index,
        reward=reward,
        advantage=advantages[0] if len(set(advantages)) == 1 else None,  # ReMemR1: per turn only
        error=info.get("error"),
    )


def _turn(row: Any, advantage: float) -> TurnRecord | None:
    info = info_of(row)
    kind = info.get("turn")
    if kind not in ("memory", "final"):
        return None  # the placeholder row of a trajectory that produced no turn
    text = info.get("memory_text", row.response) if kind == "memory" else row.response
    state = info.get("state_reward")
    return TurnRecord(
        kind=kind,
        step=int(info.get("step", 0)),
        text=str(text),
        cut=info.get("finish_reason") == "length",
        finish_reason=str(info.get("finish_reason")),
        prompt_tokens=len(row.tokens) - int(row.response_length),
        response_tokens=int(row.response_length),
        memory_tokens=int(info.get("memory_tokens", 0)),
        recall_query=info.get("recall_query") or None,
        recalled=info.get("recalled") or None,
        state_reward=float(state) if isinstance(state, int | float) else None,
        advantage=advantage,
        chunk_start=_whole(info.get("chunk_start")),  # the workflow's, carried in the row's metadata
        chunk_end=_whole(info.get("chunk_end")),
    )


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def write_records(path: Path, records: Sequence[TrajectoryRecord]) -> int:
    """Write one rollout's records as a whole file (temp file + rename); returns its size in bytes.
    A rollout re-run after a resume replaces its file rather than doubling it."""
    payload = b"".join(orjson.dumps(record.to_json()) + b"\n" for record in records)
    with atomic_output(path, "wb") as handle:
        handle.write(payload)
    return len(payload)
