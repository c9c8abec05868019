"""The trainer's parsed flags that our hooks and the double's host code read, with HEAD defaults.

Names and defaults are those of slime/utils/arguments.py (624b824) and vime/utils/arguments.py
(file index 035f983): `--over-sampling-batch-size` defaults to `--rollout-batch-size`
(slime arguments.py:1985-1990), `--eval-reward-key` to `--reward-key` (arguments.py:1887), and
`--disable-grpo-std-normalization` / `--disable-rewards-normalization` are store_false flags
whose defaults leave both normalisations on (arguments.py:1006-1016). `backend` picks the
router attribute spelling (`sglang_router_*` for slime, `vllm_router_*` for vime) and the
deterministic-seed flag; `train_parallel_config` is what the trainer's actors report.
"""

from __future__ import annotations

import argparse
from typing import Any

OUR_HOOKS = {
    "custom_generate_function_path": "mem_agent.rollout.generate",
    "custom_rm_path": "mem_agent.rollout.reward",
    "custom_reward_post_process_path": "mem_agent.rollout.reward_post_process",
    "custom_convert_samples_to_train_data_path": "mem_agent.custom_convert.convert_samples_to_train_data",
    "custom_rollout_log_function_path": "mem_agent.rollout_log.log_rollout",
    "custom_eval_rollout_log_function_path": "mem_agent.rollout_log.log_eval_rollout",
}


def host_args(
    router_url: str, *, backend: str = "vime", hf_checkpoint: str, n_samples_per_prompt: int, **overrides: Any
) -> argparse.Namespace:
    """A Namespace as the host's parser and validate_args leave it, pointed at `router_url`."""
    host, port = router_url.removeprefix("http://").rsplit(":", 1)
    args = argparse.Namespace(
        hf_checkpoint=hf_checkpoint,
        n_samples_per_prompt=n_samples_per_prompt,
        rollout_batch_size=1,
        over_sampling_batch_size=None,
        global_batch_size=n_samples_per_prompt,
        num_steps_per_rollout=None,
        rollout_temperature=1.0,
        rollout_top_p=1.0,
        rollout_top_k=-1,
        rollout_max_response_len=1024,
        rollout_max_context_len=None,
        rollout_stop=None,
        rollout_stop_token_ids=None,
        rollout_skip_special_tokens=False,
        rollout_seed=42,
        rollout_num_gpus=1,
        rollout_num_gpus_per_engine=1,
        n_samples_per_eval_prompt=1,
        group_rm=False,
        partial_rollout=False,
        mask_offpolicy_in_partial_rollout=False,
        dynamic_sampling_filter_path=None,
        rollout_sample_hook_path=[],
        rollout_sample_filter_path=None,
        rollout_all_samples_process_path=None,
        reward_key=None,
        eval_reward_key=None,
        log_reward_category=None,
        log_passrate=False,
        advantage_estimator="grpo",
        rewards_normalization=True,
        grpo_std_normalization=True,
        calculate_per_token_loss=False,
        apply_chat_template=False,
        use_dynamic_batch_size=True,
        max_tokens_per_gpu=16384,
        micro_batch_size=1,
        balance_data=False,
        save=None,
        wandb_always_use_train_step=False,
        **OUR_HOOKS,
    )
    if backend == "vime":
        args.vllm_router_ip, args.vllm_router_port, args.vllm_server_concurrency = host, int(port), 64
        args.vllm_enable_deterministic_inference = False
        args.vllm_speculative_config = None
    else:
        args.sglang_router_ip, args.sglang_router_port, args.sglang_server_concurrency = host, int(port), 64
        args.sglang_enable_deterministic_inference = False
        args.sglang_speculative_algorithm = None
    for name, value in overrides.items():
        setattr(args, name, value)
    finish_validation(args)
    return args


def finish_validation(args: argparse.Namespace) -> None:
    """The defaults the host's validate_args fills in after parsing (slime arguments.py:1887-1990)."""
    if args.eval_reward_key is None:
        args.eval_reward_key = args.reward_key
    if args.num_steps_per_rollout is not None:
        args.global_batch_size = args.rollout_batch_size * args.n_samples_per_prompt // args.num_steps_per_rollout
    if args.n_samples_per_prompt == 1:
        args.grpo_std_normalization = False
    if args.over_sampling_batch_size is None:
        args.over_sampling_batch_size = args.rollout_batch_size
    assert args.over_sampling_batch_size >= args.rollout_batch_size, "over_sampling_batch_size < rollout_batch_size"


def backend_of(args: argparse.Namespace) -> str:
    return "vime" if getattr(args, "vllm_router_ip", None) else "slime"


def router_url(args: argparse.Namespace) -> str:
    if backend_of(args) == "vime":
        return f"http://{args.vllm_router_ip}:{args.vllm_router_port}"
    return f"http://{args.sglang_router_ip}:{args.sglang_router_port}"


def parallel_config(dp_size: int = 1, cp_size: int = 1) -> dict[str, int]:
    """The trainer's `train_parallel_config` (slime/ray/rollout.py:754, read by build_dp_schedule)."""
    return {"dp_size": dp_size, "cp_size": cp_size, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
