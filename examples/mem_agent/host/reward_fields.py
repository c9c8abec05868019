"""A turn sample's reward as the host reads it: a number, or a dict under `--reward-key`.

Every host path that reads a reward goes through `Sample.get_reward_value(args)`, which is
`reward` when `--reward-key` is unset and `reward[args.reward_key]` when it is set: the rollout
metrics (`log_rollout_data`'s zero-std groups), the dynamic-sampling filters, the built-in reward
post-process, and evaluation (`reward[eval_reward_key or reward_key]`). So the shape of the
reward must follow the flags: a float without a key (a dict would break `round()` in the
metrics), a dict with one (a float is not subscriptable there).

The dict carries the training reward (the strict `\\boxed{}` exact match, MemAgent's RL reward)
under every key the host asks for, plus the accuracy fields beside it, so evaluation can report
`--eval-reward-key sub_em` (MemAgent's headline metric) while training reads the strict reward:

    {"score": 1.0, "strict": 1.0, "sub_em": 1.0, "em": 1.0, "f1": 1.0, "outcome": "correct"}

`outcome` (correct, wrong, failed, aborted) is there for `--log-reward-category outcome`. A key
that names one of these fields would silently train on something else, so the flag check
(`host_flags`) refuses it.
"""

from __future__ import annotations

from typing import Any

from mem_agent.agent.records import TrainDataError
from mem_agent.agent.scoring import AnswerScores

ACCURACY_FIELDS = ("strict", "sub_em", "em", "f1")
CATEGORY_FIELD = "outcome"
RESERVED_KEYS = (*ACCURACY_FIELDS, CATEGORY_FIELD)
__all__ = ["ACCURACY_FIELDS", "CATEGORY_FIELD", "RESERVED_KEYS", "reward_record", "reward_value"]


def training_keys(args: Any) -> list[str]:
    """The keys under which the host reads the training reward (`--reward-key`, `--eval-reward-key`)."""
    keys = [getattr(args, "reward_key", None), getattr(args, "eval_reward_key", None)]
    return [key for key in dict.fromkeys(keys) if key and key not in RESERVED_KEYS]


def reward_record(args: Any, strict: float, scores: AnswerScores | None, outcome: str) -> float | dict[str, Any]:
    """The value to store in `Sample.reward`: the strict reward, or a dict when the host reads a key."""
    if not getattr(args, "reward_key", None) and not getattr(args, "eval_reward_key", None):
        return float(strict)
    record: dict[str, Any] = dict.fromkeys(training_keys(args), float(strict))
    record["strict"] = float(strict)
    record["sub_em"] = float(scores.sub_em) if scores else 0.0
    record["em"] = float(scores.em) if scores else 0.0
    record["f1"] = float(scores.f1) if scores else 0.0
    record[CATEGORY_FIELD] = outcome
    return record


def reward_value(args: Any, sample: Any) -> float:
    """The row's scalar training reward, read exactly as the host's `get_reward_value` reads it;
    TrainDataError when the reward's shape does not match the flags (a dict without --reward-key)."""
    value = sample.reward
    key = getattr(args, "reward_key", None)
    if isinstance(value, dict):
        if not key or key not in value:
            raise TrainDataError(
                f"sample {sample.index}: dict reward {sorted(value)} needs --reward-key naming one of its keys"
            )
        value = value[key]
    elif key and value is not None:
        raise TrainDataError(
            f"sample {sample.index}: --reward-key {key} is set, but its reward is {value!r}, not a dict"
        )
    return 0.0 if value is None else float(value)
