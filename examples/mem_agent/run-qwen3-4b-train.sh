#!/usr/bin/env bash
# GRPO training of Qwen3-4B as a MemAgent through slime (SGLang rollout) or vime (vLLM rollout):
# check every setting, start a Ray head on this node, submit the trainer's train.py with the
# mem_agent hooks, and stop only the Ray head this script started. Every setting: --help.
#
#   TRAINER_ROOT=~/slime HF_CKPT=~/models/Qwen3-4B TORCH_DIST=~/models/Qwen3-4B_torch_dist \
#   TRAIN_DATA=~/mem_agent_data/hotpotqa_train.jsonl bash examples/mem_agent/run-qwen3-4b-train.sh
#   DRY_RUN=1 ... prints the commands on any machine; MASTER_ADDR=<head> JOIN=1 ... on another node.
#
# The hooks are imported inside the trainer's Ray actors, on every node: run `pip install -e <this
# repo>` on each node (the job's PYTHONPATH also holds this checkout's examples/ folder, which is
# enough where the checkout is on a shared file system).
set -euo pipefail

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
PYTHON=${PYTHON:-python3} # the trainer's interpreter (its own environment), with mem-agent installed
require_python

# Python does the whole launch: checks every setting at once (MEM_* included), prints what it will
# run, then joins a cluster (JOIN=1), prints the commands (DRY_RUN=1), or starts the Ray head and
# submits the job with the recipe's flags (launch/recipe.py). This process is the launch: stopping
# it (Ctrl-C, SIGTERM, kill -9) stops the head it started unless KEEP_RAY=1.
exec "${PYTHON}" -m mem_agent train "$@"
