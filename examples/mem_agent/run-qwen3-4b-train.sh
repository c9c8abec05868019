#!/usr/bin/env bash
# GRPO training of Qwen3-4B as a MemAgent through slime (SGLang rollout) or vime (vLLM rollout):
# validate everything, start a Ray head on this node, submit the trainer's train.py with the
# mem_agent hooks, and stop only the Ray head this script started.
#
#   TRAINER_ROOT=~/slime HF_CKPT=~/models/Qwen3-4B TORCH_DIST=~/models/Qwen3-4B_torch_dist \
#   TRAIN_DATA=~/mem_agent_data/hotpotqa_train.jsonl bash examples/mem_agent/run-qwen3-4b-train.sh
#
# The hooks are imported inside the trainer's Ray actors, on every node: run `pip install -e <this
# repo>` on each node (the job's PYTHONPATH also holds this checkout's examples/ folder, which is
# enough where the checkout is on a shared file system).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/run-qwen3-4b-train.sh [-h | --help]

Paths (relative paths are made absolute)
  TRAINER_ROOT      slime or vime checkout (default: ~/slime)
  HOST_TRAINER      slime | vime (default: detected: TRAINER_ROOT has a slime/ or vime/ folder)
  MEGATRON_PATH     Megatron-LM checkout, put on the workers' PYTHONPATH (default: TRAINER_ROOT/../Megatron-LM)
  HF_CKPT           Qwen3-4B in Hugging Face format (default: ~/models/Qwen3-4B)
  TORCH_DIST        the same in Megatron torch_dist format, made by the trainer's
                    tools/convert_hf_to_torch_dist.py (default: ~/models/Qwen3-4B_torch_dist)
  TRAIN_DATA        JSONL from `python -m mem_agent.prepare_data` (default: ~/mem_agent_data/hotpotqa_train.jsonl)
  SAVE_PATH         checkpoints (iter_XXXXXXX), trajectories/ (metrics and records), Ray logs and the head's log
                    (default: ~/mem_agent_runs/qwen3-4b-memagent)
Recipe (MemAgent's GRPO; the recipe table of docs/training.md gives each value's source)
  NUM_ROLLOUT=100  ROLLOUT_BATCH_SIZE=128 (prompts per rollout)  N_SAMPLES=16 (trajectories per prompt)
  UPDATES_PER_ROLLOUT=16  optimizer updates per rollout (MemAgent: 128 prompts in mini-batches of 8)
  GLOBAL_BATCH_SIZE trajectories per optimizer update (default: ROLLOUT_BATCH_SIZE x N_SAMPLES /
                    UPDATES_PER_ROLLOUT = 128). slime HEAD and current vime both count this in
                    trajectories (rollouts), never in turn rows, and keep a trajectory's turns in one update
  LOSS_WEIGHTING=token  token: --calculate-per-token-loss, every response token of an update's turn rows
                    weighs the same (MemAgent's token mean); trajectory: each trajectory weighs the same
                    (the hosts' default reducer, dividing by the trajectory's token total)
  GRPO_STD_NORM=0   1 divides advantages by the group std (the hosts' default); MemAgent's recipe does not
  LR=1e-6  LR_WARMUP_ITERS (default: 20 x UPDATES_PER_ROLLOUT: MemAgent warms up over 20 rollouts)
  WEIGHT_DECAY=0.01  ADAM_BETA1=0.9  ADAM_BETA2=0.999 (AdamW; Megatron's adam decouples weight decay)
  KL_COEF=0.001 (low_var_kl)  EPS_CLIP=0.2  EPS_CLIP_HIGH=0.2  EPS_CLIP_C=3.0 (dual clip)  SAVE_INTERVAL=50
  TEMPERATURE=1.0   ROLLOUT_MAX_RESPONSE_LEN=1024 (the host's budget; each turn uses MEM_MAX_MEMORY / MEM_MAX_FINAL)
  SHUFFLE=0         0: prompts in file order (MemAgent's data.shuffle=False); 1: --rollout-shuffle
  MEM_*             agent settings (chunk size, memory size, mode, ...; see docs/settings.md),
                    validated here and sent to every worker only when set; Python owns their defaults.
                    Every agent setting the job gets, set or defaulted, is printed before it starts
  MEM_TRAJECTORY_EVERY=1  MEM_TRAJECTORY_COUNT=8  trajectory records: every N rollouts, this many
                    trajectories (correct and wrong), under SAVE_PATH/trajectories/ (at most ~0.4 MB a
                    rollout for 8-chunk documents); 0 = none. `python -m mem_agent.train_summary SAVE_PATH` plots the run
Evaluation during training (off unless EVAL_DATA is set)
  EVAL_DATA         JSONL from mem_agent.prepare_data    EVAL_INTERVAL=20
  EVAL_TEMPERATURE=0.7  EVAL_TOP_P=0.95 (MemAgent's evaluation sampling)
Cluster
  NNODES=1  GPUS_PER_NODE=8  MASTER_ADDR=127.0.0.1 (set this node's address when NNODES > 1)
  RAY_PORT=6379  RAY_DASHBOARD_HOST=127.0.0.1  RAY_DASHBOARD_PORT=8265  RAY_AGENT_PORT=52365  RAY_CLIENT_PORT=10001
                    (a second Ray head on one node needs all four set apart; taken ports are reported)
  RAY_JOB_ADDRESS   where jobs are submitted (default: http://RAY_DASHBOARD_HOST:RAY_DASHBOARD_PORT)
  RAY_TEMP_DIR      the head's Ray folder (default: SAVE_PATH/ray, or a short folder under TMPDIR when
                    that path is too long for Ray's unix sockets)
  JOIN=1            on another node: join MASTER_ADDR's cluster and wait (Ctrl-C leaves)
  USE_EXISTING_RAY=1  submit to a cluster you started yourself; start no head
  KEEP_RAY=1        leave the head this script started running when it exits
  RAY_START_TIMEOUT=180  RAY_STOP_TIMEOUT=60 (seconds)
  SUBMISSION_ID     the Ray job's id (default: mem_agent_qwen3_4b_<date>_<pid>)
  ASYNC=1           train_async.py, not colocated: ACTOR_GPUS_PER_NODE (default: GPUS_PER_NODE / 2) train,
                    ROLLOUT_NUM_GPUS (default: the rest of all nodes' GPUs) generate
Performance
  TP=2  PP=1  CP=1  MAX_TOKENS_PER_GPU=9216  ROLLOUT_GPUS_PER_ENGINE=1  SERVER_CONCURRENCY=64
  SGLANG_MEM_FRACTION=0.7 (slime)  VLLM_GPU_MEMORY_UTILIZATION=0.7 (vime)
Logging and extras
  WANDB_PROJECT     turns on Weights & Biases (WANDB_GROUP, default qwen3-4b-memagent); WANDB_API_KEY
                    is read by the workers from the environment of `ray start` on each node, never
                    put on a command line
  EXTRA_BACKEND_ARGS, EXTRA_ARGS   more trainer flags, appended as words
  PYTHON=python3    DRY_RUN=1 (print every command, start nothing; works on any machine: what it
                    lacks, such as ray, the checkouts or the checkpoints, is listed as warnings)
  PRINT_FLAGS=1     check as DRY_RUN=1 does, start nothing, print only the job's flags as data on stdout
                    (NUL-terminated fields: the entry script, then each flag group with its owner)
Every setting is checked before anything starts and all problems are reported in one message; a
setting the chosen mode does not use is an error (e.g. EVAL_INTERVAL without EVAL_DATA).
USAGE
}

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
accept_only_help "$@"
PYTHON=${PYTHON:-python3} # the trainer's interpreter (its own environment, not this checkout's .venv)

NUM_ROLLOUT=${NUM_ROLLOUT:-100}
ROLLOUT_BATCH_SIZE=${ROLLOUT_BATCH_SIZE:-128}
N_SAMPLES=${N_SAMPLES:-16}
UPDATES_PER_ROLLOUT=${UPDATES_PER_ROLLOUT:-16}
GLOBAL_BATCH_SIZE=${GLOBAL_BATCH_SIZE:-}
LOSS_WEIGHTING=${LOSS_WEIGHTING:-token}
GRPO_STD_NORM=${GRPO_STD_NORM:-0}
SAVE_INTERVAL=${SAVE_INTERVAL:-50}
LR=${LR:-1e-6}
LR_WARMUP_ITERS=${LR_WARMUP_ITERS:-}
WEIGHT_DECAY=${WEIGHT_DECAY:-0.01}
ADAM_BETA1=${ADAM_BETA1:-0.9}
ADAM_BETA2=${ADAM_BETA2:-0.999}
KL_COEF=${KL_COEF:-0.001}
EPS_CLIP=${EPS_CLIP:-0.2}
EPS_CLIP_HIGH=${EPS_CLIP_HIGH:-0.2}
EPS_CLIP_C=${EPS_CLIP_C:-3.0}
TEMPERATURE=${TEMPERATURE:-1.0}
SHUFFLE=${SHUFFLE:-0}
ROLLOUT_MAX_RESPONSE_LEN=${ROLLOUT_MAX_RESPONSE_LEN:-1024}
EVAL_DATA=${EVAL_DATA:-}
EVAL_INTERVAL=${EVAL_INTERVAL:-20}
EVAL_TEMPERATURE=${EVAL_TEMPERATURE:-0.7}
EVAL_TOP_P=${EVAL_TOP_P:-0.95}
NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
RAY_PORT=${RAY_PORT:-6379}
RAY_DASHBOARD_HOST=${RAY_DASHBOARD_HOST:-127.0.0.1}
RAY_DASHBOARD_PORT=${RAY_DASHBOARD_PORT:-8265}
RAY_AGENT_PORT=${RAY_AGENT_PORT:-52365}
RAY_CLIENT_PORT=${RAY_CLIENT_PORT:-10001}
RAY_JOB_ADDRESS=${RAY_JOB_ADDRESS:-http://${RAY_DASHBOARD_HOST}:${RAY_DASHBOARD_PORT}}
RAY_TEMP_DIR=${RAY_TEMP_DIR:-}
RAY_START_TIMEOUT=${RAY_START_TIMEOUT:-180}
RAY_STOP_TIMEOUT=${RAY_STOP_TIMEOUT:-60}
SUBMISSION_ID=${SUBMISSION_ID:-mem_agent_qwen3_4b_$(date +%Y%m%d_%H%M%S)_$$}
JOIN=${JOIN:-0}
USE_EXISTING_RAY=${USE_EXISTING_RAY:-0}
KEEP_RAY=${KEEP_RAY:-0}
ASYNC=${ASYNC:-0}
TP=${TP:-2}
PP=${PP:-1}
CP=${CP:-1}
MAX_TOKENS_PER_GPU=${MAX_TOKENS_PER_GPU:-9216}
ROLLOUT_GPUS_PER_ENGINE=${ROLLOUT_GPUS_PER_ENGINE:-1}
SERVER_CONCURRENCY=${SERVER_CONCURRENCY:-64}
SGLANG_MEM_FRACTION=${SGLANG_MEM_FRACTION:-0.7}
VLLM_GPU_MEMORY_UTILIZATION=${VLLM_GPU_MEMORY_UTILIZATION:-0.7}
WANDB_PROJECT=${WANDB_PROJECT:-}
WANDB_GROUP=${WANDB_GROUP:-qwen3-4b-memagent}
EXTRA_BACKEND_ARGS=${EXTRA_BACKEND_ARGS:-}
EXTRA_ARGS=${EXTRA_ARGS:-}
# Ray's unix socket paths (RAY_TEMP_DIR/session_<date>_<pid>/sockets/plasma_store) must stay
# under 108 bytes; the part Ray appends takes up to 67.
RAY_TEMP_DIR_MAX=40

is_loopback() {
  [[ "$1" == 127.* || "$1" == localhost || "$1" == ::1 ]]
}

PRINT_FLAGS=${PRINT_FLAGS:-0}
for knob in DRY_RUN PRINT_FLAGS JOIN USE_EXISTING_RAY KEEP_RAY ASYNC; do
  require_flag "${knob}"
done
[[ "${PRINT_FLAGS}" != 1 ]] || DRY_RUN=1 # the same checks; what this machine lacks is a warning

# ---- JOIN=1: this node joins the head's cluster and stays in the foreground -------------------
# The other settings are not checked here: nodes often share one environment file.
if [[ "${JOIN}" == "1" ]]; then
  require_count GPUS_PER_NODE
  require_cmd ray "install the trainer's requirements on this node"
  ! is_loopback "${MASTER_ADDR}" || problem "JOIN=1 needs MASTER_ADDR set to the head node's address, not ${MASTER_ADDR}"
  report_problems
  echo "joining the Ray cluster at ${MASTER_ADDR}:${RAY_PORT}; Ctrl-C (or SIGTERM) leaves it"
  run ray start --address "${MASTER_ADDR}:${RAY_PORT}" --num-gpus "${GPUS_PER_NODE}" --disable-usage-stats --block
  exit 0
fi

# ---- validate everything before anything starts ----------------------------------------------
make_absolute TRAINER_ROOT MEGATRON_PATH HF_CKPT TORCH_DIST TRAIN_DATA SAVE_PATH EVAL_DATA
# The workers read MEM_PROMPTS in the trainer's folder, not this one.
if [[ -n "${MEM_PROMPTS:-}" ]]; then
  make_absolute MEM_PROMPTS
  export MEM_PROMPTS
fi
require_path TRAINER_ROOT "slime or vime checkout" "git clone https://github.com/THUDM/slime or vllm-project/vime"
resolve_host_trainer
require_path MEGATRON_PATH "Megatron-LM checkout"
require_path HF_CKPT "Qwen3-4B in Hugging Face format"
require_path TORCH_DIST "Megatron torch_dist checkpoint" "make it with the trainer's tools/convert_hf_to_torch_dist.py"
require_path TRAIN_DATA "training JSONL" "make it with python -m mem_agent.prepare_data"
[[ -z "${EVAL_DATA}" ]] || require_path EVAL_DATA "evaluation JSONL"
if [[ -z "${HOST_TRAINER}" && ! -d "${TRAINER_ROOT}" && "${DRY_RUN}" == "1" ]]; then # no checkout to look at
  HOST_TRAINER=slime
  WARNINGS+=("HOST_TRAINER is unknown without the checkout: the commands below assume slime (set HOST_TRAINER=vime for vime)")
fi
TRAIN_SCRIPT=train.py
[[ "${ASYNC}" == "1" ]] && TRAIN_SCRIPT=train_async.py
[[ ! -d "${TRAINER_ROOT}" || -f "${TRAINER_ROOT}/${TRAIN_SCRIPT}" ]] ||
  missing "${TRAINER_ROOT}/${TRAIN_SCRIPT} not found: TRAINER_ROOT is not a slime or vime checkout"
for knob in NUM_ROLLOUT ROLLOUT_BATCH_SIZE N_SAMPLES UPDATES_PER_ROLLOUT SAVE_INTERVAL NNODES GPUS_PER_NODE RAY_PORT \
  RAY_DASHBOARD_PORT RAY_AGENT_PORT RAY_CLIENT_PORT TP PP CP MAX_TOKENS_PER_GPU ROLLOUT_GPUS_PER_ENGINE SERVER_CONCURRENCY \
  RAY_START_TIMEOUT RAY_STOP_TIMEOUT; do
  require_count "${knob}"
done
[[ -z "${GLOBAL_BATCH_SIZE}" ]] || require_count GLOBAL_BATCH_SIZE
[[ -z "${LR_WARMUP_ITERS}" ]] || require_count LR_WARMUP_ITERS 0
require_choice LOSS_WEIGHTING token trajectory
require_flag GRPO_STD_NORM
require_flag SHUFFLE
if [[ "${ASYNC}" == "1" ]]; then
  [[ -z "${ACTOR_GPUS_PER_NODE:-}" ]] || require_count ACTOR_GPUS_PER_NODE
  [[ -z "${ROLLOUT_NUM_GPUS:-}" ]] || require_count ROLLOUT_NUM_GPUS
fi
require_number WEIGHT_DECAY 0
require_number ADAM_BETA1 0 1 open
require_number ADAM_BETA2 0 1 open
require_number EPS_CLIP_C 1 "" open
require_count ROLLOUT_MAX_RESPONSE_LEN
require_count EVAL_INTERVAL
require_number LR 0 "" open
require_number KL_COEF 0
require_number EPS_CLIP 0 "" open
require_number EPS_CLIP_HIGH 0 "" open
require_number TEMPERATURE 0 "" open
require_number EVAL_TEMPERATURE 0
require_number EVAL_TOP_P 0 1 open
require_number SGLANG_MEM_FRACTION 0 1 open
require_number VLLM_GPU_MEMORY_UTILIZATION 0 1 open
# Settings the chosen mode would silently ignore (judged on what the user set, not the defaults).
[[ -n "${EVAL_DATA}" ]] || unused EVAL_INTERVAL EVAL_TEMPERATURE EVAL_TOP_P "evaluation during training is off without EVAL_DATA"
[[ "${ASYNC}" == "1" ]] || unused ACTOR_GPUS_PER_NODE ROLLOUT_NUM_GPUS "they split the GPUs for ASYNC=1 only"
[[ -z "${GLOBAL_BATCH_SIZE}" ]] ||
  unused UPDATES_PER_ROLLOUT "GLOBAL_BATCH_SIZE sets the updates per rollout (ROLLOUT_BATCH_SIZE x N_SAMPLES / GLOBAL_BATCH_SIZE); set one of them"
[[ -n "${WANDB_PROJECT}" ]] || unused WANDB_GROUP "Weights & Biases is off without WANDB_PROJECT"
if [[ "${HOST_TRAINER}" == slime ]]; then
  unused VLLM_GPU_MEMORY_UTILIZATION "slime's rollout engines are SGLang (SGLANG_MEM_FRACTION)"
else
  unused SGLANG_MEM_FRACTION "vime's rollout engines are vLLM (VLLM_GPU_MEMORY_UTILIZATION)"
fi
[[ "${USE_EXISTING_RAY}" != "1" ]] ||
  unused RAY_PORT RAY_DASHBOARD_HOST RAY_DASHBOARD_PORT RAY_AGENT_PORT RAY_CLIENT_PORT RAY_TEMP_DIR KEEP_RAY \
    "USE_EXISTING_RAY=1 starts no Ray head (RAY_JOB_ADDRESS names the cluster)"
if ((${#PROBLEMS[@]} == 0)); then
  TRAJECTORIES=$((ROLLOUT_BATCH_SIZE * N_SAMPLES))
  if [[ -z "${GLOBAL_BATCH_SIZE}" ]]; then
    # Derived only from a divisor: a GLOBAL_BATCH_SIZE the user never set is never reported.
    if ((TRAJECTORIES % UPDATES_PER_ROLLOUT == 0)); then
      GLOBAL_BATCH_SIZE=$((TRAJECTORIES / UPDATES_PER_ROLLOUT))
    else
      problem "UPDATES_PER_ROLLOUT=${UPDATES_PER_ROLLOUT} does not divide the ${TRAJECTORIES} trajectories of a rollout (ROLLOUT_BATCH_SIZE x N_SAMPLES)"
      GLOBAL_BATCH_SIZE=${TRAJECTORIES}
    fi
  elif ((TRAJECTORIES % GLOBAL_BATCH_SIZE != 0)); then
    # The hosts drop the trajectories that do not fill a last update: refuse to waste them silently.
    problem "GLOBAL_BATCH_SIZE=${GLOBAL_BATCH_SIZE} does not divide the ${TRAJECTORIES} trajectories of a rollout; the host would drop the rest"
  fi
  UPDATES_PER_ROLLOUT=$((TRAJECTORIES / GLOBAL_BATCH_SIZE))
  # MemAgent's verl steps its LR scheduler once per rollout; Megatron steps it once per update.
  LR_WARMUP_ITERS=${LR_WARMUP_ITERS:-$((20 * UPDATES_PER_ROLLOUT))}
  if ((NNODES > 1)) && is_loopback "${MASTER_ADDR}"; then
    problem "NNODES=${NNODES} needs MASTER_ADDR set to this node's address that the other nodes can reach"
  fi
  if [[ "${ASYNC}" == "1" ]]; then # train_async.py cannot colocate: training and rollout get their own GPUs
    if ((GPUS_PER_NODE < 2)); then
      problem "ASYNC=1 needs GPUS_PER_NODE >= 2 (it is ${GPUS_PER_NODE}): training and rollout each need GPUs of their own"
    else
      ACTOR_GPUS_PER_NODE=${ACTOR_GPUS_PER_NODE:-$((GPUS_PER_NODE / 2))}
      ((ACTOR_GPUS_PER_NODE < GPUS_PER_NODE)) ||
        problem "ACTOR_GPUS_PER_NODE=${ACTOR_GPUS_PER_NODE} must be below GPUS_PER_NODE=${GPUS_PER_NODE}: ASYNC=1 gives the rest of each node to rollout"
      ROLLOUT_NUM_GPUS=${ROLLOUT_NUM_GPUS:-$((NNODES * (GPUS_PER_NODE - ACTOR_GPUS_PER_NODE)))}
    fi
  fi
fi
require_cmd ray "install the trainer's requirements (ray[default], for the job API)"
require_cmd "${PYTHON}" "the Python that runs the trainer's ${TRAIN_SCRIPT} (PYTHON=...)"
check_mem_settings
if [[ "${USE_EXISTING_RAY}" != "1" ]]; then
  require_cmd setsid "util-linux; it puts the Ray head in its own session so that only it is stopped"
  if [[ -z "${RAY_TEMP_DIR}" ]]; then
    RAY_TEMP_DIR="${SAVE_PATH}/ray"
    ((${#RAY_TEMP_DIR} <= RAY_TEMP_DIR_MAX)) || RAY_TEMP_DIR="${TMPDIR:-/tmp}/ray_mem_agent_$(id -u)_${RAY_PORT}"
  fi
  make_absolute RAY_TEMP_DIR
  ((${#RAY_TEMP_DIR} <= RAY_TEMP_DIR_MAX)) ||
    problem "RAY_TEMP_DIR=${RAY_TEMP_DIR} is longer than ${RAY_TEMP_DIR_MAX} characters: Ray's unix socket paths under it would not fit; choose a shorter folder"
  # Two Ray heads on one node collide on these ports unless told apart; a head whose job agent
  # cannot bind refuses every job ("No available agent"), so a taken port is a problem here.
  if [[ "${DRY_RUN}" != "1" ]]; then
    ! port_in_use "${RAY_PORT}" ||
      problem "port ${RAY_PORT} (RAY_PORT) is already in use (another Ray cluster?): USE_EXISTING_RAY=1 submits to it, or set RAY_PORT"
    for knob in RAY_DASHBOARD_PORT RAY_AGENT_PORT RAY_CLIENT_PORT; do
      ! port_in_use "${!knob}" || problem "port ${!knob} (${knob}) is already in use (another Ray on this node?): set ${knob}"
    done
  fi
elif [[ "${DRY_RUN}" != "1" ]] && command -v ray >/dev/null 2>&1; then
  ray job list --address "${RAY_JOB_ADDRESS}" >/dev/null 2>&1 ||
    problem "USE_EXISTING_RAY=1 but no Ray job API answers at RAY_JOB_ADDRESS=${RAY_JOB_ADDRESS}"
fi
# The job's runtime env, built before anything starts: a failure here is a problem like the others.
if ! RUNTIME_ENV=$(mem_env_json 2>&1); then
  missing "cannot build the job's runtime env (Python 3.11 needed): ${RUNTIME_ENV##*$'\n'}"
  RUNTIME_ENV='{"env_vars": "(built by Python 3.11 at run time; none found here)"}'
fi
report_problems
# Every agent setting the workers will run with, set or defaulted, as Python computes it (the
# defaults live only in mem_agent/settings/config.py; the check above found them usable).
AGENT_SETTINGS=("(Python 3.11 was not found here: see the settings table for the defaults)")
if agent_python=$(stdlib_python) && out=$(_MEM_EXAMPLES="${MEM_EXAMPLES_DIR}" "${agent_python}" -c '
import os, sys
sys.path.insert(0, os.environ["_MEM_EXAMPLES"])
from mem_agent.settings.report import settings_lines
print("\n".join(settings_lines()))
' 2>&1); then
  mapfile -t AGENT_SETTINGS <<<"${out}"
fi

# ---- the trainer's arguments, grouped by concern ----------------------------------------------
# Each array holds the flags of one parser (the group list below names it): Megatron-LM's, or the
# host's own (slime's or vime's, their engine's --sglang-*/--vllm-* included). Megatron flags whose
# default the host resets (--load, --global-batch-size, --lr, ...) are Megatron's.
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
BATCH_ARGS=(--global-batch-size "${GLOBAL_BATCH_SIZE}")
# MemAgent reads its training file in order (data.shuffle=False); the hosts shuffle only when asked.
[[ "${SHUFFLE}" != 1 ]] || ROLLOUT_ARGS+=(--rollout-shuffle)
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
# low-variance KL loss, and the loss averaged over every response token of an update.
GRPO_ARGS=(
  --advantage-estimator grpo --use-kl-loss --kl-loss-coef "${KL_COEF}" --kl-loss-type low_var_kl
  --entropy-coef 0 --eps-clip "${EPS_CLIP}" --eps-clip-high "${EPS_CLIP_HIGH}" --eps-clip-c "${EPS_CLIP_C}"
)
[[ "${GRPO_STD_NORM}" == 1 ]] || GRPO_ARGS+=(--disable-grpo-std-normalization)
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
  --context-parallel-size "${CP}" --recompute-granularity full --recompute-method uniform
  --recompute-num-layers 1
)
DYNAMIC_BATCH_ARGS=(--use-dynamic-batch-size --max-tokens-per-gpu "${MAX_TOKENS_PER_GPU}")
MISC_ARGS=(
  --attention-dropout 0.0 --hidden-dropout 0.0 --accumulate-allreduce-grads-in-fp32
  --attention-softmax-in-fp32 --attention-backend flash
)
EVAL_INTERVAL_ARGS=()
EVAL_ARGS=()
if [[ -n "${EVAL_DATA}" ]]; then
  EVAL_INTERVAL_ARGS=(--eval-interval "${EVAL_INTERVAL}")
  EVAL_ARGS=(--eval-prompt-data hotpotqa "${EVAL_DATA}"
    --n-samples-per-eval-prompt 1 --eval-temperature "${EVAL_TEMPERATURE}" --eval-top-p "${EVAL_TOP_P}")
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
WANDB_ARGS=()
WANDB_PROJECT_ARGS=()
if [[ -n "${WANDB_PROJECT}" ]]; then
  WANDB_ARGS=(--use-wandb --wandb-group "${WANDB_GROUP}")
  WANDB_PROJECT_ARGS=(--wandb-project "${WANDB_PROJECT}")
fi
read -r -a EXTRA_BACKEND <<<"${EXTRA_BACKEND_ARGS}"
read -r -a EXTRA <<<"${EXTRA_ARGS}"
if [[ "${ASYNC}" == "1" ]]; then
  CLUSTER_ARGS=(--actor-num-nodes "${NNODES}" --actor-num-gpus-per-node "${ACTOR_GPUS_PER_NODE}"
    --rollout-num-gpus "${ROLLOUT_NUM_GPUS}")
else
  CLUSTER_ARGS=(--actor-num-nodes "${NNODES}" --actor-num-gpus-per-node "${GPUS_PER_NODE}" --colocate)
fi
# The job's flags in launch order, each array with the parser that owns its flags (user: words
# the user appended, owner unknown). PRINT_FLAGS=1 prints them as data for the preflight.
TRAIN_ARGS=()
LAUNCH_DATA=()
group() { # group NAME OWNER WORD...: the words join the job's flags and the launch data
  TRAIN_ARGS+=("${@:3}")
  LAUNCH_DATA+=(group "$1" "$2" "$(($# - 2))" "${@:3}")
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
if [[ "${PRINT_FLAGS}" == 1 ]]; then
  printf '%s\0' mem_agent-launch-flags/1 entry "${TRAINER_ROOT}/${TRAIN_SCRIPT}" "${LAUNCH_DATA[@]}"
  exit 0
fi

# ---- the Ray head: started in its own session, stopped by that session only ------------------
# `ray stop` kills every Ray process of the node, other users' clusters included, so it is never
# used. `setsid ray start --head --block` makes the head the leader of a new session: its GCS,
# raylet, dashboard and worker processes all stay in that session, and SIGTERM to the leader's
# process group makes Ray drain and shut down exactly this head (verified with Ray 2.x: about
# 30 s, other clusters on the node untouched). Whatever is left after RAY_STOP_TIMEOUT, and
# still in our session, gets SIGKILL.
RAY_HEAD_PID=""
session_pids() { # live (not zombie) processes of the head's session
  ps -eo pid=,sid=,stat= | awk -v sid="${RAY_HEAD_PID}" '$2 == sid && $3 !~ /^Z/ { print $1 }'
}
wait_for_session_end() { # wait_for_session_end SECONDS: true once the session is empty
  local waited=0
  while [[ -n "$(session_pids)" ]]; do
    ((waited < $1)) || return 1
    sleep 1
    waited=$((waited + 1))
  done
}
stop_ray_head() {
  [[ -n "${RAY_HEAD_PID}" ]] || return 0
  if [[ "${KEEP_RAY}" == "1" ]]; then
    echo "leaving the Ray head running (KEEP_RAY=1); stop it with: kill -TERM -- -${RAY_HEAD_PID}"
    return 0
  fi
  echo "stopping the Ray head this script started (session ${RAY_HEAD_PID})"
  kill -TERM -- "-${RAY_HEAD_PID}" 2>/dev/null || true
  wait_for_session_end "${RAY_STOP_TIMEOUT}" && return 0
  local pid
  for pid in $(session_pids); do
    echo "  pid ${pid} still running after ${RAY_STOP_TIMEOUT} s: SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
  done
  wait_for_session_end 10 || echo "warning: processes of session ${RAY_HEAD_PID} outlived SIGKILL: $(session_pids | xargs)" >&2
}

start_ray_head() {
  local log="${SAVE_PATH}/ray_head.log" waited=0
  local head=(ray start --head --node-ip-address "${MASTER_ADDR}" --port "${RAY_PORT}" --num-gpus "${GPUS_PER_NODE}"
    --disable-usage-stats --dashboard-host "${RAY_DASHBOARD_HOST}" --dashboard-port "${RAY_DASHBOARD_PORT}"
    --dashboard-agent-listen-port "${RAY_AGENT_PORT}" --ray-client-server-port "${RAY_CLIENT_PORT}"
    --temp-dir "${RAY_TEMP_DIR}" --block)
  if [[ "${DRY_RUN}" == "1" ]]; then
    run setsid "${head[@]}"
    return 0
  fi
  mkdir -p "${SAVE_PATH}" "${RAY_TEMP_DIR}"
  trap stop_ray_head EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # The head is started from TRAINER_ROOT: Ray workers of a job without a working_dir run in the
  # folder their raylet was started from, and the trainers' own scripts rely on that.
  (cd "${TRAINER_ROOT}" && exec setsid "${head[@]}") >"${log}" 2>&1 </dev/null &
  RAY_HEAD_PID=$!
  echo "starting the Ray head (pid ${RAY_HEAD_PID}, log ${log}, Ray folder ${RAY_TEMP_DIR})"
  until ray job list --address "${RAY_JOB_ADDRESS}" >/dev/null 2>&1; do
    if ! kill -0 "${RAY_HEAD_PID}" 2>/dev/null; then
      tail -n 20 "${log}" >&2
      die "ray start exited; see ${log}"
    fi
    ((waited < RAY_START_TIMEOUT)) ||
      die "the Ray job API did not answer at ${RAY_JOB_ADDRESS} within ${RAY_START_TIMEOUT} s (is ray[default] installed?); see ${log}"
    sleep 2
    waited=$((waited + 2))
  done
  echo "Ray head up at ${MASTER_ADDR}:${RAY_PORT} after ${waited} s (jobs: ${RAY_JOB_ADDRESS})"
}

# ---- run ---------------------------------------------------------------------------------------
echo "host trainer: ${HOST_TRAINER} (${TRAINER_ROOT}), ${TRAIN_SCRIPT}, ${NNODES} node(s) x ${GPUS_PER_NODE} GPU(s)"
echo "schedule: ${ROLLOUT_BATCH_SIZE} prompts x ${N_SAMPLES} = ${TRAJECTORIES} trajectories a rollout;" \
  "${UPDATES_PER_ROLLOUT} optimizer updates of ${GLOBAL_BATCH_SIZE} trajectories (${HOST_TRAINER} counts" \
  "--global-batch-size in trajectories); loss weighting: ${LOSS_WEIGHTING}; LR warmup ${LR_WARMUP_ITERS} updates"
if [[ "${SHUFFLE}" == 1 ]]; then
  echo "data order: shuffled each epoch (SHUFFLE=1: --rollout-shuffle)"
else
  echo "data order: the file's order (SHUFFLE=0, MemAgent's data.shuffle=False)"
fi
echo "agent settings (MEM_*; only the ones set travel to the workers, which default the rest the same way):"
printf '  %s\n' "${AGENT_SETTINGS[@]}"
if [[ -n "${WANDB_PROJECT}" ]]; then
  if [[ -n "${WANDB_API_KEY:-}" ]]; then
    echo "wandb: project ${WANDB_PROJECT}; WANDB_API_KEY=<set>, inherited by the workers from the environment of ray start"
  else
    echo "wandb: project ${WANDB_PROJECT}; WANDB_API_KEY is not set here: export it (or run wandb login) on every node before ray start"
  fi
fi
if [[ "${USE_EXISTING_RAY}" == "1" ]]; then
  echo "submitting to the existing Ray cluster at ${RAY_JOB_ADDRESS} (no head started)"
else
  start_ray_head
fi
if ((NNODES > 1)); then
  echo "on each of the other $((NNODES - 1)) node(s), run:" \
    "MASTER_ADDR=${MASTER_ADDR} RAY_PORT=${RAY_PORT} GPUS_PER_NODE=${GPUS_PER_NODE} JOIN=1 bash ${MEM_AGENT_DIR}/run-qwen3-4b-train.sh" \
    "(the job waits until their GPUs have joined)"
fi

echo "runtime env: ${RUNTIME_ENV}"
JOB=(ray job submit --address "${RAY_JOB_ADDRESS}" --submission-id "${SUBMISSION_ID}" --runtime-env-json "${RUNTIME_ENV}"
  -- "${PYTHON}" "${TRAINER_ROOT}/${TRAIN_SCRIPT}" "${TRAIN_ARGS[@]}")
# A fresh head answers the job API a little before its node's agent can take a job ("No
# available agent"): a submission that never created the job is tried again, one whose job ran
# and failed is not.
deadline=$((SECONDS + RAY_START_TIMEOUT))
until run "${JOB[@]}"; do
  if ray job status --address "${RAY_JOB_ADDRESS}" "${SUBMISSION_ID}" >/dev/null 2>&1; then
    echo "error: job ${SUBMISSION_ID} failed; its log: ray job logs --address ${RAY_JOB_ADDRESS} ${SUBMISSION_ID}" >&2
    exit 1
  fi
  ((SECONDS < deadline)) || die "could not submit the job to ${RAY_JOB_ADDRESS} within ${RAY_START_TIMEOUT} s"
  echo "the Ray job API cannot take the job yet; submitting again in 5 s"
  sleep 5
done
[[ "${DRY_RUN}" == "1" ]] || echo "training finished; checkpoints in ${SAVE_PATH} (convert them with convert-to-hf.sh)"
