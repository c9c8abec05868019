"""The host's own flags (its extra-args provider over Megatron's parser) and its validation.

Mirrors `get_slime_extra_args_provider` and `slime_validate_args` (slime/utils/arguments.py:35-1580,
1767-2075 at 624b824; vime/utils/arguments.py alike, 035f983) for the flags our launch script
passes and the ones the rollout path reads, with their HEAD defaults: `--data-source-path` and
`--rollout-function-path` default to the host's own modules (arguments.py:329-331, 639-641;
vime's data source lives at vime/data/data_source.py), `--eval-function-path` falls back to the
rollout function, `--ref-load` must be a Megatron checkpoint folder, and validate_args fills the
derived values of args.py's `finish_validation`. Megatron's and the engines' flags are not here:
the preflight stands in for those parsers, as it does for the real hosts.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from support.host.args import finish_validation

_VALUES: dict[str, tuple[type, Any]] = {
    "--actor-num-nodes": (int, 1),
    "--actor-num-gpus-per-node": (int, 8),
    "--rollout-num-gpus": (int, None),
    "--hf-checkpoint": (str, None),
    "--ref-load": (str, None),
    "--prompt-data": (str, None),
    "--input-key": (str, "input"),
    "--label-key": (str, None),
    "--metadata-key": (str, "metadata"),
    "--tool-key": (str, "tools"),
    "--num-rollout": (int, None),
    "--rollout-batch-size": (int, None),
    "--n-samples-per-prompt": (int, 1),
    "--over-sampling-batch-size": (int, None),
    "--num-steps-per-rollout": (int, None),
    "--rollout-temperature": (float, 1.0),
    "--rollout-top-p": (float, 1.0),
    "--rollout-top-k": (int, -1),
    "--rollout-max-response-len": (int, 1024),
    "--rollout-max-context-len": (int, None),
    "--rollout-seed": (int, 42),
    "--rollout-num-gpus-per-engine": (int, 1),
    "--custom-generate-function-path": (str, None),
    "--custom-rm-path": (str, None),
    "--custom-reward-post-process-path": (str, None),
    "--custom-convert-samples-to-train-data-path": (str, None),
    # read by log_rollout_data / log_eval_rollout_data (observability/rollout_metrics.py:223-226, 256-259)
    "--custom-rollout-log-function-path": (str, None),
    "--custom-eval-rollout-log-function-path": (str, None),
    "--eval-function-path": (str, None),
    "--dynamic-sampling-filter-path": (str, None),
    "--rollout-sample-filter-path": (str, None),
    "--rollout-all-samples-process-path": (str, None),
    "--reward-key": (str, None),
    "--eval-reward-key": (str, None),
    "--log-reward-category": (str, None),
    "--advantage-estimator": (str, "grpo"),
    "--kl-loss-coef": (float, 0.0),
    "--kl-loss-type": (str, "k1"),
    "--entropy-coef": (float, 0.0),
    "--eps-clip": (float, 0.2),
    "--eps-clip-high": (float, None),
    "--eps-clip-c": (float, None),
    "--max-tokens-per-gpu": (int, None),
    "--n-samples-per-eval-prompt": (int, 1),
    "--eval-interval": (int, None),
    "--eval-temperature": (float, None),
    "--eval-top-p": (float, None),
    "--wandb-project": (str, None),
    "--wandb-group": (str, None),
    "--rollout-data-transport": (str, "object-store"),
}
_SWITCHES = (
    "--colocate",
    "--rollout-shuffle",
    "--rollout-skip-special-tokens",
    "--group-rm",
    "--partial-rollout",
    "--mask-offpolicy-in-partial-rollout",
    "--log-passrate",
    "--calculate-per-token-loss",
    "--use-kl-loss",
    "--use-dynamic-batch-size",
    "--balance-data",
    "--apply-chat-template",
    "--use-wandb",
    "--ci-test",
)
# store_false switches: (flag, attribute) with the attribute True unless the flag is passed.
_OFF_SWITCHES = (
    ("--disable-rewards-normalization", "rewards_normalization"),
    ("--disable-grpo-std-normalization", "grpo_std_normalization"),
    ("--disable-rollout-global-dataset", "rollout_global_dataset"),
)
DEFAULT_PATHS = {
    "slime": {
        "--data-source-path": "slime.rollout.data_source.RolloutDataSourceWithBuffer",
        "--rollout-function-path": "slime.rollout.sglang_rollout.generate_rollout",
    },
    "vime": {  # current vime: no parser default; validate_args fills it (vime_validate_args)
        "--data-source-path": None,
        "--rollout-function-path": "vime.rollout.vllm_rollout.generate_rollout",
    },
}


def add_host_arguments(parser: argparse.ArgumentParser, host: str, drop: tuple[str, ...] = ()) -> None:
    """The host's own flags on `parser` (`drop` leaves some out, as a changed host would)."""
    for flag, (kind, default) in _VALUES.items():
        if flag not in drop:
            parser.add_argument(flag, type=kind, default=default)
    for flag, default in DEFAULT_PATHS[host].items():
        if flag not in drop:
            parser.add_argument(flag, type=str, default=default)
    for flag in _SWITCHES:
        if flag not in drop:
            parser.add_argument(flag, action="store_true", default=False)
    for flag, dest in _OFF_SWITCHES:
        if flag not in drop:
            parser.add_argument(flag, action="store_false", dest=dest)
    parser.add_argument("--rollout-sample-hook-path", nargs="*", default=[])
    parser.add_argument("--eval-prompt-data", nargs="*", default=None)
    parser.add_argument("--rollout-stop", nargs="*", default=None)
    parser.add_argument("--rollout-stop-token-ids", nargs="*", type=int, default=None)


def pre_parse_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags the host reads before its main parser (slime's `_pre_parse_mode`, arguments.py:1584)."""
    parser.add_argument("--train-backend", type=str, choices=["megatron"], default="megatron")
    parser.add_argument("--debug-rollout-only", action="store_true", default=False)
    parser.add_argument("--debug-train-only", action="store_true", default=False)
    parser.add_argument("--load-debug-rollout-data", type=str, default=None)


def validate_host_args(args: argparse.Namespace) -> None:
    """validate_args' checks and derived values on the rollout path."""
    if args.ref_load is not None and not (Path(args.ref_load) / "latest_checkpointed_iteration.txt").exists():
        raise FileNotFoundError(f"ref_load {args.ref_load} does not have latest_checkpointed_iteration.txt")
    if args.colocate and args.rollout_num_gpus is None:
        args.rollout_num_gpus = args.actor_num_nodes * args.actor_num_gpus_per_node
    if args.data_source_path is None:
        args.data_source_path = "vime.data.data_source.RolloutDataSourceWithBuffer"
    if args.eval_function_path is None:
        args.eval_function_path = args.rollout_function_path
    if args.use_dynamic_batch_size:
        assert args.max_tokens_per_gpu is not None, "max_tokens_per_gpu must be set when use_dynamic_batch_size is set"
    if not hasattr(args, "micro_batch_size") or args.micro_batch_size is None:
        args.micro_batch_size = 1
    finish_validation(args)
