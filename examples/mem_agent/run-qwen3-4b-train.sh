#!/usr/bin/env bash
# GRPO training of Qwen3-4B as a MemAgent through slime (SGLang rollout) or vime (vLLM rollout).
#
#   TRAINER_ROOT=~/slime HF_CKPT=~/models/Qwen3-4B TORCH_DIST=~/models/Qwen3-4B_torch_dist \
#   TRAIN_DATA=~/data/hotpotqa_train.jsonl bash examples/mem_agent/run-qwen3-4b-train.sh
#   DRY_RUN=1 ... prints every command instead of running it.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/run-qwen3-4b-train.sh

Paths
  TRAINER_ROOT      slime or vime checkout, run from there (default: ~/slime)
  HOST_TRAINER      slime | vime (default: detected from TRAINER_ROOT)
  MEGATRON_PATH     Megatron-LM checkout (default: TRAINER_ROOT/../Megatron-LM)
  HF_CKPT           Qwen3-4B in Hugging Face format (default: ~/models/Qwen3-4B)
  TORCH_DIST        the same in Megatron torch_dist format, from the trainer's
                    tools/convert_hf_to_torch_dist.py (default: ~/models/Qwen3-4B_torch_dist)
  TRAIN_DATA        JSONL from `python -m mem_agent.prepare_data` (default: ~/mem_agent_data/hotpotqa_train.jsonl)
  SAVE_PATH         checkpoints go here as iter_XXXXXXX (default: ~/mem_agent_runs/qwen3-4b-memagent)
Recipe (MemAgent's GRPO settings)
  NUM_ROLLOUT=100  ROLLOUT_BATCH_SIZE=128  N_SAMPLES=16  GLOBAL_BATCH_SIZE=2048  SAVE_INTERVAL=50
  LR=1e-6  LR_WARMUP_ITERS=20  KL_COEF=0.001 (low_var_kl)  EPS_CLIP=0.2  EPS_CLIP_HIGH=0.2  TEMPERATURE=1.0
  ROLLOUT_MAX_RESPONSE_LEN=1024 (the host's budget; each turn's is MEM_MAX_MEMORY / MEM_MAX_FINAL)
  MEM_* agent settings are forwarded to every worker when set (see the README's settings table)
Cluster
  NNODES=1  GPUS_PER_NODE=8  MASTER_ADDR=127.0.0.1  RAY_PORT=6379  RAY_DASHBOARD_HOST=127.0.0.1
  RAY_DASHBOARD_PORT=8265  USE_EXISTING_RAY=1 (submit to a running cluster)  JOIN=1 (on a worker node: join
  MASTER_ADDR's cluster and wait)  KEEP_RAY=1 (leave the head we started running)  ASYNC=1 (train_async.py,
  not colocated)
Performance
  TP=2  ROLLOUT_GPUS_PER_ENGINE=1  MAX_TOKENS_PER_GPU=9216  SGLANG_MEM_FRACTION=0.7 (slime)
  VLLM_GPU_MEMORY_UTILIZATION=0.7 (vime)  SERVER_CONCURRENCY=64
Extra
  WANDB_PROJECT, WANDB_GROUP (logging on when WANDB_PROJECT is set; WANDB_API_KEY only from the environment)
  EXTRA_BACKEND_ARGS, EXTRA_ARGS (appended, word-split)  PYTHON=python3  DRY_RUN=1
USAGE
}

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  usage
  exit 0
fi

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

NUM_ROLLOUT=${NUM_ROLLOUT:-100}
ROLLOUT_BATCH_SIZE=${ROLLOUT_BATCH_SIZE:-128}
N_SAMPLES=${N_SAMPLES:-16}
GLOBAL_BATCH_SIZE=${GLOBAL_BATCH_SIZE:-2048}
SAVE_INTERVAL=${SAVE_INTERVAL:-50}
LR=${LR:-1e-6}
LR_WARMUP_ITERS=${LR_WARMUP_ITERS:-20}
KL_COEF=${KL_COEF:-0.001}
EPS_CLIP=${EPS_CLIP:-0.2}
EPS_CLIP_HIGH=${EPS_CLIP_HIGH:-0.2}
TEMPERATURE=${TEMPERATURE:-1.0}
ROLLOUT_MAX_RESPONSE_LEN=${ROLLOUT_MAX_RESPONSE_LEN:-1024} # the host's own budget; turns use MEM_MAX_MEMORY/FINAL
NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
RAY_PORT=${RAY_PORT:-6379}
RAY_DASHBOARD_HOST=${RAY_DASHBOARD_HOST:-127.0.0.1}
RAY_DASHBOARD_PORT=${RAY_DASHBOARD_PORT:-8265}
USE_EXISTING_RAY=${USE_EXISTING_RAY:-0}
JOIN=${JOIN:-0}
KEEP_RAY=${KEEP_RAY:-0}
ASYNC=${ASYNC:-0}
TP=${TP:-2}
ROLLOUT_GPUS_PER_ENGINE=${ROLLOUT_GPUS_PER_ENGINE:-1}
MAX_TOKENS_PER_GPU=${MAX_TOKENS_PER_GPU:-9216}
SGLANG_MEM_FRACTION=${SGLANG_MEM_FRACTION:-0.7}
VLLM_GPU_MEMORY_UTILIZATION=${VLLM_GPU_MEMORY_UTILIZATION:-0.7}
SERVER_CONCURRENCY=${SERVER_CONCURRENCY:-64}
RAY_START_TIMEOUT=${RAY_START_TIMEOUT:-120}

if [[ "${JOIN}" == "1" ]]; then
  need_cmd ray "install the trainer's requirements on this node"
  report_missing
  echo "joining the Ray cluster at ${MASTER_ADDR}:${RAY_PORT}; Ctrl-C leaves it"
  run ray start --address "${MASTER_ADDR}:${RAY_PORT}" --num-gpus "${GPUS_PER_NODE}" --disable-usage-stats --block
  exit 0
fi

HOST=$(detect_host_trainer)
need_path TRAINER_ROOT "slime or vime checkout"
[[ "${HOST}" != "unknown" ]] || MISSING+=("HOST_TRAINER: ${TRAINER_ROOT} has neither slime/ nor vime/; set HOST_TRAINER")
need_path MEGATRON_PATH "Megatron-LM checkout"
need_path HF_CKPT "Hugging Face checkpoint"
need_path TORCH_DIST "Megatron torch_dist checkpoint"
need_path TRAIN_DATA "training JSONL"
need_cmd ray "install the trainer's requirements"
need_cmd "${PYTHON}" "a Python with the trainer and mem_agent installed"
report_missing
TRAIN_SCRIPT=train.py
[[ "${ASYNC}" == "1" ]] && TRAIN_SCRIPT=train_async.py
[[ -f "${TRAINER_ROOT}/${TRAIN_SCRIPT}" ]] || die "${TRAINER_ROOT}/${TRAIN_SCRIPT} not found"

MODEL_ARGS=(
  --swiglu --num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728
  --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128
  --use-rotary-position-embeddings --rotary-base 1000000 --disable-bias-linear
  --normalization RMSNorm --norm-epsilon 1e-6 --vocab-size 151936 --qk-layernorm
)
CKPT_ARGS=(
  --hf-checkpoint "${HF_CKPT}" --ref-load "${TORCH_DIST}"
  --load "${SAVE_PATH}" --save "${SAVE_PATH}" --save-interval "${SAVE_INTERVAL}"
)
ROLLOUT_ARGS=(
  --prompt-data "${TRAIN_DATA}" --input-key prompt --label-key label --metadata-key metadata
  --rollout-shuffle --num-rollout "${NUM_ROLLOUT}" --rollout-batch-size "${ROLLOUT_BATCH_SIZE}"
  --n-samples-per-prompt "${N_SAMPLES}" --rollout-temperature "${TEMPERATURE}"
  --rollout-max-response-len "${ROLLOUT_MAX_RESPONSE_LEN}" --global-batch-size "${GLOBAL_BATCH_SIZE}"
)
# The memory agent: our generate hook runs every turn; every turn becomes its own training row.
CUSTOM_ARGS=(
  --custom-generate-function-path mem_agent.rollout.generate
  --custom-rm-path mem_agent.rollout.reward
  --custom-reward-post-process-path mem_agent.rollout.reward_post_process
  --custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data
)
GRPO_ARGS=(
  --advantage-estimator grpo --use-kl-loss --kl-loss-coef "${KL_COEF}" --kl-loss-type low_var_kl
  --entropy-coef 0 --eps-clip "${EPS_CLIP}" --eps-clip-high "${EPS_CLIP_HIGH}"
)
OPTIMIZER_ARGS=(
  --optimizer adam --lr "${LR}" --lr-warmup-iters "${LR_WARMUP_ITERS}" --lr-decay-style constant
  --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.98
)
PERF_ARGS=(
  --tensor-model-parallel-size "${TP}" --sequence-parallel --pipeline-model-parallel-size 1
  --context-parallel-size 1 --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
  --use-dynamic-batch-size --max-tokens-per-gpu "${MAX_TOKENS_PER_GPU}"
)
MISC_ARGS=(
  --attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32
  --attention-softmax-in-fp32 --attention-backend flash
)
if [[ "${HOST}" == "slime" ]]; then
  BACKEND_ARGS=(--rollout-num-gpus-per-engine "${ROLLOUT_GPUS_PER_ENGINE}"
    --sglang-mem-fraction-static "${SGLANG_MEM_FRACTION}" --sglang-server-concurrency "${SERVER_CONCURRENCY}")
else
  BACKEND_ARGS=(--rollout-num-gpus-per-engine "${ROLLOUT_GPUS_PER_ENGINE}"
    --vllm-gpu-memory-utilization "${VLLM_GPU_MEMORY_UTILIZATION}" --vllm-server-concurrency "${SERVER_CONCURRENCY}")
fi
WANDB_ARGS=()
if [[ -n "${WANDB_PROJECT:-}" ]]; then
  WANDB_ARGS=(--use-wandb --wandb-project "${WANDB_PROJECT}" --wandb-group "${WANDB_GROUP:-qwen3-4b-memagent}")
fi
read -r -a EXTRA_BACKEND <<<"${EXTRA_BACKEND_ARGS:-}"
read -r -a EXTRA <<<"${EXTRA_ARGS:-}"
CLUSTER_ARGS=(--actor-num-nodes "${NNODES}" --actor-num-gpus-per-node "${GPUS_PER_NODE}")
[[ "${ASYNC}" == "1" ]] || CLUSTER_ARGS+=(--colocate) # train_async.py cannot colocate

RAY_PGID=""
stop_ray_head() {
  if [[ -n "${RAY_PGID}" && "${KEEP_RAY}" != "1" ]]; then
    echo "stopping the Ray head this script started (process group ${RAY_PGID})"
    kill -TERM -- "-${RAY_PGID}" 2>/dev/null || true
  fi
}

start_ray_head() {
  local log="${SAVE_PATH}/ray_head.log"
  local head=(ray start --head --node-ip-address "${MASTER_ADDR}" --port "${RAY_PORT}" --num-gpus "${GPUS_PER_NODE}"
    --disable-usage-stats --dashboard-host "${RAY_DASHBOARD_HOST}" --dashboard-port "${RAY_DASHBOARD_PORT}" --block)
  if [[ "${DRY_RUN}" == "1" ]]; then
    run "${head[@]}"
    return
  fi
  mkdir -p "${SAVE_PATH}"
  # --block keeps `ray start` in the foreground of its own session: signalling that process group
  # (and Ray's reaper, which follows its parent) stops exactly this head and nothing else.
  setsid "${head[@]}" >"${log}" 2>&1 </dev/null &
  RAY_PGID=$!
  trap stop_ray_head EXIT
  local waited=0
  until ray status --address "${MASTER_ADDR}:${RAY_PORT}" >/dev/null 2>&1; do
    kill -0 "${RAY_PGID}" 2>/dev/null || { tail -n 20 "${log}" >&2; die "ray start failed; log: ${log}"; }
    ((waited < RAY_START_TIMEOUT)) || die "Ray head not up after ${RAY_START_TIMEOUT} s; log: ${log}"
    sleep 2
    waited=$((waited + 2))
  done
  echo "Ray head up at ${MASTER_ADDR}:${RAY_PORT} (dashboard ${RAY_DASHBOARD_HOST}:${RAY_DASHBOARD_PORT}, log ${log})"
}

if [[ "${USE_EXISTING_RAY}" != "1" ]]; then
  start_ray_head
fi
if ((NNODES > 1)); then
  echo "on each of the other $((NNODES - 1)) node(s), run: MASTER_ADDR=${MASTER_ADDR} RAY_PORT=${RAY_PORT} JOIN=1 bash $0"
fi

echo "host trainer: ${HOST} (${TRAINER_ROOT}); runtime env: $(runtime_env_json)"
cd "${TRAINER_ROOT}"
run ray job submit --address "http://${RAY_DASHBOARD_HOST}:${RAY_DASHBOARD_PORT}" \
  --runtime-env-json "$(runtime_env_json)" -- \
  "${PYTHON}" "${TRAIN_SCRIPT}" "${CLUSTER_ARGS[@]}" "${MODEL_ARGS[@]}" "${CKPT_ARGS[@]}" "${ROLLOUT_ARGS[@]}" \
  "${CUSTOM_ARGS[@]}" "${GRPO_ARGS[@]}" "${OPTIMIZER_ARGS[@]}" "${PERF_ARGS[@]}" "${MISC_ARGS[@]}" \
  "${BACKEND_ARGS[@]}" "${EXTRA_BACKEND[@]}" "${WANDB_ARGS[@]}" "${EXTRA[@]}"
