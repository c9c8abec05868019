#!/usr/bin/env bash
# Megatron checkpoints (SAVE_PATH/iter_XXXXXXX) -> Hugging Face folders, with the trainer's converter.
#
#   SAVE_PATH=~/mem_agent_runs/qwen3-4b-memagent HF_CKPT=~/models/Qwen3-4B bash examples/mem_agent/convert-to-hf.sh
#   SINGLE_ITER=99 ... converts only iter_0000099.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/convert-to-hf.sh

  SAVE_PATH     training save folder holding iter_XXXXXXX checkpoints (default: ~/mem_agent_runs/qwen3-4b-memagent)
  HF_CKPT       the original Hugging Face model: config and tokenizer are copied from it (default: ~/models/Qwen3-4B)
  OUT_ROOT      converted models go to OUT_ROOT/iter_XXXXXXX (default: SAVE_PATH_hf)
  SINGLE_ITER   convert only this iteration: 99 or iter_0000099 (default: every iteration)
  TRAINER_ROOT  slime or vime checkout with tools/convert_torch_dist_to_hf.py (default: ~/slime)
  MEGATRON_PATH Megatron-LM checkout, put on PYTHONPATH (default: TRAINER_ROOT/../Megatron-LM)
  PYTHON        interpreter (default: python3)    DRY_RUN=1  print the commands instead of running them
An iteration whose output folder already has a config.json is skipped, never overwritten.
USAGE
}

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  usage
  exit 0
fi

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
OUT_ROOT=${OUT_ROOT:-${SAVE_PATH}_hf}
SINGLE_ITER=${SINGLE_ITER:-}
CONVERTER="${TRAINER_ROOT}/tools/convert_torch_dist_to_hf.py"

need_path SAVE_PATH "training save folder"
need_path HF_CKPT "original Hugging Face model"
need_path CONVERTER "the trainer's converter"
report_missing

if [[ -n "${SINGLE_ITER}" ]]; then
  number=${SINGLE_ITER#iter_}
  [[ "${number}" =~ ^[0-9]+$ ]] || die "SINGLE_ITER=${SINGLE_ITER} must be a number like 99 or iter_0000099"
  iterations=("$(printf 'iter_%07d' "$((10#${number}))")")
  [[ -d "${SAVE_PATH}/${iterations[0]}" ]] || die "${SAVE_PATH}/${iterations[0]} not found"
else
  mapfile -t iterations < <(find "${SAVE_PATH}" -mindepth 1 -maxdepth 1 -type d -name 'iter_*' -printf '%f\n' | sort)
  ((${#iterations[@]})) || die "no iter_* checkpoints in ${SAVE_PATH}"
fi

converted=0
skipped=0
for iteration in "${iterations[@]}"; do
  target="${OUT_ROOT}/${iteration}"
  if [[ -f "${target}/config.json" ]]; then
    echo "skip ${iteration}: ${target} is already converted"
    skipped=$((skipped + 1))
    continue
  fi
  redo=()
  if [[ -d "${target}" ]]; then
    echo "redo ${iteration}: ${target} has no config.json (an interrupted conversion)"
    redo=(--force)
  fi
  run env PYTHONPATH="${MEGATRON_PATH}:${TRAINER_ROOT}" "${PYTHON}" "${CONVERTER}" \
    --input-dir "${SAVE_PATH}/${iteration}" --output-dir "${target}" --origin-hf-dir "${HF_CKPT}" "${redo[@]}"
  converted=$((converted + 1))
done
echo "converted ${converted}, skipped ${skipped} (already done); outputs in ${OUT_ROOT}"
