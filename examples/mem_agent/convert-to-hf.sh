#!/usr/bin/env bash
# Megatron checkpoints of a training run (SAVE_PATH/iter_XXXXXXX) -> Hugging Face folders, with the
# trainer's own converter (tools/convert_torch_dist_to_hf.py).
#
#   SAVE_PATH=~/mem_agent_runs/qwen3-4b-memagent HF_CKPT=~/models/Qwen3-4B bash examples/mem_agent/convert-to-hf.sh
#   SINGLE_ITER=99 ... converts only iter_0000099.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/convert-to-hf.sh [-h | --help]

  SAVE_PATH     training save folder holding iter_XXXXXXX checkpoints (default: ~/mem_agent_runs/qwen3-4b-memagent)
  HF_CKPT       the original Hugging Face model; its config and tokenizer files are copied (default: ~/models/Qwen3-4B)
  OUT_ROOT      converted models go to OUT_ROOT/iter_XXXXXXX (default: SAVE_PATH_hf)
  SINGLE_ITER   convert only this iteration: 99 or iter_0000099 (default: every iteration)
  VOCAB_SIZE    rows of the embedding to keep: Megatron pads it to a multiple of 128 x TP
                (default: vocab_size from HF_CKPT/config.json, or its text_config; a config.json
                without one is an error unless VOCAB_SIZE is set)
  TRAINER_ROOT  slime or vime checkout with tools/convert_torch_dist_to_hf.py (default: ~/slime)
  MEGATRON_PATH Megatron-LM checkout, put on PYTHONPATH (default: TRAINER_ROOT/../Megatron-LM)
  PYTHON        interpreter with torch and the trainer's requirements (default: python3)
  DRY_RUN=1     print the commands instead of running them; what this machine lacks is a warning
An iteration whose output folder has a config.json is skipped: the converter copies config.json
last, so its presence means the conversion finished. A folder without it (an interrupted
conversion) is converted again with --force. Nothing else is ever overwritten.
USAGE
}

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
accept_only_help "$@"
PYTHON=${PYTHON:-python3} # the trainer's interpreter (its own environment, not this checkout's .venv)
OUT_ROOT=${OUT_ROOT:-${SAVE_PATH}_hf}
SINGLE_ITER=${SINGLE_ITER:-}
VOCAB_SIZE=${VOCAB_SIZE:-}
CONVERTER="${TRAINER_ROOT}/tools/convert_torch_dist_to_hf.py"

require_flag DRY_RUN
require_path SAVE_PATH "training save folder"
require_path HF_CKPT "original Hugging Face model" "the model training started from"
[[ ! -d "${HF_CKPT}" || -f "${HF_CKPT}/config.json" ]] || missing "HF_CKPT=${HF_CKPT} has no config.json: not a Hugging Face model folder"
require_path TRAINER_ROOT "slime or vime checkout"
[[ ! -d "${TRAINER_ROOT}" || -f "${CONVERTER}" ]] || missing "${CONVERTER} not found: TRAINER_ROOT is not a slime or vime checkout"
require_path MEGATRON_PATH "Megatron-LM checkout" "the converter imports it"
require_cmd "${PYTHON}" "a Python with torch and the trainer's requirements (PYTHON=...)"
if [[ -n "${VOCAB_SIZE}" ]]; then
  [[ "${VOCAB_SIZE}" =~ ^[1-9][0-9]*$ ]] || problem "VOCAB_SIZE=${VOCAB_SIZE} must be a positive integer"
elif [[ -f "${HF_CKPT}/config.json" ]] && reader=$(stdlib_python); then
  # The model's own vocabulary size (a VLM keeps it under text_config), read now: a config.json
  # that cannot be read is a problem here, not a traceback after the checks.
  if ! VOCAB_SIZE=$(_CONFIG="${HF_CKPT}/config.json" "${reader}" -c '
import json, os, sys
path = os.environ["_CONFIG"]
try:
    with open(path) as handle:
        config = json.load(handle)
except (OSError, ValueError) as error:
    sys.exit(f"{path}: {error}")
if not isinstance(config, dict):
    sys.exit(f"{path}: not a JSON object")
size = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
if not isinstance(size, int) or isinstance(size, bool) or size < 1:
    sys.exit(f"{path} has no vocab_size (set VOCAB_SIZE)")
print(size)' 2>&1); then
    problem "HF_CKPT=${HF_CKPT}: ${VOCAB_SIZE##*$'\n'}"
    VOCAB_SIZE=""
  fi
fi
iterations=()
if [[ -n "${SINGLE_ITER}" ]]; then
  number=${SINGLE_ITER#iter_}
  if [[ "${number}" =~ ^[0-9]+$ ]]; then
    iterations=("$(printf 'iter_%07d' "$((10#${number}))")")
    [[ ! -d "${SAVE_PATH}" || -d "${SAVE_PATH}/${iterations[0]}" ]] ||
      missing "SINGLE_ITER=${SINGLE_ITER}: ${SAVE_PATH}/${iterations[0]} not found"
  else
    problem "SINGLE_ITER=${SINGLE_ITER} must be a number like 99 or iter_0000099"
  fi
elif [[ -d "${SAVE_PATH}" ]]; then
  mapfile -t iterations < <(find "${SAVE_PATH}" -mindepth 1 -maxdepth 1 -type d -name 'iter_*' -printf '%f\n' | sort)
  ((${#iterations[@]})) || missing "SAVE_PATH=${SAVE_PATH} has no iter_* checkpoint folders (has training saved yet?)"
fi
report_problems

vocab=()
[[ -z "${VOCAB_SIZE}" ]] || vocab=(--vocab-size "${VOCAB_SIZE}")

converted=0
skipped=0
for iteration in "${iterations[@]}"; do
  target="${OUT_ROOT}/${iteration}"
  if [[ -f "${target}/config.json" ]]; then
    echo "skip ${iteration}: ${target} is already converted (it has config.json)"
    skipped=$((skipped + 1))
    continue
  fi
  redo=()
  if [[ -e "${target}" ]]; then
    echo "redo ${iteration}: ${target} has no config.json (an interrupted conversion)"
    redo=(--force)
  fi
  run env PYTHONPATH="${MEGATRON_PATH}:${TRAINER_ROOT}" "${PYTHON}" "${CONVERTER}" \
    --input-dir "${SAVE_PATH}/${iteration}" --output-dir "${target}" --origin-hf-dir "${HF_CKPT}" \
    "${vocab[@]}" "${redo[@]}"
  converted=$((converted + 1))
done
verb=converted
[[ "${DRY_RUN}" != "1" ]] || verb="would convert"
echo "${verb} ${converted}, skipped ${skipped} (already converted); outputs in ${OUT_ROOT}"
