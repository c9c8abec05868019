#!/usr/bin/env bash
# RULER-HQA eval files: check which eval_<N>.json are in DATA_ROOT, fetch or build the missing ones.
#
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh              # check only
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh --download   # from the Hugging Face hub
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh --build-from hotpot_dev.json
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/prepare-eval-data.sh [--download | --build-from RAW.json]

  DATA_ROOT     folder of eval_<N>.json files (default: data/ruler_hqa)
  LENGTHS       document counts (default: "50 100 200 400 800 1600 3200 6400")
  DOWNLOAD=1    same as --download: fetch missing files from the MemAgent dataset on the hub
  HF_REPO       dataset repository (default: BytedTsinghua-SIA/hotpotqa)
  HF_ENDPOINT   hub address (default: https://huggingface.co); HF_TOKEN, if needed, only from the environment
  BUILD_FROM    same as --build-from: build missing files from raw HotpotQA/2Wiki rows with
                mem_agent.build_long_context (for machines without hub access)
  NUM_QUESTIONS questions per built file (default: 128)    SEED  shuffle seed for built files (default: 42)
  PYTHON        interpreter with mem_agent installed (default: python3)    DRY_RUN=1  print, do not fetch or build
Every present file is checked (a JSON array of objects with context, input and answers);
the table says present, missing, downloaded, built or invalid for each length.
USAGE
}

DOWNLOAD=${DOWNLOAD:-0}
BUILD_FROM=${BUILD_FROM:-}
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --download) DOWNLOAD=1 ;;
    --build-from) BUILD_FROM=${2:?--build-from needs a file}; shift ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
DATA_ROOT=${DATA_ROOT:-data/ruler_hqa}
LENGTHS=${LENGTHS:-"50 100 200 400 800 1600 3200 6400"}
HF_REPO=${HF_REPO:-BytedTsinghua-SIA/hotpotqa}
HF_ENDPOINT=${HF_ENDPOINT:-https://huggingface.co}
NUM_QUESTIONS=${NUM_QUESTIONS:-128}
SEED=${SEED:-42}
read -r -a lengths <<<"${LENGTHS}"
for n in "${lengths[@]}"; do
  [[ "${n}" =~ ^[1-9][0-9]*$ ]] || die "LENGTHS has '${n}'; it must be positive integers"
done
[[ -z "${BUILD_FROM}" || -f "${BUILD_FROM}" ]] || die "--build-from ${BUILD_FROM}: file not found"
[[ "${DOWNLOAD}" != "1" || -z "${BUILD_FROM}" ]] || die "choose one of --download and --build-from"

check() { # prints the item count of a valid file; fails with a one-line reason otherwise
  "${PYTHON}" -m mem_agent.jsonstream --check "$1" --require-keys context,input,answers 2>&1
}

download() { # download N: into a temporary file, renamed only when complete
  local n=$1 target="${DATA_ROOT}/eval_${1}.json"
  local url="${HF_ENDPOINT%/}/datasets/${HF_REPO}/resolve/main/eval_${n}.json"
  local curl_args=(--fail --location --silent --show-error --retry 3 --output "${target}.partial" "${url}")
  if [[ "${DRY_RUN}" == "1" ]]; then
    run curl "${curl_args[@]}"
    return 1
  fi
  if [[ -n "${HF_TOKEN:-}" ]]; then
    # The token goes in a header read from stdin, so it never appears in `ps` or in a log.
    printf 'header = "Authorization: Bearer %s"\n' "${HF_TOKEN}" | curl --config - "${curl_args[@]}" || return 1
  else
    curl "${curl_args[@]}" || return 1
  fi
  mv "${target}.partial" "${target}"
}

mkdir -p "${DATA_ROOT}"
missing=()
declare -A status items reason
for n in "${lengths[@]}"; do
  file="${DATA_ROOT}/eval_${n}.json"
  if [[ -f "${file}" ]]; then
    if count=$(check "${file}"); then
      status[${n}]=present
      items[${n}]=${count}
    else
      status[${n}]=invalid
      reason[${n}]="${count#error: }"
    fi
  else
    status[${n}]=missing
    missing+=("${n}")
  fi
done

if ((${#missing[@]})) && [[ "${DOWNLOAD}" == "1" ]]; then
  for n in "${missing[@]}"; do
    echo "downloading eval_${n}.json from ${HF_ENDPOINT} (${HF_REPO})"
    if download "${n}" && count=$(check "${DATA_ROOT}/eval_${n}.json"); then
      status[${n}]=downloaded; items[${n}]=${count}
    elif [[ "${DRY_RUN}" != "1" ]]; then
      rm -f "${DATA_ROOT}/eval_${n}.json.partial"
      status[${n}]="download failed"
    fi
  done
elif ((${#missing[@]})) && [[ -n "${BUILD_FROM}" ]]; then
  run "${PYTHON}" -m mem_agent.build_long_context --input "${BUILD_FROM}" --num-docs "${missing[@]}" \
    --num-questions "${NUM_QUESTIONS}" --seed "${SEED}" --out-dir "${DATA_ROOT}"
  if [[ "${DRY_RUN}" != "1" ]]; then
    for n in "${missing[@]}"; do
      if count=$(check "${DATA_ROOT}/eval_${n}.json"); then status[${n}]=built; items[${n}]=${count}; fi
    done
  fi
fi

printf '%8s | %-16s | %6s | %10s | %s\n' length status items size file
bad=0
for n in "${lengths[@]}"; do
  file="${DATA_ROOT}/eval_${n}.json"
  size=-
  [[ -f "${file}" ]] && size=$(du -h "${file}" | cut -f1)
  printf '%8s | %-16s | %6s | %10s | %s\n' "${n}" "${status[${n}]}" "${items[${n}]:--}" "${size}" "${file}"
  [[ "${status[${n}]}" == present || "${status[${n}]}" == downloaded || "${status[${n}]}" == built ]] || bad=$((bad + 1))
done
for n in "${!reason[@]}"; do
  echo "eval_${n}.json: ${reason[${n}]}" >&2
done
if ((bad)); then
  echo "${bad} length(s) not ready: use --download (hub access) or --build-from RAW.json" >&2
  exit 1
fi
