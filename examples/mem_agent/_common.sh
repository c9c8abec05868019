# shellcheck shell=bash
# Sourced by the mem_agent scripts, never run: the paths every script shares (each an environment
# variable with a default) and small helpers. Python owns the MEM_* agent settings and their
# defaults (mem_agent/config.py): nothing here gives them a value, and only the ones the user set
# travel to the Ray workers.

MEM_AGENT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The folder holding mem_agent/: on the workers' PYTHONPATH, so a shared checkout works even
# where `pip install -e <repo>` was not run.
MEM_EXAMPLES_DIR=$(dirname "${MEM_AGENT_DIR}")

PYTHON=${PYTHON:-python3}
DRY_RUN=${DRY_RUN:-0}
TRAINER_ROOT=${TRAINER_ROOT:-${HOME}/slime}
HOST_TRAINER=${HOST_TRAINER:-} # empty: detected from TRAINER_ROOT (see resolve_host_trainer)
MEGATRON_PATH=${MEGATRON_PATH:-${TRAINER_ROOT}/../Megatron-LM}
MODELS_DIR=${MODELS_DIR:-${HOME}/models}
HF_CKPT=${HF_CKPT:-${MODELS_DIR}/Qwen3-4B}
TORCH_DIST=${TORCH_DIST:-${MODELS_DIR}/Qwen3-4B_torch_dist}
TRAIN_DATA=${TRAIN_DATA:-${HOME}/mem_agent_data/hotpotqa_train.jsonl}
SAVE_PATH=${SAVE_PATH:-${HOME}/mem_agent_runs/qwen3-4b-memagent}

die() {
  echo "error: $*" >&2
  exit 2
}

# For scripts whose settings are all environment variables: -h/--help prints the script's own
# usage(), any other argument is a usage error.
accept_only_help() {
  case "${1:-}" in
    -h | --help)
      usage
      exit 0
      ;;
    "") ;;
    *) die "unknown argument '$1' (settings are environment variables; see --help)" ;;
  esac
  (($# <= 1)) || die "unexpected argument '$2' (settings are environment variables; see --help)"
}

# Print the command shell-quoted (copy-pasteable) in a dry run, run it otherwise.
run() {
  if [[ "${DRY_RUN}" == "1" ]]; then
    printf '%q ' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# Checks only collect problems; report_problems then lists all of them in one message, before
# anything has started, so a user fixes everything in one go instead of one error per attempt.
PROBLEMS=()
problem() {
  PROBLEMS+=("$*")
}
require_path() { # require_path VAR "what it is" ["how to get it"]
  local name=$1 what=$2 hint=${3:-} value=${!1:-}
  if [[ -z "${value}" ]]; then
    problem "${name} is not set: ${what}${hint:+ (${hint})}"
  elif [[ ! -e "${value}" ]]; then
    problem "${name}=${value}: ${what} not found${hint:+ (${hint})}"
  fi
}
require_cmd() { # require_cmd command "why"
  command -v "$1" >/dev/null 2>&1 || problem "command '$1' not found: $2"
}
report_problems() {
  ((${#PROBLEMS[@]})) || return 0
  {
    echo "error: cannot start, ${#PROBLEMS[@]} problem(s):"
    printf '  - %s\n' "${PROBLEMS[@]}"
    echo "nothing was started; see --help for every setting"
  } >&2
  exit 2
}

# Relative paths become absolute: the Ray job runs in another working directory.
make_absolute() { # make_absolute VAR...
  local name
  for name in "$@"; do
    [[ -z "${!name}" || "${!name}" == /* ]] || printf -v "${name}" '%s/%s' "${PWD}" "${!name}"
  done
}

# HOST_TRAINER as given (slime | vime), else what the checkout holds: slime ships the `slime/`
# package folder, vime the `vime/` one.
resolve_host_trainer() {
  if [[ -n "${HOST_TRAINER}" ]]; then
    [[ "${HOST_TRAINER}" == slime || "${HOST_TRAINER}" == vime ]] ||
      problem "HOST_TRAINER=${HOST_TRAINER} must be slime or vime"
  elif [[ -d "${TRAINER_ROOT}/vime" ]]; then
    HOST_TRAINER=vime
  elif [[ -d "${TRAINER_ROOT}/slime" ]]; then
    HOST_TRAINER=slime
  elif [[ -d "${TRAINER_ROOT}" ]]; then
    problem "TRAINER_ROOT=${TRAINER_ROOT} has neither a slime/ nor a vime/ package folder; point it at a checkout or set HOST_TRAINER"
  fi
}

# The MEM_* settings validated by Python itself (the same code the workers run), so a bad value
# is reported here with the rest instead of failing inside a Ray actor minutes later.
check_mem_settings() {
  command -v "${PYTHON}" >/dev/null 2>&1 || return 0 # reported by require_cmd
  local out
  if ! out=$(_MEM_EXAMPLES="${MEM_EXAMPLES_DIR}" "${PYTHON}" -c '
import os, sys
sys.path.insert(0, os.environ["_MEM_EXAMPLES"])
from mem_agent.config import ConfigError, MemAgentConfig
try:
    MemAgentConfig.from_env()
except ConfigError as error:
    sys.exit(str(error))
' 2>&1); then
    problem "${out##*$'\n'}"
  fi
}

# The Ray runtime environment of a job as JSON: PYTHONPATH (Megatron, the trainer, this package),
# CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron's overlap of communication and compute needs it) and
# the MEM_* settings the user set, by the names Python declares. Built by json.dumps from the
# environment, never by hand-quoting. Secrets such as WANDB_API_KEY are kept out on purpose: this
# JSON goes on the `ray job submit` command line (visible in `ps`), and Ray keeps a job's runtime
# env in its job table and writes it to runtime_env_agent.log. Workers inherit secrets from the
# environment of the `ray start` that launched their node instead.
mem_env_json() {
  _MEM_EXAMPLES="${MEM_EXAMPLES_DIR}" _MEM_PYTHONPATH="${MEGATRON_PATH}:${TRAINER_ROOT}:${MEM_EXAMPLES_DIR}" \
    "${PYTHON}" -c '
import json, os, sys
sys.path.insert(0, os.environ["_MEM_EXAMPLES"])
from mem_agent.config import SETTINGS
env = {"PYTHONPATH": os.environ["_MEM_PYTHONPATH"], "CUDA_DEVICE_MAX_CONNECTIONS": "1", "PYTHONUNBUFFERED": "1"}
env.update({s.env: os.environ[s.env] for s in SETTINGS if os.environ.get(s.env, "").strip()})
print(json.dumps({"env_vars": env}))'
}
