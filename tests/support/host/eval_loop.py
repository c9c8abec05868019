"""The host's evaluation rollout: n samples per eval prompt, the reward read with the eval key.

Mirrors eval_rollout_single_dataset (slime/rollout/sglang_rollout.py:489-624, 624b824; vime's
vllm_rollout.py alike): each prompt is deep-copied `n_samples_per_eval_prompt` times with a
running `index` and no `group_index` (:569-579), generated with `evaluation=True` through
`generate_and_rm` (so the same semaphore, hooks and rm rules apply), flattened if a generate
returned a list (:608-611), sorted by index (:615), and its rewards read as
`reward[eval_reward_key or reward_key]` when a key is set (:617-620).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from support.host.rollout_loop import RolloutState, generate_and_rm, sampling_params
from support.host.sample import Sample


async def eval_rollout_single_dataset(state: RolloutState, name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    args, tasks, index = state.args, [], 0
    params = sampling_params(args)
    for row in rows:
        prompt = Sample(prompt=row["prompt"], label=row.get("label"), metadata=copy.deepcopy(row.get("metadata") or {}))
        for _ in range(args.n_samples_per_eval_prompt):
            sample = copy.deepcopy(prompt)
            sample.index, index = index, index + 1
            tasks.append(asyncio.ensure_future(generate_and_rm(state, sample, dict(params), evaluation=True)))
    data: list[Sample] = []
    for output in await asyncio.gather(*tasks):
        data.extend(output if isinstance(output, list) else [output])
    data.sort(key=lambda sample: sample.index)
    key = args.eval_reward_key or args.reward_key
    return {
        name: {
            "rewards": [sample.reward if not key else sample.reward[key] for sample in data],
            "truncated": [sample.status == Sample.Status.TRUNCATED for sample in data],
            "samples": data,
        }
    }
