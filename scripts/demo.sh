#!/usr/bin/env bash
# The whole pipeline on this machine, no GPU needed: check every setting, set up the environment,
# then evaluate the tiny local Qwen3 as a MemAgent at two context lengths on vLLM's CPU build
# (run-eval.sh's CPU path).
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  cat <<'USAGE'
usage: [VAR=value ...] bash scripts/demo.sh

Sets up .venv (scripts/bootstrap.sh), then runs examples/mem_agent/run-eval.sh with no model, which
builds the tiny Qwen3 and a synthetic multi-hop QA set, and evaluates at two lengths. Every variable
of those two scripts applies (see their --help), e.g. LENGTH="20 100" or DEMO_QUESTIONS=4.
The settings are checked before anything is installed when an interpreter at hand can check them
(an earlier demo's .venv, or PYTHON with mem-agent's dependencies); otherwise the installation
comes first and run-eval.sh checks them before it starts or writes anything.
A second run reuses the data and results of the first (and says so); with nothing left to run it
starts no server. SAVE_FILE=other (a name, not a path) starts a new run folder in OUTPUT_ROOT.
USAGE
  exit 0
fi
if (($#)); then
  echo "error: unknown argument '$1' (settings are environment variables; see --help)" >&2
  exit 2
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VENV=${VENV:-${ROOT}/.venv}
BASE_PYTHON=${PYTHON:-python3} # what bootstrap.sh makes the environment from
if ! "${BASE_PYTHON}" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: ${BASE_PYTHON} is missing or older than Python 3.11; set PYTHON=/path/to/python3.11" >&2
  exit 2
fi

# run-eval.sh's checks before bootstrap.sh writes anything, by the interpreter at hand where it can
# run them (it can show run-eval.sh's --help): as a dry run, so that what the installation brings
# (vllm, ...) is not asked of it yet. Its problems stop the demo here, in one message (exit 2).
PYTHON=${BASE_PYTHON}
[[ ! -x "${VENV}/bin/python" ]] || PYTHON="${VENV}/bin/python"
export PYTHONPATH="${ROOT}/examples${PYTHONPATH:+:${PYTHONPATH}}"
if "${PYTHON}" -m mem_agent run-eval --help >/dev/null 2>&1 &&
  ! checked=$(DRY_RUN=1 "${PYTHON}" -m mem_agent run-eval 2>&1 >/dev/null); then
  echo "error:${checked#*error:}" >&2 # the message, without the dry run's warnings
  exit 2
fi

bash "${ROOT}/scripts/bootstrap.sh"
export PYTHON="${VENV}/bin/python"
exec bash "${ROOT}/examples/mem_agent/run-eval.sh"
