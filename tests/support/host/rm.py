"""The host's reward-model calls and the checks on what a reward model returns.

`async_rm` / `batched_async_rm` mirror slime/rollout/rm_hub/__init__.py:55-110 (624b824) with a
custom rm: a sample's own `custom_rm_path` first (eval dataset configs set it), else
`--custom-rm-path`; the batched call hands the whole list to the custom rm. The return checks
are current vime's (tests of `vime.rollout.vllm_rollout.generate_and_rm`, file index id
70447660666): a batched rm must return an iterable of rewards, never a dict, str or bytes
(TypeError "returned <type> instead of an iterable of rewards"), one per sample (ValueError
"returned N rewards for M samples"), and no sample is assigned anything when a check fails.
slime HEAD zips without these checks (sglang_rollout.py:278, strict=False); the stricter rule
is the one a correct rm must satisfy on both.
"""

from __future__ import annotations

from typing import Any

from support.host.loader import load_function


async def async_rm(args: Any, sample: Any, **kwargs: Any) -> Any:
    path = sample.custom_rm_path or args.custom_rm_path
    assert path is not None, "the double only models a custom rm"
    return await load_function(path)(args, sample, **kwargs)


async def batched_async_rm(args: Any, samples: list[Any], **kwargs: Any) -> list[Any]:
    assert args.custom_rm_path is not None, "the double only models a custom rm"
    rewards = await load_function(args.custom_rm_path)(args, samples, **kwargs)
    if isinstance(rewards, dict | str | bytes) or not hasattr(rewards, "__iter__"):
        raise TypeError(f"custom rm returned {type(rewards).__name__} instead of an iterable of rewards")
    rewards = list(rewards)
    if len(rewards) != len(samples):
        raise ValueError(f"custom rm returned {len(rewards)} rewards for {len(samples)} samples")
    return rewards
