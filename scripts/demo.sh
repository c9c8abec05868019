#!/usr/bin/env bash
# The whole pipeline on this machine, no GPU needed: check every setting, set up the environment,
# then evaluate the tiny local Qwen3 as a MemAgent at two context lengths on vLLM's CPU build
# (run-eval.sh's CPU path).
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  cat <<'USAGE'
usage: [VAR=value ...] bash scripts/demo.sh

Checks the settings of both steps first (nothing is installed or started when one is wrong; the
evaluator's own arguments, such as EXTRA_EVAL_ARGS, are checked then only where the interpreter
already has the packages, else right after the installation, before any server starts), sets
up .venv (scripts/bootstrap.sh), then runs examples/mem_agent/run-eval.sh with no model, which
builds the tiny Qwen3, a synthetic multi-hop QA set, and evaluates at two lengths. Every variable
of those two scripts applies (see their --help), e.g. LENGTH="20 100" or DEMO_QUESTIONS=4.
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
# shellcheck source=examples/mem_agent/_common.sh
source "${ROOT}/examples/mem_agent/_common.sh"
export VENV=${VENV:-${ROOT}/.venv}
BASE_PYTHON=${PYTHON:-python3} # what bootstrap.sh makes the environment from
if ! "${BASE_PYTHON}" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  die "${BASE_PYTHON} is missing or older than Python 3.11; set PYTHON=/path/to/python3.11"
fi

# run-eval.sh's checks, before bootstrap.sh writes anything, on the interpreter at hand: the
# environment it will use may not exist yet. The MEM_* settings need only the standard library;
# the evaluator's own arguments (EXTRA_EVAL_ARGS, CONCURRENCY, ...) need its packages, so they are
# checked here when the interpreter has them (e.g. an earlier demo's .venv), else by run-eval.sh
# after the installation, still before any server starts.
checker=${BASE_PYTHON}
[[ ! -x "${VENV}/bin/python" ]] || checker="${VENV}/bin/python"
adopt_checks "" env PYTHON="${checker}" _MEM_SETTINGS_ONLY=1 bash "${ROOT}/examples/mem_agent/run-eval.sh"
report_problems

bash "${ROOT}/scripts/bootstrap.sh"
export PYTHON="${VENV}/bin/python"
exec bash "${ROOT}/examples/mem_agent/run-eval.sh"
