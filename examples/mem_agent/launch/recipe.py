"""MemAgent's GRPO recipe for Qwen3-4B as the trainer's flags, in groups read the way slime's run
scripts are read (`MODEL_ARGS`, `CKPT_ARGS`, ...), each with why its values are what they are. A
group's owner is the parser that reads its flags, the one the preflight parses it with (`user`:
EXTRA_BACKEND_ARGS and EXTRA_ARGS, split on blanks, owner unknown); a group a setting turns off is empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mem_agent.launch.train_settings import LossWeighting, TrainSettings

Owner = Literal["megatron", "host", "user"]  # megatron: Megatron-LM's, those the host re-defaults too


@dataclass(frozen=True)
class Schedule:
    """A rollout's trajectories and the optimizer updates they make."""

    trajectories: int
    global_batch_size: int
    updates: int
    lr_warmup_iters: int


@dataclass(frozen=True)
class TrainPlan:
    """A launch whose every check passed (launch/train.py): what the recipe and the Ray commands read."""

    settings: TrainSettings
    host: str  # slime | vime
    entry: Path  # the trainer's train.py or train_async.py
    schedule: Schedule
    gpu_split: tuple[int, int] | None  # ASYNC=1: (actor GPUs per node, rollout GPUs)
    ray_job_address: str
    ray_temp_dir: str
    submission_id: str
    agent_env: dict[str, str]  # the environment the MEM_* settings are read from (MEM_PROMPTS absolute)
    runtime_env: str


@dataclass(frozen=True)
class Group:
    """One flag group of the launch: its name, the parser that owns its flags, its words."""

    name: str
    owner: Owner
    words: tuple[str, ...]

    def flags(self) -> list[str]:
        return [word for word in self.words if word.startswith("--")]


def _group(name: str, owner: Owner, *values: object) -> Group:
    """A float is written as people write it in a flag (`1e-6`, `0.7`, `3.0`), not Python's `1e-06`."""
    words = (re.sub(r"e([+-])0+(\d)", r"e\1\2", repr(v)) if isinstance(v, float) else str(v) for v in values)
    return Group(name, owner, tuple(words))


def _if(condition: bool, *values: object) -> tuple[object, ...]:
    return values if condition else ()


def recipe(plan: TrainPlan) -> tuple[Group, ...]:
    s, vllm = plan.settings, plan.host == "vime"
    actor, rollout = plan.gpu_split or (s.gpus_per_node, None)
    return (
        # train_async.py cannot colocate: training and rollout get GPUs of their own (the ASYNC split).
        _group("CLUSTER_ARGS", "host", "--actor-num-nodes", s.nnodes, "--actor-num-gpus-per-node", actor,
               *_if(s.async_mode, "--rollout-num-gpus", rollout), *_if(not s.async_mode, "--colocate")),
        # Qwen3-4B as the trainer's scripts/models/qwen3-4B.sh describes it. Its input and output
        # embeddings are tied, so --untie-embeddings-and-output-weights must not be passed.
        _group("MODEL_ARGS", "megatron", *"""
            --swiglu --num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728
            --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128
            --use-rotary-position-embeddings --rotary-base 1000000 --disable-bias-linear
            --normalization RMSNorm --norm-epsilon 1e-6 --vocab-size 151936 --qk-layernorm
        """.split()),
        # --ref-load is the frozen KL reference; --load falls back to it on the first run and resumes
        # from SAVE_PATH's latest iter_* afterwards.
        _group("CKPT_ARGS", "host", "--hf-checkpoint", s.hf_ckpt, "--ref-load", s.torch_dist),
        _group("SAVE_ARGS", "megatron", "--load", s.save_path, "--save", s.save_path,
               "--save-interval", s.save_interval),
        # No --apply-chat-template: every turn builds its own chat from the raw question (the hooks
        # refuse the flag). The document travels in metadata.context. MemAgent reads its training
        # file in order (data.shuffle=False); the hosts shuffle only with SHUFFLE=1.
        _group("ROLLOUT_ARGS", "host", "--prompt-data", s.train_data,
               *"--input-key prompt --label-key label --metadata-key metadata".split(),
               "--num-rollout", s.num_rollout, "--rollout-batch-size", s.rollout_batch_size,
               "--n-samples-per-prompt", s.n_samples, "--rollout-temperature", s.temperature,
               "--rollout-max-response-len", s.rollout_max_response_len, *_if(s.shuffle, "--rollout-shuffle")),
        # One optimizer update takes GLOBAL_BATCH_SIZE whole trajectories: both hosts count
        # trajectories, never turn rows, and keep a trajectory's turns in one update.
        _group("BATCH_ARGS", "megatron", "--global-batch-size", plan.schedule.global_batch_size),
        # The memory agent: generate runs every turn of a trajectory and returns one sample per turn;
        # the reward and advantages are per trajectory, broadcast to its turns. The log hooks add the
        # memory-agent metrics (counted per trajectory) to the host's own in W&B / TensorBoard, and
        # write SAVE_PATH/trajectories/ (metrics.jsonl, and rollout_<id>.jsonl trajectory records).
        _group("CUSTOM_ARGS", "host", *"""
            --custom-generate-function-path mem_agent.rollout.generate
            --custom-rm-path mem_agent.rollout.reward
            --custom-reward-post-process-path mem_agent.rollout.reward_post_process
            --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data
            --custom-rollout-log-function-path mem_agent.rollout_log.log_rollout
            --custom-eval-rollout-log-function-path mem_agent.rollout_log.log_eval_rollout
        """.split()),
        # MemAgent (verl): A = R - mean(R) per prompt without std division (GRPO_STD_NORM=1 divides),
        # PPO clip with dual clip, low-variance KL loss.
        _group("GRPO_ARGS", "host", *"--advantage-estimator grpo --use-kl-loss --kl-loss-coef".split(), s.kl_coef,
               *"--kl-loss-type low_var_kl --entropy-coef 0".split(), "--eps-clip", s.eps_clip,
               "--eps-clip-high", s.eps_clip_high, "--eps-clip-c", s.eps_clip_c,
               *_if(not s.grpo_std_norm, "--disable-grpo-std-normalization")),
        # The loss of an update is averaged over all its response tokens (MemAgent's token mean)
        # unless LOSS_WEIGHTING=trajectory.
        _group("LOSS_ARGS", "megatron", *_if(s.loss_weighting == LossWeighting.TOKEN, "--calculate-per-token-loss")),
        # Megatron's adam applies decoupled weight decay (AdamW), as MemAgent's torch.optim.AdamW does.
        _group("OPTIMIZER_ARGS", "megatron", "--optimizer", "adam", "--lr", s.lr,
               "--lr-warmup-iters", plan.schedule.lr_warmup_iters, "--lr-decay-style", "constant",
               "--weight-decay", s.weight_decay, "--adam-beta1", s.adam_beta1, "--adam-beta2", s.adam_beta2,
               "--clip-grad", "1.0"),
        # One training row is one turn (question + memory + 5000-token chunk + response), ~7.5K tokens.
        _group("PERF_ARGS", "megatron", "--tensor-model-parallel-size", s.tp, "--sequence-parallel",
               "--pipeline-model-parallel-size", s.pp, "--context-parallel-size", s.cp,
               *"--recompute-granularity full --recompute-method uniform --recompute-num-layers 1".split()),
        _group("DYNAMIC_BATCH_ARGS", "host", "--use-dynamic-batch-size", "--max-tokens-per-gpu", s.max_tokens_per_gpu),
        _group("MISC_ARGS", "megatron", *"""
            --attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32
            --attention-softmax-in-fp32 --attention-backend flash
        """.split()),
        # Evaluation during training, only with EVAL_DATA; its interval is Megatron's flag.
        _group("EVAL_INTERVAL_ARGS", "megatron", *_if(bool(s.eval_data), "--eval-interval", s.eval_interval)),
        _group("EVAL_ARGS", "host", *_if(bool(s.eval_data), "--eval-prompt-data", "hotpotqa", s.eval_data,
               "--n-samples-per-eval-prompt", 1, "--eval-temperature", s.eval_temperature,
               "--eval-top-p", s.eval_top_p)),
        # The only flags that differ between the hosts: slime's SGLang engines take --sglang-*,
        # vime's vLLM engines --vllm-* (vLLM's own engine flags, prefixed). The hooks find the router
        # through args.sglang_router_ip/port or args.vllm_router_ip/port, which the host fills in.
        _group("BACKEND_ARGS", "host", "--rollout-num-gpus-per-engine", s.rollout_gpus_per_engine,
               *_if(not vllm, "--sglang-mem-fraction-static", s.sglang_mem_fraction,
                    "--sglang-server-concurrency", s.server_concurrency),
               *_if(vllm, "--vllm-gpu-memory-utilization", s.vllm_gpu_memory_utilization,
                    "--vllm-server-concurrency", s.server_concurrency)),
        # The user's words are split on blanks only, never evaluated: a quote stays a character.
        _group("EXTRA_BACKEND_ARGS", "user", *s.extra_backend_args.split()),
        # Weights & Biases, only with WANDB_PROJECT (Megatron's flag; the switch and the group are the host's).
        _group("WANDB_ARGS", "host", *_if(bool(s.wandb_project), "--use-wandb", "--wandb-group", s.wandb_group)),
        _group("WANDB_PROJECT_ARGS", "megatron", *_if(bool(s.wandb_project), "--wandb-project", s.wandb_project)),
        _group("EXTRA_ARGS", "user", *s.extra_args.split()),
    )  # fmt: skip
