# shellcheck shell=bash
# Shared by the mem_agent scripts (sourced, never run): paths, settings and small helpers.
# Every path and knob is an environment variable with a default; Python owns the MEM_* defaults,
# so the scripts only forward the MEM_* variables that the user actually set.

MEM_AGENT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MEM_EXAMPLES_DIR=$(dirname "${MEM_AGENT_DIR}")

PYTHON=${PYTHON:-python3}
DRY_RUN=${DRY_RUN:-0}
TRAINER_ROOT=${TRAINER_ROOT:-${HOME}/slime}
MEGATRON_PATH=${MEGATRON_PATH:-${TRAINER_ROOT}/../Megatron-LM}
MODELS_DIR=${MODELS_DIR:-${HOME}/models}
HF_CKPT=${HF_CKPT:-${MODELS_DIR}/Qwen3-4B}
TORCH_DIST=${TORCH_DIST:-${MODELS_DIR}/Qwen3-4B_torch_dist}
TRAIN_DATA=${TRAIN_DATA:-${HOME}/mem_agent_data/hotpotqa_train.jsonl}
SAVE_PATH=${SAVE_PATH:-${HOME}/mem_agent_runs/qwen3-4b-memagent}

# The agent settings a job forwards to its Ray workers (see the README's settings table).
MEM_SETTING_NAMES=(MEM_CHUNK_TOKENS MEM_MAX_MEMORY MEM_MAX_FINAL MEM_MAX_CHUNKS MEM_MODE MEM_THINKING
  MEM_ADV_STD_NORM MEM_REMEMR1_ALPHA MEM_RETRIEVER MEM_REQUEST_TIMEOUT MEM_CONNECT_TIMEOUT
  MEM_MAX_RETRIES MEM_PROTOCOL)

die() {
  echo "error: $*" >&2
  exit 2
}

# Print the command (shell-quoted) in a dry run, run it otherwise.
run() {
  if [[ "${DRY_RUN}" == "1" ]]; then
    printf '%q ' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# Checks collect every problem first, so one message lists them all before anything starts.
MISSING=()
need_path() { # need_path VAR "what it is"
  local value="${!1:-}"
  [[ -n "${value}" && -e "${value}" ]] || MISSING+=("$1=${value:-<unset>}: $2 not found")
}
need_cmd() { # need_cmd command "why"
  command -v "$1" >/dev/null 2>&1 || MISSING+=("command '$1' not found: $2")
}
report_missing() {
  if ((${#MISSING[@]})); then
    {
      echo "error: cannot start, ${#MISSING[@]} problem(s):"
      printf '  - %s\n' "${MISSING[@]}"
    } >&2
    exit 2
  fi
}

# slime or vime, from HOST_TRAINER or from what the checkout contains.
detect_host_trainer() {
  if [[ -n "${HOST_TRAINER:-}" ]]; then
    [[ "${HOST_TRAINER}" == "slime" || "${HOST_TRAINER}" == "vime" ]] || die "HOST_TRAINER=${HOST_TRAINER} must be slime or vime"
    echo "${HOST_TRAINER}"
  elif [[ -d "${TRAINER_ROOT}/vime" ]]; then
    echo vime
  elif [[ -d "${TRAINER_ROOT}/slime" ]]; then
    echo slime
  else
    echo unknown
  fi
}

# The Ray job's runtime environment as JSON: PYTHONPATH for Megatron, the trainer and this
# package, CUDA_DEVICE_MAX_CONNECTIONS, and the MEM_* settings the user set. Secrets such as
# WANDB_API_KEY are never put here (a command line is visible in `ps` and job logs): Ray's worker
# processes inherit them from the environment of the `ray start` that launched them.
runtime_env_json() {
  MEM_PYTHONPATH="${MEGATRON_PATH}:${TRAINER_ROOT}:${MEM_EXAMPLES_DIR}" MEM_FORWARD="${MEM_SETTING_NAMES[*]}" \
    "${PYTHON}" -c '
import json, os
env = {"PYTHONPATH": os.environ["MEM_PYTHONPATH"], "CUDA_DEVICE_MAX_CONNECTIONS": "1", "PYTHONUNBUFFERED": "1"}
env.update({n: os.environ[n] for n in os.environ["MEM_FORWARD"].split() if os.environ.get(n, "") != ""})
print(json.dumps({"env_vars": env}))'
}
