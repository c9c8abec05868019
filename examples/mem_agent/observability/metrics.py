"""Memory-agent metrics of one rollout (or one eval set), counted per trajectory.

The hosts' own rollout metrics average over the samples they are handed, and a memory agent
hands them one sample per turn: a trajectory of 8 turns weighs 8 times one of 1 turn. Here the
rows are first put back together into trajectories (`host.trajectory_rows`, the grouping the
advantages use), and every trajectory-level figure weighs each trajectory once. Turn-level
figures (memory length, cut memories, response tokens by kind) are pooled over the turns of the
rollout, so a long document contributes its many memories, which is what they describe.

Pure functions over the facts our generate hook writes into `Sample.metadata["mem_agent"]`
(host/trajectory_samples.py): a training rollout brings one row per turn; evaluation brings one row per
question, whose `turn_facts` summarise its turns. A trajectory that failed or was aborted stays
in every denominator with score 0, as the evaluator counts it: an accuracy over only the
finished trajectories would rise whenever the inference tier breaks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mem_agent.host.reward_fields import reward_value
from mem_agent.host.trajectory_rows import group_trajectories, info_of, rollout_keys

SCORE_NAMES = ("strict", "sub_em", "em", "f1")


@dataclass(frozen=True, slots=True)
class TurnFacts:
    kind: str  # "memory" | "final"
    memory_tokens: int  # the memory after this turn (for the final turn: the one it answered from)
    response_tokens: int
    cut: bool  # max_tokens ended the turn
    recall_asked: bool = False  # ReMemR1: the turn asked for a recall
    recall_hit: bool | None = None  # ReMemR1: the recalled memory holds a gold word; None: nothing recalled
    state_reward: float | None = None  # ReMemR1: the turn's state reward


@dataclass(frozen=True, slots=True)
class TrajectoryFacts:
    key: Hashable  # the trajectory (the host's rollout id)
    group: Hashable  # its prompt's GRPO group
    status: str  # completed | aborted | failed | incomplete (rows trimmed away by the host)
    reward: float  # the scalar reward the trainer read
    scores: Mapping[str, float] | None  # strict, sub_em, em, f1 of the final answer; None: no answer
    has_box: bool  # the final answer closed a \boxed{}
    turns: tuple[TurnFacts, ...]


def _turn_of(info: Mapping[str, Any], kind: str, response_tokens: int) -> TurnFacts:
    state = info.get("state_reward")
    hit = info.get("recall_hit")
    return TurnFacts(
        kind=kind,
        memory_tokens=int(info.get("memory_tokens", 0)),
        response_tokens=response_tokens,
        cut=info.get("finish_reason") == "length",
        recall_asked=bool(info.get("recall_query") or info.get("recall_asked")),
        recall_hit=hit if isinstance(hit, bool) else None,
        state_reward=float(state) if isinstance(state, int | float) else None,
    )


def _scores_of(info: Mapping[str, Any]) -> dict[str, float] | None:
    scores = info.get("scores")
    if isinstance(scores, Mapping):
        return {name: float(scores.get(name, 0.0)) for name in SCORE_NAMES}
    return None


def trajectories_of_rows(args: Any, samples: Sequence[Any]) -> list[TrajectoryFacts]:
    """A training rollout's flat turn rows, as trajectories (grouped as the advantages group them)."""
    keys = rollout_keys(samples)
    facts = []
    for key, trajectory in group_trajectories(samples, keys).items():
        rows = [samples[position] for position in trajectory.positions]
        scored = samples[trajectory.final if trajectory.final is not None else trajectory.positions[0]]
        info = info_of(scored)
        turns = tuple(
            _turn_of(info_of(row), str(info_of(row).get("turn")), int(row.response_length))
            for row in rows
            if info_of(row).get("turn") in ("memory", "final")
        )
        status = trajectory.problem or str(info.get("trajectory_status", "completed"))
        facts.append(
            TrajectoryFacts(
                key=key,
                group=trajectory.group,
                status=status,
                reward=reward_value(args, scored),
                scores=_scores_of(info) if status == "completed" else None,
                has_box=bool(info.get("has_box")),
                turns=turns,
            )
        )
    return facts


def trajectories_of_eval(rewards: Sequence[Any], samples: Sequence[Any]) -> list[TrajectoryFacts]:
    """An eval set's rows (one per question, `rewards` as the host read them) as trajectories."""
    facts = []
    for reward, sample in zip(rewards, samples, strict=True):
        info = info_of(sample)
        status = str(info.get("trajectory_status", "completed"))
        turns = tuple(
            _turn_of(turn, str(turn.get("turn")), int(turn.get("response_tokens", 0)))
            for turn in info.get("turn_facts") or []
            if isinstance(turn, Mapping)
        )
        scores = _scores_of(info) if status == "completed" else None
        facts.append(
            TrajectoryFacts(sample.index, None, status, _number(reward), scores, bool(info.get("has_box")), turns)
        )
    return facts


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def summarize(trajectories: Sequence[TrajectoryFacts], *, groups: bool = True) -> dict[str, float]:
    """Every memory-agent metric of a rollout (names without the host's prefix); `groups` adds the
    reward-contrast counts, which only training (n samples per prompt) has."""
    if not trajectories:
        return {"trajectories": 0}
    metrics = _outcomes(trajectories) | _turns(trajectories) | _recall(trajectories)
    if groups:
        metrics |= _contrast(trajectories)
    return metrics


def _outcomes(trajectories: Sequence[TrajectoryFacts]) -> dict[str, float]:
    rewards = np.array([t.reward for t in trajectories], dtype=np.float64)
    count = len(trajectories)
    metrics: dict[str, float] = {
        "trajectories": count,
        "reward/mean": float(rewards.mean()),
        "reward/std": float(rewards.std()),
    }
    for name in SCORE_NAMES:  # unfinished trajectories count 0: every trajectory is in the denominator
        metrics[f"accuracy/{name}"] = sum(t.scores[name] for t in trajectories if t.scores) / count
    for status in ("failed", "aborted", "incomplete"):
        metrics[f"status/{status}"] = sum(t.status == status for t in trajectories)
    answered = [t for t in trajectories if any(turn.kind == "final" for turn in t.turns)]
    if answered:
        metrics["answer/box_share"] = sum(t.has_box for t in answered) / len(answered)
    return metrics


def _turns(trajectories: Sequence[TrajectoryFacts]) -> dict[str, float]:
    counts = [len(t.turns) for t in trajectories]
    metrics: dict[str, float] = {"turns/mean": float(np.mean(counts)), "turns/max": max(counts)}
    memory = [turn for t in trajectories for turn in t.turns if turn.kind == "memory"]
    final = [turn for t in trajectories for turn in t.turns if turn.kind == "final"]
    if memory:
        lengths = np.array([turn.memory_tokens for turn in memory], dtype=np.float64)
        metrics["memory_tokens/mean"] = float(lengths.mean())
        metrics["memory_tokens/p50"] = float(np.percentile(lengths, 50))
        metrics["memory_tokens/p95"] = float(np.percentile(lengths, 95))
        metrics["memory/cut_share"] = sum(turn.cut for turn in memory) / len(memory)
        metrics["response_tokens/memory_mean"] = float(np.mean([turn.response_tokens for turn in memory]))
    if final:
        metrics["answer/cut_share"] = sum(turn.cut for turn in final) / len(final)
        metrics["response_tokens/final_mean"] = float(np.mean([turn.response_tokens for turn in final]))
    metrics["response_tokens/per_trajectory_mean"] = float(
        np.mean([sum(turn.response_tokens for turn in t.turns) for t in trajectories])
    )
    return metrics


def _recall(trajectories: Sequence[TrajectoryFacts]) -> dict[str, float]:
    """ReMemR1 only (its turns carry state rewards or recall facts); empty for MemAgent."""
    memory = [turn for t in trajectories for turn in t.turns if turn.kind == "memory"]
    states = [turn.state_reward for t in trajectories for turn in t.turns if turn.state_reward is not None]
    recalled = [turn.recall_hit for turn in memory if turn.recall_hit is not None]
    if not states and not any(turn.recall_asked for turn in memory):
        return {}
    metrics: dict[str, float] = {
        "rememr1/recall_rate": sum(turn.recall_asked for turn in memory) / len(memory) if memory else 0.0,
        "rememr1/recall_hits": sum(recalled),
        "rememr1/recall_hit_rate": sum(recalled) / len(recalled) if recalled else 0.0,
    }
    if states:
        metrics["rememr1/state_reward_mean"] = float(np.mean(states))
    return metrics


def _contrast(trajectories: Sequence[TrajectoryFacts]) -> dict[str, float]:
    """Groups whose trained trajectories all got one reward: their advantages are all 0, so they
    teach nothing. Counted per group and per trajectory (a group of 16 weighs 16); a group with
    fewer than two trained trajectories has no contrast either."""
    by_group: dict[Hashable, list[TrajectoryFacts]] = defaultdict(list)
    for trajectory in trajectories:
        by_group[trajectory.group].append(trajectory)
    flat = [members for members in by_group.values() if not _has_contrast(members)]
    return {
        "zero_contrast/groups": len(flat),
        "zero_contrast/group_share": len(flat) / len(by_group),
        "zero_contrast/trajectory_share": sum(len(members) for members in flat) / len(trajectories),
    }


def _has_contrast(members: Iterable[TrajectoryFacts]) -> bool:
    rewards = {t.reward for t in members if t.status == "completed"}
    return len(rewards) > 1


def prefixed(metrics: Mapping[str, float], prefix: str) -> dict[str, float]:
    return {f"{prefix}{name}": value for name, value in metrics.items()}
