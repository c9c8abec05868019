#!/usr/bin/env bash
# Megatron checkpoints of a training run (SAVE_PATH/iter_XXXXXXX) -> Hugging Face folders, with the
# trainer's own converter (tools/convert_torch_dist_to_hf.py). Every setting is a variable or a flag: --help.
#
#   SAVE_PATH=~/mem_agent_runs/qwen3-4b-memagent HF_CKPT=~/models/Qwen3-4B bash examples/mem_agent/convert-to-hf.sh
#   SINGLE_ITER=99 ... converts only iter_0000099.
set -euo pipefail

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
PYTHON=${PYTHON:-python3} # the trainer's interpreter: torch and the trainer's requirements
require_python

# One process, `mem-agent convert-to-hf` (launch/convert.py): every setting checked at once (exit 2),
# then the converter run for each iteration that needs it (a folder with config.json is done; one
# without is an interrupted conversion, redone with --force), and one line of what was done.
exec "${PYTHON}" -m mem_agent convert-to-hf "$@"
