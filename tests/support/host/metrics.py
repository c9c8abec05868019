"""`log_rollout_data` and `log_eval_rollout_data`: what the host reads from every flat sample.

Mirrors slime/observability/rollout_metrics.py (624b824) and vime/observability/rollout_metrics.py
(file index 2b83ea2), which run over the flat samples before the convert (slime/ray/rollout.py:506):
response lengths from `effective_response_length` (:45), zero-std groups by `group_index` with
`get_reward_value` and `round(reward, 1)` (:145-159), speculative-decoding rates from the
`spec_info` object when a speculative engine is configured (:192-199), prefix-cache hits from the
`prefix_cache_info` object, always (:202-210), reward categories `reward[log_reward_category]`
(:213-220), top-p kept vocabulary over `rollout_top_p_token_offsets` (:162-189), repetition over
`response` and the truncated ratio over `status` (:54-55); vime adds staleness over
`weight_versions` (vime/utils/staleness.py). Evaluation (:223-253): `eval/<name>` is the mean of the
rewards the eval loop read with `--eval-reward-key`, pass@k over `n_samples_per_eval_prompt`
with `--log-passrate` (metric_utils.py:14-40 requires the reward count to be a multiple of n).
Both entry points call `--custom-rollout-log-function-path` / `--custom-eval-rollout-log-function-
path` first, exactly as the hosts do (slime :256-260 and :223-227; vime's `log_rollout_data`
and `log_eval_rollout_data`, index 887ea48): `fn(rollout_id, args, samples, rollout_extra_metrics,
rollout_time)` and `fn(rollout_id, args, data, extra_metrics)`, a True return skipping the host's
own metrics; the host's then go through `logging_utils.log` stepped by `compute_rollout_step`
(observability.py).
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from support.host import observability
from support.host.args import backend_of
from support.host.loader import load_function
from support.host.observability import as_host_modules, compute_rollout_step
from support.host.sample import Sample


def _zero_std(args: Any, samples: list[Sample]) -> dict[str, int]:
    if args.advantage_estimator == "ppo":
        return {}
    groups: dict[Any, list[Sample]] = defaultdict(list)
    for sample in samples:
        groups[sample.group_index].append(sample)
    counts: dict[str, int] = defaultdict(int)
    for group in groups.values():
        rewards = [sample.get_reward_value(args) for sample in group]
        if all(rewards[0] == reward for reward in rewards):
            counts[f"zero_std/count_{round(group[0].get_reward_value(args), 1)}"] += 1
    return dict(counts)


def _speculative(args: Any, samples: list[Sample]) -> dict[str, float]:
    if not (getattr(args, "sglang_speculative_algorithm", None) or getattr(args, "vllm_speculative_config", None)):
        return {}
    return {
        "spec_accept_rate": mean(sample.spec_info.spec_accept_rate for sample in samples),
        "spec_accept_length": mean(sample.spec_info.spec_accept_length for sample in samples),
    }


def _prefix_cache(samples: list[Sample]) -> dict[str, float]:
    cached = sum(sample.prefix_cache_info.cached_tokens for sample in samples)
    prompt = sum(sample.prefix_cache_info.total_prompt_tokens for sample in samples)
    hit_rate = cached / prompt if prompt else 0.0
    return {"prefix_cache_hit_rate": hit_rate, "avg_cached_tokens_per_sample": cached / len(samples)}


def _reward_categories(args: Any, samples: list[Sample]) -> dict[str, float]:
    key = getattr(args, "log_reward_category", None)
    if key is None:
        return {}
    counts: dict[Any, int] = defaultdict(int)
    for sample in samples:
        counts[sample.reward[key]] += 1
    return {f"error_cat/{category}": count / len(samples) for category, count in counts.items()}


def _top_p_kept(samples: list[Sample]) -> dict[str, float]:
    kept = tokens = 0
    for sample in samples:
        offsets = sample.rollout_top_p_token_offsets
        if offsets is None or not sample.response_length or sample.remove_sample:
            continue
        assert len(offsets) == sample.response_length + 1, "top-p offsets != response length + 1"
        mask = sample.loss_mask if sample.loss_mask is not None else [1] * sample.response_length
        kept += sum(offsets[i + 1] - offsets[i] for i in range(sample.response_length) if mask[i])
        tokens += sum(mask)
    return {"top_p_kept_vocab_per_token": kept / tokens} if tokens else {}


def compute_metrics_from_samples(args: Any, samples: list[Sample]) -> dict[str, Any]:
    lengths = [sample.effective_response_length for sample in samples]
    metrics: dict[str, Any] = {"response_len/mean": mean(lengths), "response_len/max": max(lengths)}
    metrics |= _zero_std(args, samples) | _speculative(args, samples) | _prefix_cache(samples)
    metrics |= _reward_categories(args, samples) | _top_p_kept(samples)
    metrics["repetition_frac"] = mean(float(len(sample.response) > 10000) for sample in samples)
    metrics["truncated_ratio"] = mean(float(sample.status == Sample.Status.TRUNCATED) for sample in samples)
    return metrics


def _staleness(samples: list[Sample], weight_version: int | None) -> dict[str, Any]:
    if weight_version is None:
        return {}
    known = [
        weight_version - min(int(v) for v in sample.weight_versions)
        for sample in samples
        if sample.weight_versions and all(str(v).lstrip("-").isdigit() for v in sample.weight_versions)
    ]
    return {"staleness/unknown_count": len(samples) - len(known)}


def log_rollout_data(
    rollout_id: int,
    args: Any,
    samples: list[Sample],
    rollout_extra_metrics: dict[str, Any] | None,
    rollout_time: float,
    *,
    weight_version: int | None = None,
) -> dict[str, Any] | None:
    """The per-step rollout log (slime rollout_metrics.py:256-271, vime's with `weight_version`):
    the custom log function first, whose True skips the rest; returns what went to the logger."""
    with as_host_modules(backend_of(args)):
        if getattr(args, "custom_rollout_log_function_path", None) is not None:  # a preflight's args may lack it
            custom_log_func = load_function(args.custom_rollout_log_function_path)
            if custom_log_func(rollout_id, args, samples, rollout_extra_metrics, rollout_time):
                return None
        log = dict(rollout_extra_metrics or {})
        log |= {f"rollout/{key}": value for key, value in _staleness(samples, weight_version).items()}
        log |= {f"rollout/{key}": value for key, value in compute_metrics_from_samples(args, samples).items()}
        log["perf/rollout_time"] = rollout_time
        log["perf/non_generation_time_max"] = max(sample.non_generation_time for sample in samples)
        log["rollout/step"] = compute_rollout_step(args, rollout_id)
        observability.log(args, log, step_key="rollout/step")
    return log


def log_eval_rollout_data(
    rollout_id: int, args: Any, data: dict[str, dict[str, Any]], extra_metrics: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The eval log (slime rollout_metrics.py:223-253): the custom function first, as above."""
    with as_host_modules(backend_of(args)):
        if getattr(args, "custom_eval_rollout_log_function_path", None) is not None:
            custom_log_func = load_function(args.custom_eval_rollout_log_function_path)
            if custom_log_func(rollout_id, args, data, extra_metrics):
                return None
        log: dict[str, Any] = dict(extra_metrics or {})
        for name, result in data.items():
            rewards = result["rewards"]
            log[f"eval/{name}"] = sum(rewards) / len(rewards)
            for key, value in compute_metrics_from_samples(args, result["samples"]).items():
                log[f"eval/{name}/{key}"] = value
            if "truncated" in result:
                log[f"eval/{name}-truncated_ratio"] = sum(result["truncated"]) / len(result["truncated"])
            if args.log_passrate and args.n_samples_per_eval_prompt > 1:
                n = args.n_samples_per_eval_prompt
                assert len(rewards) % n == 0, f"{len(rewards)} eval rewards for groups of {n}"
                log[f"eval/{name}-pass@{n}"] = mean(max(rewards[i : i + n]) == 1 for i in range(0, len(rewards), n))
        log["eval/step"] = compute_rollout_step(args, rollout_id)
        observability.log(args, log, step_key="eval/step")
    return log
