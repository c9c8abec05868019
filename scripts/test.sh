#!/usr/bin/env bash
# Set up the environment (scripts/bootstrap.sh) and run every check: ruff, shellcheck, pytest.
# Exits non-zero if anything fails; extra arguments go to pytest (e.g. -k workflow, -x).
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  cat <<'USAGE'
usage: [VAR=value ...] bash scripts/test.sh [pytest arguments...]

  VENV       virtual environment (default: .venv in the project; created if missing)
  SKIP_LINT  1 = run only pytest (default: 0)
  Other variables are bootstrap.sh's (see bash scripts/bootstrap.sh --help).
USAGE
  exit 0
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VENV=${VENV:-${ROOT}/.venv}
SKIP_LINT=${SKIP_LINT:-0}
if [[ "${SKIP_LINT}" != 0 && "${SKIP_LINT}" != 1 ]]; then
  echo "error: SKIP_LINT=${SKIP_LINT} must be 0 or 1 (nothing was run)" >&2
  exit 2
fi
cd "${ROOT}"

bash scripts/bootstrap.sh

if [[ "${SKIP_LINT}" != "1" ]]; then
  "${VENV}/bin/ruff" check .
  "${VENV}/bin/ruff" format --check .
  mapfile -t shell_scripts < <(git ls-files '*.sh' .ci/run 2>/dev/null || find . \( -name '*.sh' -o -path ./.ci/run \) -not -path './.venv/*')
  "${VENV}/bin/shellcheck" -x "${shell_scripts[@]}"
fi

status=0
"${VENV}/bin/python" -m pytest "$@" || status=$?
if [[ "${status}" -eq 5 ]]; then
  echo "error: pytest collected no tests" >&2
fi
exit "${status}"
