#!/usr/bin/env bash
# RULER-HQA evaluation files: check which eval_<N>.json are in DATA_ROOT, and fetch or build the
# missing ones. Every file is checked by streaming it (an eval_6400.json is ~450 MB).
#
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh              # check only
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh --download   # from the Hugging Face Hub
#   DATA_ROOT=data/ruler_hqa bash examples/mem_agent/prepare-eval-data.sh --build-from hotpot_dev_distractor_v1.json
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/prepare-eval-data.sh [--download | --build-from RAW.json] [-h | --help]

  DATA_ROOT     folder of eval_<N>.json files (default: data/ruler_hqa, as run-eval.sh)
  LENGTH        document counts N to check (default: "50 100 200 400 800 1600 3200 6400"; the same
                variable as run-eval.sh's; LENGTHS is accepted as another spelling)
  --download    (or DOWNLOAD=1) fetch the missing files from MemAgent's dataset on the Hub:
                HF_ENDPOINT/datasets/HF_REPO/resolve/HF_REVISION/eval_<N>.json
    HF_ENDPOINT   default https://huggingface.co
    HF_REPO       default BytedTsinghua-SIA/hotpotqa      HF_REVISION  default main
    HF_TOKEN      only from the environment; sent as a header that curl reads from stdin
    (HF_REPO and HF_REVISION without --download are errors: nothing would read them)
  --build-from RAW.json  (or BUILD_FROM=RAW.json) build the missing files locally from raw
                HotpotQA / 2WikiMultiHopQA rows with mem_agent.build_long_context (no Hub access needed)
    NUM_QUESTIONS questions per built file (default: 128)    SEED  shuffle seed (default: 42)
    (both without --build-from are errors: nothing would read them)
  PYTHON        interpreter for the checks and the builder (default: VENV/bin/python, VENV
                defaulting to the checkout's .venv made by scripts/bootstrap.sh; else python3)
  DRY_RUN=1     print the download or build commands instead of running them; what this machine
                lacks is a warning

Each file must be a JSON array of objects with context, input and answers. The table gives each
length's status (present, missing, downloaded, built, invalid, download failed, build failed),
item count and size. Exit status: 0 when every length is ready, 1 when some are not, 2 on a
usage error. Files that exist are never overwritten or deleted, valid or not: a download goes
to a new temporary file of its own (eval_<N>.json.partial.XXXXXX), renamed into place once checked.
USAGE
}

DOWNLOAD=${DOWNLOAD:-0}
BUILD_FROM=${BUILD_FROM:-}
while (($#)); do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --download) DOWNLOAD=1 ;;
    --build-from)
      (($# > 1)) || {
        echo "error: --build-from needs a file" >&2
        exit 2
      }
      BUILD_FROM=$2
      shift
      ;;
    *)
      echo "error: unknown argument '$1' (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
[[ "${DOWNLOAD}" == "1" ]] || unused HF_REPO HF_REVISION "they choose what --download fetches"
[[ -n "${BUILD_FROM}" ]] || unused NUM_QUESTIONS SEED "they shape what --build-from builds"
DATA_ROOT=${DATA_ROOT:-data/ruler_hqa}
# LENGTHS is the spelling the vime example's README uses: the same setting as LENGTH. Both set with
# different counts would leave one of them silently unread, so that is refused.
if [[ -n "${USER_SET[LENGTHS]:-}" ]]; then
  read -r -a _length_words <<<"${LENGTH:-}"
  read -r -a _lengths_words <<<"${LENGTHS}"
  if [[ -n "${USER_SET[LENGTH]:-}" && "${_length_words[*]}" != "${_lengths_words[*]}" ]]; then
    problem "LENGTH='${LENGTH}' and LENGTHS='${LENGTHS}' differ: set one of them (LENGTHS is another spelling of LENGTH)"
  fi
  LENGTH=${LENGTH:-${LENGTHS}}
fi
LENGTH=${LENGTH:-"50 100 200 400 800 1600 3200 6400"}
HF_ENDPOINT=${HF_ENDPOINT:-https://huggingface.co}
HF_REPO=${HF_REPO:-BytedTsinghua-SIA/hotpotqa}
HF_REVISION=${HF_REVISION:-main}
NUM_QUESTIONS=${NUM_QUESTIONS:-128}
SEED=${SEED:-42}
# mem_agent from this checkout, also where `pip install -e` was not run.
export PYTHONPATH="${MEM_EXAMPLES_DIR}${PYTHONPATH:+:${PYTHONPATH}}"

read -r -a lengths <<<"${LENGTH}"
((${#lengths[@]})) || problem "LENGTH='${LENGTH}' is empty: give document counts such as \"50 200\""
for n in "${lengths[@]}"; do
  [[ "${n}" =~ ^[1-9][0-9]*$ ]] || problem "LENGTH has '${n}': document counts are positive integers, such as \"50 200\""
done
require_flag DRY_RUN
require_flag DOWNLOAD
[[ "${DOWNLOAD}" != "1" || -z "${BUILD_FROM}" ]] || problem "choose one of --download and --build-from"
[[ -z "${BUILD_FROM}" || -f "${BUILD_FROM}" ]] || missing "--build-from ${BUILD_FROM}: file not found"
require_count NUM_QUESTIONS
require_count SEED 0
[[ "${DOWNLOAD}" != "1" ]] || require_cmd curl "it downloads the files"
# DATA_ROOT is a folder, or one that can be made: its nearest existing part is a folder we can write.
existing=${DATA_ROOT}
while [[ ! -e "${existing}" && "${existing}" != "$(dirname "${existing}")" ]]; do existing=$(dirname "${existing}"); done
if [[ -e "${existing}" && ! -d "${existing}" ]]; then
  problem "DATA_ROOT=${DATA_ROOT}: ${existing} is a file, not a folder"
elif [[ "${DOWNLOAD}" == "1" || -n "${BUILD_FROM}" ]] && [[ ! -w "${existing}" ]]; then
  missing "DATA_ROOT=${DATA_ROOT}: cannot write in ${existing}"
fi
if [[ -n "${BUILD_FROM}" ]]; then
  resolve_python tqdm || true # the builder
else
  resolve_python || true # the checks need only the standard library
fi
report_problems

# Prints the item count of a valid file; fails with a one-line reason otherwise. The checker is
# the evaluator's own (mem_agent.evaluation.files.check_eval_file): a file that passes here runs.
check() {
  local out
  if ! out=$("${PYTHON}" -m mem_agent.evaluation.files --check "$1" 2>&1); then
    out=${out##*$'\n'}
    echo "${out#error: }"
    return 1
  fi
  echo "${out}"
}

# download N: into a new temporary file of its own beside the target (eval_N.json.partial.XXXXXX,
# so no existing file is touched), renamed only once it has passed the check. Prints a reason and
# fails when it did not work; fails quietly in a dry run, where it only prints the command.
download() {
  local n=$1 target="${DATA_ROOT}/eval_${1}.json" err count partial="${DATA_ROOT}/eval_${1}.json.partial.XXXXXX"
  local url="${HF_ENDPOINT%/}/datasets/${HF_REPO}/resolve/${HF_REVISION}/eval_${n}.json"
  if [[ "${DRY_RUN}" != "1" ]]; then
    mkdir -p "${DATA_ROOT}"
    partial=$(mktemp "${partial}")
    chmod "$(printf '%o' $((0666 & ~$(umask))))" "${partial}" # mktemp makes it 0600; the file is data
  fi
  local curl_args=(--fail --location --silent --show-error --retry 3 --connect-timeout 30 --output "${partial}" "${url}")
  # The token travels as a header in a curl config read from stdin, never as an argument, so
  # it shows neither in `ps` nor in this script's output.
  [[ -z "${HF_TOKEN:-}" ]] || curl_args=(--config - "${curl_args[@]}")
  if [[ "${DRY_RUN}" == "1" ]]; then
    run curl "${curl_args[@]}"
    [[ -z "${HF_TOKEN:-}" ]] || echo "  HF_TOKEN=<set>: curl reads it as an Authorization header from stdin"
    return 1
  fi
  # printf is a builtin: the token never appears in a process's arguments. Without a token curl
  # is not told to read a config, and the empty stdin is ignored.
  err=$({ [[ -z "${HF_TOKEN:-}" ]] || printf 'header = "Authorization: Bearer %s"\n' "${HF_TOKEN}"; } |
    curl "${curl_args[@]}" 2>&1) || {
    rm -f "${partial}"
    echo "${err##*$'\n'}"
    return 1
  }
  count=$(check "${partial}") || {
    rm -f "${partial}"
    echo "downloaded file is not a valid eval file: ${count}"
    return 1
  }
  mv "${partial}" "${target}"
  echo "${count}"
}

declare -A status items reason
absent_lengths=()
for n in "${lengths[@]}"; do
  file="${DATA_ROOT}/eval_${n}.json"
  if [[ ! -e "${file}" ]]; then
    status[${n}]=missing
    absent_lengths+=("${n}")
  elif count=$(check "${file}"); then
    status[${n}]=present
    items[${n}]=${count}
  else
    status[${n}]=invalid
    reason[${n}]=${count}
  fi
done

if ((${#absent_lengths[@]})) && [[ "${DOWNLOAD}" == "1" ]]; then
  for n in "${absent_lengths[@]}"; do
    echo "eval_${n}.json: downloading from ${HF_ENDPOINT} (${HF_REPO})"
    if out=$(download "${n}"); then
      status[${n}]=downloaded
      items[${n}]=${out}
    elif [[ "${DRY_RUN}" == "1" ]]; then
      echo "${out}"
    else
      status[${n}]="download failed"
      reason[${n}]=${out}
    fi
  done
elif ((${#absent_lengths[@]})) && [[ -n "${BUILD_FROM}" ]]; then
  [[ "${DRY_RUN}" == "1" ]] || mkdir -p "${DATA_ROOT}"
  if run "${PYTHON}" -m mem_agent.build_long_context --input "${BUILD_FROM}" --num-docs "${absent_lengths[@]}" \
    --num-questions "${NUM_QUESTIONS}" --seed "${SEED}" --out-dir "${DATA_ROOT}" && [[ "${DRY_RUN}" != "1" ]]; then
    for n in "${absent_lengths[@]}"; do
      if count=$(check "${DATA_ROOT}/eval_${n}.json"); then
        status[${n}]=built
        items[${n}]=${count}
      else
        status[${n}]="build failed"
        reason[${n}]=${count}
      fi
    done
  elif [[ "${DRY_RUN}" != "1" ]]; then
    for n in "${absent_lengths[@]}"; do
      status[${n}]="build failed"
    done
  fi
fi

human_size() {
  [[ -f "$1" ]] || {
    echo -
    return
  }
  numfmt --to=iec --suffix=B "$(stat -c %s "$1")"
}
printf '%8s | %-15s | %6s | %8s | %s\n' length status items size file
not_ready=0
for n in "${lengths[@]}"; do
  file="${DATA_ROOT}/eval_${n}.json"
  printf '%8s | %-15s | %6s | %8s | %s\n' "${n}" "${status[${n}]}" "${items[${n}]:--}" "$(human_size "${file}")" "${file}"
  case "${status[${n}]}" in
    present | downloaded | built) ;;
    *) not_ready=$((not_ready + 1)) ;;
  esac
done
for n in "${lengths[@]}"; do
  [[ -z "${reason[${n}]:-}" ]] || echo "eval_${n}.json: ${reason[${n}]}" >&2
done
if ((not_ready)); then
  {
    echo "${not_ready} length(s) not ready. Missing files: --download (Hub access) or --build-from RAW.json."
    echo "An invalid file is left as it is: move it aside, then run this again."
  } >&2
  exit 1
fi
