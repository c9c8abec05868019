#!/usr/bin/env bash
# GRPO training of Qwen3-4B as a MemAgent through slime (SGLang rollout) or vime (vLLM rollout):
# check every setting, start a Ray head on this node, submit the trainer's train.py with the
# mem_agent hooks, and stop only the Ray head this script started. Every setting: --help.
#
#   TRAINER_ROOT=~/slime HF_CKPT=~/models/Qwen3-4B TORCH_DIST=~/models/Qwen3-4B_torch_dist \
#   TRAIN_DATA=~/mem_agent_data/hotpotqa_train.jsonl bash examples/mem_agent/run-qwen3-4b-train.sh
#   DRY_RUN=1 ... prints the commands on any machine; MASTER_ADDR=<head> JOIN=1 ... on another node.
#
# The hooks are imported inside the trainer's Ray actors, on every node: run `pip install -e <this
# repo>` on each node (the job's PYTHONPATH also holds this checkout's examples/ folder, which is
# enough where the checkout is on a shared file system).
set -euo pipefail

PYTHON=${PYTHON:-python3} # the trainer's interpreter (its own environment), with mem-agent installed
# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
launch_help train "$@"
# Checks every setting at once (MEM_* included) and sets them, defaults and derived values filled in:
# GLOBAL_BATCH_SIZE, LR_WARMUP_ITERS, HOST_TRAINER, the ASYNC GPU split, RAY_TEMP_DIR, RUNTIME_ENV...
settings=$(launch_settings train "$@")
eval "${settings}"

# ---- the trainer's arguments, grouped by concern; each array holds the flags of one parser ------
# Qwen3-4B as the trainer's scripts/models/qwen3-4B.sh describes it. Its input and output
# embeddings are tied, so --untie-embeddings-and-output-weights must not be passed.
MODEL_ARGS=(
  --swiglu --num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128
  --use-rotary-position-embeddings --rotary-base 1000000 --disable-bias-linear
  --normalization RMSNorm --norm-epsilon 1e-6 --vocab-size 151936 --qk-layernorm
)
# --ref-load is the frozen KL reference; --load falls back to it on the first run and resumes
# from SAVE_PATH's latest iter_* afterwards.
CKPT_ARGS=(--hf-checkpoint "${HF_CKPT}" --ref-load "${TORCH_DIST}")
SAVE_ARGS=(--load "${SAVE_PATH}" --save "${SAVE_PATH}" --save-interval "${SAVE_INTERVAL}")
# No --apply-chat-template: every turn builds its own chat from the raw question (the hooks
# refuse the flag). The document travels in metadata.context.
ROLLOUT_ARGS=(
  --prompt-data "${TRAIN_DATA}" --input-key prompt --label-key label --metadata-key metadata
  --num-rollout "${NUM_ROLLOUT}" --rollout-batch-size "${ROLLOUT_BATCH_SIZE}"
  --n-samples-per-prompt "${N_SAMPLES}" --rollout-temperature "${TEMPERATURE}"
  --rollout-max-response-len "${ROLLOUT_MAX_RESPONSE_LEN}"
)
# MemAgent reads its training file in order (data.shuffle=False); the hosts shuffle only when asked.
[[ "${SHUFFLE}" != 1 ]] || ROLLOUT_ARGS+=(--rollout-shuffle)
# One optimizer update takes GLOBAL_BATCH_SIZE whole trajectories: both hosts count trajectories,
# never turn rows, and keep a trajectory's turns in one update.
BATCH_ARGS=(--global-batch-size "${GLOBAL_BATCH_SIZE}")
# The memory agent: generate runs every turn of a trajectory and returns one sample per turn;
# the reward and advantages are per trajectory, broadcast to its turns. The log hooks add the
# memory-agent metrics (counted per trajectory) to the host's own in W&B / TensorBoard, and write
# SAVE_PATH/trajectories/ (metrics.jsonl, and rollout_<id>.jsonl trajectory records).
CUSTOM_ARGS=(
  --custom-generate-function-path mem_agent.rollout.generate
  --custom-rm-path mem_agent.rollout.reward
  --custom-reward-post-process-path mem_agent.rollout.reward_post_process
  --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data
  --custom-rollout-log-function-path mem_agent.rollout_log.log_rollout
  --custom-eval-rollout-log-function-path mem_agent.rollout_log.log_eval_rollout
)
# MemAgent (verl): A = R - mean(R) per prompt without std division, PPO clip with dual clip 3.0,
# low-variance KL loss.
GRPO_ARGS=(
  --advantage-estimator grpo --use-kl-loss --kl-loss-coef "${KL_COEF}" --kl-loss-type low_var_kl
  --entropy-coef 0 --eps-clip "${EPS_CLIP}" --eps-clip-high "${EPS_CLIP_HIGH}" --eps-clip-c "${EPS_CLIP_C}"
)
[[ "${GRPO_STD_NORM}" == 1 ]] || GRPO_ARGS+=(--disable-grpo-std-normalization)
# The loss of an update is averaged over all its response tokens (MemAgent's token mean) unless
# LOSS_WEIGHTING=trajectory.
LOSS_ARGS=()
[[ "${LOSS_WEIGHTING}" == trajectory ]] || LOSS_ARGS=(--calculate-per-token-loss)
# Megatron's adam applies decoupled weight decay (AdamW), as MemAgent's torch.optim.AdamW does.
OPTIMIZER_ARGS=(
  --optimizer adam --lr "${LR}" --lr-warmup-iters "${LR_WARMUP_ITERS}" --lr-decay-style constant
  --weight-decay "${WEIGHT_DECAY}" --adam-beta1 "${ADAM_BETA1}" --adam-beta2 "${ADAM_BETA2}" --clip-grad 1.0
)
# One training row is one turn (question + memory + 5000-token chunk + response), ~7.5K tokens.
PERF_ARGS=(
  --tensor-model-parallel-size "${TP}" --sequence-parallel --pipeline-model-parallel-size "${PP}"
  --context-parallel-size "${CP}" --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
)
DYNAMIC_BATCH_ARGS=(--use-dynamic-batch-size --max-tokens-per-gpu "${MAX_TOKENS_PER_GPU}")
MISC_ARGS=(
  --attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32
  --attention-softmax-in-fp32 --attention-backend flash
)
# Evaluation during training, only with EVAL_DATA; its interval is Megatron's flag.
EVAL_INTERVAL_ARGS=()
EVAL_ARGS=()
if [[ -n "${EVAL_DATA}" ]]; then
  EVAL_INTERVAL_ARGS=(--eval-interval "${EVAL_INTERVAL}")
  EVAL_ARGS=(--eval-prompt-data hotpotqa "${EVAL_DATA}" --n-samples-per-eval-prompt 1
    --eval-temperature "${EVAL_TEMPERATURE}" --eval-top-p "${EVAL_TOP_P}")
fi
# The only flags that differ between the hosts: slime's SGLang engines take --sglang-*, vime's
# vLLM engines --vllm-* (vLLM's own engine flags, prefixed). The hooks find the router through
# args.sglang_router_ip/port or args.vllm_router_ip/port, which the host fills in itself.
BACKEND_ARGS=(--rollout-num-gpus-per-engine "${ROLLOUT_GPUS_PER_ENGINE}")
if [[ "${HOST_TRAINER}" == slime ]]; then
  BACKEND_ARGS+=(--sglang-mem-fraction-static "${SGLANG_MEM_FRACTION}" --sglang-server-concurrency "${SERVER_CONCURRENCY}")
else
  BACKEND_ARGS+=(--vllm-gpu-memory-utilization "${VLLM_GPU_MEMORY_UTILIZATION}" --vllm-server-concurrency "${SERVER_CONCURRENCY}")
fi
# Weights & Biases, only with WANDB_PROJECT (Megatron's flag; the switch and the group are the host's).
WANDB_ARGS=()
WANDB_PROJECT_ARGS=()
if [[ -n "${WANDB_PROJECT}" ]]; then
  WANDB_ARGS=(--use-wandb --wandb-group "${WANDB_GROUP}")
  WANDB_PROJECT_ARGS=(--wandb-project "${WANDB_PROJECT}")
fi
# train_async.py cannot colocate: training and rollout get GPUs of their own.
if [[ "${ASYNC}" == 1 ]]; then
  CLUSTER_ARGS=(--actor-num-nodes "${NNODES}" --actor-num-gpus-per-node "${ACTOR_GPUS_PER_NODE}"
    --rollout-num-gpus "${ROLLOUT_NUM_GPUS}")
else
  CLUSTER_ARGS=(--actor-num-nodes "${NNODES}" --actor-num-gpus-per-node "${GPUS_PER_NODE}" --colocate)
fi

# The job's command line: the entry, then every group in this order. Each group's owner is the parser
# of its flags (megatron: Megatron-LM's own, those the host only re-defaults included; host: slime's
# or vime's; user: EXTRA_BACKEND_ARGS and EXTRA_ARGS, split by Python into EXTRA_BACKEND and EXTRA).
ARGS=()
FLAG_DATA=(mem_agent-launch-flags/1 entry "${ENTRY}")
group() { # group NAME OWNER WORDS...
  ARGS+=("${@:3}")
  FLAG_DATA+=(group "$1" "$2" "$(($# - 2))" "${@:3}")
}
group CLUSTER_ARGS host "${CLUSTER_ARGS[@]}"
group MODEL_ARGS megatron "${MODEL_ARGS[@]}"
group CKPT_ARGS host "${CKPT_ARGS[@]}"
group SAVE_ARGS megatron "${SAVE_ARGS[@]}"
group ROLLOUT_ARGS host "${ROLLOUT_ARGS[@]}"
group BATCH_ARGS megatron "${BATCH_ARGS[@]}"
group CUSTOM_ARGS host "${CUSTOM_ARGS[@]}"
group GRPO_ARGS host "${GRPO_ARGS[@]}"
group LOSS_ARGS megatron "${LOSS_ARGS[@]}"
group OPTIMIZER_ARGS megatron "${OPTIMIZER_ARGS[@]}"
group PERF_ARGS megatron "${PERF_ARGS[@]}"
group DYNAMIC_BATCH_ARGS host "${DYNAMIC_BATCH_ARGS[@]}"
group MISC_ARGS megatron "${MISC_ARGS[@]}"
group EVAL_INTERVAL_ARGS megatron "${EVAL_INTERVAL_ARGS[@]}"
group EVAL_ARGS host "${EVAL_ARGS[@]}"
group BACKEND_ARGS host "${BACKEND_ARGS[@]}"
group EXTRA_BACKEND_ARGS user "${EXTRA_BACKEND[@]}"
group WANDB_ARGS host "${WANDB_ARGS[@]}"
group WANDB_PROJECT_ARGS megatron "${WANDB_PROJECT_ARGS[@]}"
group EXTRA_ARGS user "${EXTRA[@]}"
# PRINT_FLAGS=1: the launch as data for the preflight (NUL-terminated fields), nothing started.
if [[ "${PRINT_FLAGS}" == 1 ]]; then
  printf '%s\0' "${FLAG_DATA[@]}"
  exit 0
fi

# ---- the launch -------------------------------------------------------------------------------
# JOIN=1, on another node: join MASTER_ADDR's cluster and stay in the foreground (Ctrl-C leaves).
if [[ "${JOIN}" == 1 ]]; then
  run ray start --address "${MASTER_ADDR}:${RAY_PORT}" --num-gpus "${GPUS_PER_NODE}" --disable-usage-stats --block
  exit 0
fi
# A head of our own on this node (none with USE_EXISTING_RAY=1), its dashboard and job API on
# RAY_DASHBOARD_HOST (loopback unless set).
HEAD=()
[[ "${USE_EXISTING_RAY}" == 1 ]] || HEAD=(ray start --head --node-ip-address "${MASTER_ADDR}" --port "${RAY_PORT}"
  --num-gpus "${GPUS_PER_NODE}" --disable-usage-stats --dashboard-host "${RAY_DASHBOARD_HOST}"
  --dashboard-port "${RAY_DASHBOARD_PORT}" --dashboard-agent-listen-port "${RAY_AGENT_PORT}"
  --ray-client-server-port "${RAY_CLIENT_PORT}" --temp-dir "${RAY_TEMP_DIR}" --block)
# RUNTIME_ENV: PYTHONPATH, CUDA_DEVICE_MAX_CONNECTIONS=1 and the MEM_* settings you set; never a
# secret (WANDB_API_KEY reaches the workers from the environment of `ray start`).
JOB=(ray job submit --address "${RAY_JOB_ADDRESS}" --submission-id "${SUBMISSION_ID}" --runtime-env-json "${RUNTIME_ENV}"
  -- "${PYTHON}" "${ENTRY}" "${ARGS[@]}")
if [[ "${DRY_RUN}" == 1 ]]; then
  ((${#HEAD[@]} == 0)) || run "${HEAD[@]}"
  run "${JOB[@]}"
  exit 0
fi
# Python runs both: the head from TRAINER_ROOT in a session of its own, stopped with this script
# (kill -9 included) unless KEEP_RAY=1; then the job, once the head's job API answers.
exec "${PYTHON}" -m mem_agent.launch ray-job --address "${RAY_JOB_ADDRESS}" --submission-id "${SUBMISSION_ID}" \
  --save-path "${SAVE_PATH}" --head-dir "${TRAINER_ROOT}" --keep-head "${KEEP_RAY}" \
  --start-timeout "${RAY_START_TIMEOUT}" --stop-timeout "${RAY_STOP_TIMEOUT}" -- "${HEAD[@]}" -- "${JOB[@]}"
