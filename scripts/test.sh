#!/usr/bin/env bash
# Set up the environment (scripts/bootstrap.sh) and run every check: ruff, shellcheck, pytest.
# Exits non-zero if anything fails; extra arguments go to pytest (e.g. -k workflow, -x).
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  cat <<'USAGE'
usage: [VAR=value ...] bash scripts/test.sh [pytest arguments...]

  VENV       virtual environment (default: .venv in the project; created if missing)
  SKIP_LINT  1 = run only pytest (default: 0)
  CHROMIUM   browser the viewer's test drives (default: chromium); when none is found, root
             installs Debian's chromium with apt-get, anyone else is told the command
  DRY_RUN=1  print the commands instead of running them
  Other variables are bootstrap.sh's (see bash scripts/bootstrap.sh --help).
USAGE
  exit 0
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VENV=${VENV:-${ROOT}/.venv}
SKIP_LINT=${SKIP_LINT:-0}
CHROMIUM=${CHROMIUM:-chromium}
DRY_RUN=${DRY_RUN:-0}
for knob in SKIP_LINT DRY_RUN; do
  if [[ "${!knob}" != 0 && "${!knob}" != 1 ]]; then
    echo "error: ${knob}=${!knob} must be 0 or 1 (nothing was run)" >&2
    exit 2
  fi
done
cd "${ROOT}"

run() {
  if [[ "${DRY_RUN}" == "1" ]]; then
    printf '%q ' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# The viewer's test loads its page in a real Chromium and the suite never skips: a missing browser
# is installed where this may (root, as CI runs) or is a stop that names the one command to run.
if ! command -v "${CHROMIUM}" >/dev/null 2>&1; then
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "error: ${CHROMIUM} not found; the tests need Chromium: sudo apt-get update && sudo apt-get install -y chromium" >&2
    exit 2
  fi
  run apt-get update
  run env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi

DRY_RUN=${DRY_RUN} bash scripts/bootstrap.sh

if [[ "${SKIP_LINT}" != "1" ]]; then
  run "${VENV}/bin/ruff" check .
  run "${VENV}/bin/ruff" format --check .
  mapfile -t shell_scripts < <(git ls-files '*.sh' .ci/run 2>/dev/null || find . \( -name '*.sh' -o -path ./.ci/run \) -not -path './.venv/*')
  run "${VENV}/bin/shellcheck" -x "${shell_scripts[@]}"
fi

status=0
run "${VENV}/bin/python" -m pytest "$@" || status=$?
if [[ "${status}" -eq 5 ]]; then
  echo "error: pytest collected no tests" >&2
fi
exit "${status}"
