#!/usr/bin/env bash
# Megatron checkpoints of a training run (SAVE_PATH/iter_XXXXXXX) -> Hugging Face folders, with the
# trainer's own converter (tools/convert_torch_dist_to_hf.py). Every setting: --help.
#
#   SAVE_PATH=~/mem_agent_runs/qwen3-4b-memagent HF_CKPT=~/models/Qwen3-4B bash examples/mem_agent/convert-to-hf.sh
#   SINGLE_ITER=99 ... converts only iter_0000099.
set -euo pipefail

PYTHON=${PYTHON:-python3} # the trainer's interpreter: torch and the trainer's requirements
# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
launch_help convert "$@"
# Checks every setting, decides which iterations need converting (a folder with config.json is
# done; one without is an interrupted conversion, redone with --force) and sets the values below.
settings=$(launch_settings convert "$@")
eval "${settings}"

for iteration in "${ITERATIONS[@]}"; do
  force=()
  [[ " ${REDO[*]} " != *" ${iteration} "* ]] || force=(--force)
  run env PYTHONPATH="${MEGATRON_PATH}:${TRAINER_ROOT}" "${PYTHON}" "${CONVERTER}" \
    --input-dir "${SAVE_PATH}/${iteration}" --output-dir "${OUT_ROOT}/${iteration}" --origin-hf-dir "${HF_CKPT}" \
    "${VOCAB_ARGS[@]}" "${force[@]}"
done
verb=converted
[[ "${DRY_RUN}" != "1" ]] || verb="would convert"
echo "${verb} ${#ITERATIONS[@]}, skipped ${SKIPPED} (already converted); outputs in ${OUT_ROOT}"
