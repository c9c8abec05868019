#!/usr/bin/env bash
# The whole pipeline on this machine, no GPU needed: set up the environment, then evaluate the
# tiny local Qwen3 as a MemAgent at two context lengths on vLLM's CPU build (run-eval.sh's CPU path).
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  cat <<'USAGE'
usage: [VAR=value ...] bash scripts/demo.sh

Sets up .venv (scripts/bootstrap.sh), then runs examples/mem_agent/run-eval.sh with no model,
which builds the tiny Qwen3, a synthetic multi-hop QA set, and evaluates at two lengths.
Every variable of those two scripts applies (see their --help), e.g. LENGTH="20 100".
USAGE
  exit 0
fi
if (($#)); then
  echo "error: unknown argument '$1' (settings are environment variables; see --help)" >&2
  exit 2
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VENV=${VENV:-${ROOT}/.venv}
bash "${ROOT}/scripts/bootstrap.sh"
export PYTHON="${VENV}/bin/python"
exec bash "${ROOT}/examples/mem_agent/run-eval.sh"
