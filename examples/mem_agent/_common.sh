# shellcheck shell=bash
# Sourced by run-qwen3-4b-train.sh, never run (the other scripts run their whole job as one
# `mem-agent` command). Python checks (python -m mem_agent.launch train, examples/mem_agent/launch/):
# the script holds its defaults-free flag arrays and its launch; this file finds the code and the
# interpreter, and prints commands in a dry run.

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
