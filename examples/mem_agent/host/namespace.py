"""The trainer's parsed flags for check_host: what slime's or vime's parser leaves on `args`.

The preflight cannot run the trainer's own parser (it is Megatron's, with the engines' flags
on top), so it builds the Namespace the rollout path reads: the values our launch script passes,
the parser defaults those paths read, and the derived values `validate_args` fills in
(`eval_reward_key`, `over_sampling_batch_size`, no std normalisation when n = 1). Any flag the
checked code reads and this list does not name reads as None, the parser default of every
optional path and switch.
"""

from __future__ import annotations

import argparse
import json
import urllib.parse
from pathlib import Path
from typing import Any

from mem_agent.common.usage import UsageError

LAUNCH_HOOKS = {
    "custom_generate_function_path": "mem_agent.rollout.generate",
    "custom_rm_path": "mem_agent.rollout.reward",
    "custom_reward_post_process_path": "mem_agent.rollout.reward_post_process",
    "custom_convert_samples_to_train_data_path": "mem_agent.custom_convert.convert_samples_to_train_data",
    "custom_rollout_log_function_path": "mem_agent.rollout_log.log_rollout",
    "custom_eval_rollout_log_function_path": "mem_agent.rollout_log.log_eval_rollout",
}
PARSER_DEFAULTS: dict[str, Any] = {
    "rollout_global_dataset": True,
    "input_key": "prompt",
    "label_key": "label",
    "metadata_key": "metadata",
    "tool_key": "tools",
    "apply_chat_template": False,
    "apply_chat_template_kwargs": {},
    "rollout_shuffle": False,
    "rollout_seed": 42,
    "rollout_temperature": 1.0,
    "rollout_top_p": 1.0,
    "rollout_top_k": -1,
    "rollout_max_response_len": 1024,
    "rollout_skip_special_tokens": False,
    "rollout_sample_hook_path": [],
    "rollout_num_gpus": 1,
    "rollout_num_gpus_per_engine": 1,
    "advantage_estimator": "grpo",
    "rewards_normalization": True,
    "grpo_std_normalization": False,  # the launch script's --disable-grpo-std-normalization
    "calculate_per_token_loss": True,  # the launch script's default loss weighting
    "use_dynamic_batch_size": True,
    "max_tokens_per_gpu": 9216,
    "micro_batch_size": 1,
    "rollout_data_transport": "object-store",
    "ci_test": False,
}


class TrainerArgs(argparse.Namespace):
    """A Namespace whose unset flags read as None, as the trainer's parser leaves them."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def router_address(url: str) -> tuple[str, int]:
    """The address and port a trainer's args hold for its router (`--sglang-router-ip/port`, or the
    vllm ones); the hooks call it over plain http, so anything else a URL says could not be honoured."""
    problem = f"--url {url} must be http://HOST:PORT, the router as the trainer's args hold it"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as error:  # a port that is not a number, a malformed IPv6 address
        raise UsageError(f"{problem} ({error})") from None
    if parts.scheme == "https":
        raise UsageError(f"{problem}: the hooks reach the router over http (the args hold no scheme)")
    if parts.scheme != "http" or not parts.hostname:
        raise UsageError(problem)
    if port is None:
        raise UsageError(f"{problem}: give the port")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise UsageError(f"{problem}: no path, query or user (the args hold only the address and port)")
    return parts.hostname, port


def host_namespace(host: str, url: str, tokenizer: str, prompts: Path, options: argparse.Namespace) -> TrainerArgs:
    address, port = router_address(url)
    engine = "sglang" if host == "slime" else "vllm"
    args = TrainerArgs(**PARSER_DEFAULTS, **LAUNCH_HOOKS)
    args.hf_checkpoint = tokenizer
    args.prompt_data = str(prompts)
    args.rollout_batch_size = options.num_prompts
    args.n_samples_per_prompt = options.n_samples
    args.global_batch_size = options.n_samples
    setattr(args, f"{engine}_router_ip", address)
    setattr(args, f"{engine}_router_port", port)
    setattr(args, f"{engine}_server_concurrency", 64)
    setattr(args, f"{engine}_dp_size", 1)
    for item in options.host_flag:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--host-flag {item!r} must be NAME=VALUE, with the flag's attribute name")
        setattr(args, name, _value(text))
    if args.eval_reward_key is None:
        args.eval_reward_key = args.reward_key
    if args.over_sampling_batch_size is None:
        args.over_sampling_batch_size = args.rollout_batch_size
    if args.n_samples_per_prompt == 1:
        args.grpo_std_normalization = False
    return args
