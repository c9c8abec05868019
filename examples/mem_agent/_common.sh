# shellcheck shell=bash
# Sourced by the scripts, never run. Each script runs its whole job as one `mem-agent` command
# (examples/mem_agent/launch/: every setting checked at once, then the launch); this file finds the
# code beside the script and checks the interpreter that runs it.

# The folder holding mem_agent/, first on PYTHONPATH: the code that runs is the code beside the
# script, also where `pip install -e <repo>` was not run.
MEM_EXAMPLES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="${MEM_EXAMPLES_DIR}${PYTHONPATH:+:${PYTHONPATH}}"

# The checkout's .venv (scripts/bootstrap.sh; VENV names another) when it is there, else python3.
checkout_python() {
  local venv=${VENV:-$(dirname "${MEM_EXAMPLES_DIR}")/.venv}
  if [[ -x "${venv}/bin/python" ]]; then echo "${venv}/bin/python"; else echo python3; fi
}

# PYTHON, exported (the interpreter of every command a launch runs too), must exist.
require_python() {
  export PYTHON
  command -v "${PYTHON}" >/dev/null 2>&1 && return 0
  echo "error: PYTHON=${PYTHON} not found: set PYTHON to an interpreter with mem-agent installed" >&2
  exit 2
}
