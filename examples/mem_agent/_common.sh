# shellcheck shell=bash
# Sourced by the mem_agent scripts, never run. Python checks and orchestrates (python -m
# mem_agent.launch, examples/mem_agent/launch/): a script holds its defaults-free flag arrays and its
# launch; this file finds the code and the interpreter, and prints commands in a dry run.

MEM_AGENT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The folder holding mem_agent/: first on PYTHONPATH, so the code that runs is the code beside the
# script, also where `pip install -e <repo>` was not run.
MEM_EXAMPLES_DIR=$(dirname "${MEM_AGENT_DIR}")
export PYTHONPATH="${MEM_EXAMPLES_DIR}${PYTHONPATH:+:${PYTHONPATH}}"

# launch_help SCRIPT ARGS...: with -h or --help, print SCRIPT's settings (from Python) and exit.
launch_help() {
  [[ "${2:-}" == -h || "${2:-}" == --help ]] || return 0
  require_python
  exec "${PYTHON}" -m mem_agent.launch "$1" --help
}

# launch_settings SCRIPT ARGS...: Python reads and checks every setting of SCRIPT at once (all
# problems in one message, exit 2) and prints them, defaults filled in, as shell assignments:
#   settings=$(launch_settings SCRIPT "$@")
#   eval "${settings}"
launch_settings() {
  require_python
  "${PYTHON}" -m mem_agent.launch "$@"
}

require_python() {
  command -v "${PYTHON}" >/dev/null 2>&1 && return 0
  echo "error: PYTHON=${PYTHON} not found: set PYTHON to an interpreter with mem-agent installed" >&2
  exit 2
}

# Print the command shell-quoted (copy-pasteable) in a dry run, run it otherwise.
run() {
  if [[ "${DRY_RUN:-0}" == "1" ]]; then
    printf '%q ' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# ---- still used by run-eval.sh, run-qwen3-4b-train.sh and prepare-eval-data.sh until their
# ---- checks move into mem_agent.launch; nothing below is new API.
# What the user set (non-empty, from the environment), before any default is filled in: a setting
# that the chosen mode would ignore is judged on this (see unused).
declare -A USER_SET=()
while IFS= read -r _name; do
  [[ -z "${!_name:-}" ]] || USER_SET[${_name}]=1
done < <(compgen -e)
unset _name

# The checkout holding examples/: its .venv is where resolve_python looks first.
MEM_REPO_ROOT=$(dirname "${MEM_EXAMPLES_DIR}")

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

# ---- collecting problems -------------------------------------------------------------------------
PROBLEMS=()
WARNINGS=()
problem() { # a setting with a value that cannot work: refused in every run
  PROBLEMS+=("$*")
}
missing() { # something this machine lacks: refused in a real run, a warning in a dry run
  if [[ "${DRY_RUN}" == "1" ]]; then
    WARNINGS+=("$*")
  else
    PROBLEMS+=("$*")
  fi
}
require_path() { # require_path VAR "what it is" ["how to get it"]
  local name=$1 what=$2 hint=${3:-} value=${!1:-}
  if [[ -z "${value}" ]]; then
    problem "${name} is not set: ${what}${hint:+ (${hint})}"
  elif [[ ! -e "${value}" ]]; then
    missing "${name}=${value}: ${what} not found${hint:+ (${hint})}"
  fi
}
require_cmd() { # require_cmd command "why"
  command -v "$1" >/dev/null 2>&1 || missing "command '$1' not found: $2"
}
require_count() { # require_count VAR [minimum=1]: an integer >= minimum
  local minimum=${2:-1} value=${!1}
  if [[ ! "${value}" =~ ^[0-9]+$ ]] || ((10#${value} < minimum)); then
    if ((minimum == 1)); then
      problem "$1=${value} must be a positive integer"
    else
      problem "$1=${value} must be an integer >= ${minimum}"
    fi
  fi
}
require_port() { # require_port VAR: a TCP port number
  if [[ ! "${!1}" =~ ^[0-9]+$ ]] || ((10#${!1} < 1 || 10#${!1} > 65535)); then
    problem "$1=${!1} must be a port number (1 to 65535)"
  fi
}
require_flag() { # require_flag VAR: 0 or 1
  [[ "${!1}" == 0 || "${!1}" == 1 ]] || problem "$1=${!1} must be 0 or 1"
}
require_choice() { # require_choice VAR choice...: one of the choices (empty: the default)
  local name=$1 value=${!1:-} choice
  shift
  [[ -n "${value}" ]] || return 0
  for choice in "$@"; do
    [[ "${value}" == "${choice}" ]] && return 0
  done
  local IFS=,
  problem "${name}=${value} must be one of $*"
}
require_number() { # require_number VAR low [high] [open]: a decimal number >= low (> low with open), <= high
  local name=$1 value=${!1} low=$2 high=${3:-} open=${4:-} range
  local bracket="[" relation=">="
  [[ -z "${open}" ]] || bracket="(" relation=">"
  range="${relation} ${low}"
  [[ -z "${high}" ]] || range="in ${bracket}${low}, ${high}]"
  if [[ ! "${value}" =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] ||
    ! awk -v x="${value}" -v lo="${low}" -v hi="${high}" -v open="${open}" \
      'BEGIN { exit !((open ? x + 0 > lo + 0 : x + 0 >= lo + 0) && (hi == "" || x + 0 <= hi + 0)) }'; then
    problem "${name}=${value} must be a number ${range}"
  fi
}
require_name() { # require_name VAR "where the folder is set": a file or folder name, never a path
  local name=$1 value=${!1:-}
  if [[ -z "${value}" ]]; then
    problem "${name} is empty: give a name"
  elif [[ "${value}" == */* ]]; then
    problem "${name}=${value} is a path: give a name (no '/'); $2"
  elif [[ "${value}" == .* ]]; then
    problem "${name}=${value} starts with a dot ('..' or a hidden name): give a plain name; $2"
  fi
}
# unused VAR... "why": each VAR the user set is a problem, because this mode would silently ignore it.
unused() {
  local why=${!#} name
  for name in "${@:1:$#-1}"; do
    [[ -z "${USER_SET[${name}]:-}" ]] || problem "${name} is set but not used: ${why}; unset it"
  done
}

# Warnings first (a dry run goes on after them), then every problem in one message and exit 2.
# With _MEM_CHECK_ONLY=1 (a script checking another's settings, e.g. run-eval.sh before it
# converts a checkpoint) both are printed to stdout as "problem<TAB>text" / "warning<TAB>text"
# lines instead, and the script stops there: nothing is started either way.
report_problems() {
  if [[ "${_MEM_CHECK_ONLY:-0}" == "1" ]]; then
    ((${#PROBLEMS[@]} == 0)) || printf 'problem\t%s\n' "${PROBLEMS[@]}"
    ((${#WARNINGS[@]} == 0)) || printf 'warning\t%s\n' "${WARNINGS[@]}"
    exit 0
  fi
  if ((${#WARNINGS[@]})); then
    {
      echo "warning: dry run on a machine that lacks what a real run needs (a real run would refuse to start):"
      printf '  - %s\n' "${WARNINGS[@]}"
    } >&2
    WARNINGS=()
  fi
  ((${#PROBLEMS[@]})) || return 0
  {
    echo "error: cannot start, ${#PROBLEMS[@]} problem(s):"
    printf '  - %s\n' "${PROBLEMS[@]}"
    echo "nothing was started; see --help for every setting"
  } >&2
  exit 2
}
# adopt_checks "prefix" COMMAND...: run another script with _MEM_CHECK_ONLY=1 and take its
# problems and warnings as ours, each prefixed.
adopt_checks() {
  local prefix=$1 out status=0 kind text
  shift
  out=$(_MEM_CHECK_ONLY=1 "$@" 2>&1) || status=$?
  while IFS=$'\t' read -r kind text; do
    case "${kind}" in
      problem) problem "${prefix}${text}" ;;
      warning) WARNINGS+=("${prefix}${text}") ;;
    esac
  done <<<"${out}"
  ((status == 0)) || { out=${out##*$'\n'} && problem "${prefix}${out#error: }"; }
}

# Relative paths become absolute: the Ray job runs in another working directory.
make_absolute() { # make_absolute VAR...
  local name
  for name in "$@"; do
    [[ -z "${!name}" || "${!name}" == /* ]] || printf -v "${name}" '%s/%s' "${PWD}" "${!name}"
  done
}

# True when a TCP socket of this node listens on the port, on any address (Linux's socket tables;
# state 0A is LISTEN). Servers that bind the node's own address are not seen by asking 127.0.0.1.
port_in_use() {
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v port="${hex}" '$4 == "0A" && substr($2, length($2) - 4) == port { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# ---- the interpreter ---------------------------------------------------------------------------
# PYTHON for the scripts that run mem_agent's own commands (evaluation, data): as set, else this
# checkout's virtual environment (VENV, default <repo>/.venv, made by scripts/bootstrap.sh), else
# python3. Those scripts put this checkout's examples/ folder first on PYTHONPATH, so the code
# that runs is the code beside the script; what the interpreter must bring is the packages, looked
# up without importing them (importlib.util.find_spec, ~50 ms). When they are absent the problem
# says exactly what to run or set. Returns 1 (after reporting why) when PYTHON is not ready.
# With _MEM_SETTINGS_ONLY=1 (demo.sh, before it installs the packages) nothing is reported: it
# returns 0 when the interpreter at hand already has the packages (the checks that need them then
# run too), 1 when it lacks them (they run after the installation).
resolve_python() { # resolve_python module...: the packages the script's commands import
  local venv_python="${VENV:-${MEM_REPO_ROOT}/.venv}/bin/python" how absent
  if [[ -n "${PYTHON:-}" ]]; then
    how="PYTHON=${PYTHON}"
  elif [[ -x "${venv_python}" ]]; then
    PYTHON=${venv_python}
    how="PYTHON (unset, so ${venv_python})"
  else
    PYTHON=python3
    how="PYTHON (unset, and there is no ${venv_python}, so python3)"
  fi
  local settings_only=0
  [[ "${_MEM_SETTINGS_ONLY:-0}" != "1" ]] || settings_only=1
  if ! command -v "${PYTHON}" >/dev/null 2>&1; then
    ((settings_only)) ||
      missing "${how}: no such interpreter; run bash ${MEM_REPO_ROOT}/scripts/bootstrap.sh (it makes ${venv_python}) or set PYTHON"
    return 1
  fi
  absent=$("${PYTHON}" -c '
import importlib.util, sys
assert sys.version_info >= (3, 11), f"Python {sys.version.split()[0]} is older than 3.11"
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' \
    "$@" 2>&1) || absent="anything (it failed to run: ${absent##*$'\n'})"
  [[ -n "${absent}" ]] || return 0
  ((settings_only)) ||
    missing "${how} cannot import ${absent}: run bash ${MEM_REPO_ROOT}/scripts/bootstrap.sh (it makes ${venv_python} with everything), or set PYTHON to an interpreter with mem-agent installed (pip install -e '${MEM_REPO_ROOT}[eval]')"
  return 1
}

# The interpreter for the helpers that need only the standard library (the MEM_* check, the
# runtime env, reading a config.json): PYTHON where it runs, else python3. Prints nothing and
# fails when neither is found.
stdlib_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3; do
    if [[ -n "${candidate}" ]] && command -v "${candidate}" >/dev/null 2>&1; then
      echo "${candidate}"
      return 0
    fi
  done
  return 1
}

# ---- one writer per run folder ---------------------------------------------------------------------
# lock_run_folder DIR "the other way out": hold DIR's lock (DIR/.run.lock, see
# mem_agent/common/run_folder.py) until this script ends, or refuse in one line (exit 2) naming the
# live run that holds it. The lock is taken through a descriptor of this shell, so the kernel
# releases it when the script dies, SIGKILL included; the commands the script starts inherit the
# descriptor (named in _MEM_RUN_LOCK_FD) and run under the same lock instead of refusing.
RUN_LOCK_FD=
lock_run_folder() {
  local dir=$1 instead=$2 checker out
  [[ -z "${RUN_LOCK_FD}" ]] || return 0
  checker=$(stdlib_python) || die "neither PYTHON=${PYTHON:-} nor python3 found: the run folder cannot be locked"
  mkdir -p "${dir}"
  exec {RUN_LOCK_FD}>>"${dir}/.run.lock"
  if ! out=$(_MEM_EXAMPLES="${MEM_EXAMPLES_DIR}" "${checker}" -c '
import os, sys
sys.path.insert(0, os.environ["_MEM_EXAMPLES"])
from mem_agent.common.run_folder import hold_descriptor
from mem_agent.common.usage import UsageError
fd, folder, pid, command, instead = sys.argv[1:]
try:
    hold_descriptor(int(fd), folder, int(pid), command, instead)
except UsageError as error:
    sys.exit(f"error: {error}")
' "${RUN_LOCK_FD}" "${dir}" "$$" "$(basename "$0")" "${instead}" 2>&1); then
    echo "${out##*$'\n'}" >&2
    exit 2
  fi
  export _MEM_RUN_LOCK_FD=${RUN_LOCK_FD}
}

# ---- the trainers --------------------------------------------------------------------------------
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

# The MEM_* settings validated by Python itself (the same code the workers run), every problem at
# once, so a bad value is reported here with the rest instead of failing inside a Ray actor or a
# server minutes later. config.py needs only the standard library: any Python 3.11 can check.
check_mem_settings() {
  local checker out line
  if ! checker=$(stdlib_python); then
    missing "neither PYTHON=${PYTHON:-} nor python3 found: the MEM_* settings cannot be checked"
    return 0
  fi
  if ! out=$(_MEM_EXAMPLES="${MEM_EXAMPLES_DIR}" "${checker}" -c '
import os, sys
sys.path.insert(0, os.environ["_MEM_EXAMPLES"])
from mem_agent.settings.config import config_problems
print("\n".join(config_problems()))
' 2>&1); then
    missing "${checker} cannot check the MEM_* settings (it needs Python 3.11 or newer): ${out##*$'\n'}"
    return 0
  fi
  while IFS= read -r line; do
    [[ -z "${line}" ]] || problem "${line}"
  done <<<"${out}"
}

# The Ray runtime environment of a job as JSON: PYTHONPATH (Megatron, the trainer, this package),
# CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron's overlap of communication and compute needs it) and
# the MEM_* settings the user set, by the names Python declares. Built by json.dumps from the
# environment, never by hand-quoting. Secrets such as WANDB_API_KEY are kept out on purpose: this
# JSON goes on the `ray job submit` command line (visible in `ps`), and Ray keeps a job's runtime
# env in its job table and writes it to runtime_env_agent.log. Workers inherit secrets from the
# environment of the `ray start` that launched their node instead.
mem_env_json() {
  local builder
  builder=$(stdlib_python) || {
    echo "neither PYTHON=${PYTHON:-} nor python3 found" >&2
    return 1
  }
  _MEM_EXAMPLES="${MEM_EXAMPLES_DIR}" _MEM_PYTHONPATH="${MEGATRON_PATH}:${TRAINER_ROOT}:${MEM_EXAMPLES_DIR}" \
    "${builder}" -c '
import json, os, sys
sys.path.insert(0, os.environ["_MEM_EXAMPLES"])
from mem_agent.settings.config import ENV_NAMES
env = {"PYTHONPATH": os.environ["_MEM_PYTHONPATH"], "CUDA_DEVICE_MAX_CONNECTIONS": "1", "PYTHONUNBUFFERED": "1"}
env.update({name: os.environ[name] for name in ENV_NAMES.values() if os.environ.get(name, "").strip()})
print(json.dumps({"env_vars": env}))'
}
