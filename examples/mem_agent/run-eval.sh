#!/usr/bin/env bash
# RULER-HQA (and, with SUITE, RULER's general tasks and LongBench QA) evaluation of a memory agent:
# check every setting, serve the model, run the evaluator, stop what we started. Every setting is a
# variable or a flag (LENGTH=50 or --length 50): --help.
#
#   MODEL_PATH=/models/my-memagent LENGTH="50 200 800" bash examples/mem_agent/run-eval.sh
#   MODEL_PATH=/models/my-memagent SUITE="hqa ruler" RULER_ROOT=data/ruler bash examples/mem_agent/run-eval.sh
#   MODEL_PATH=/models/my-memagent SUITE=longbench LONGBENCH_ROOT=data/longbench bash examples/mem_agent/run-eval.sh
#   MODEL_PATH=/models/my-memagent DP=8 bash examples/mem_agent/run-eval.sh     # 8 GPUs, data-parallel
#   MODEL_PATH=/models/my-memagent DP=4 TP=2 DP_MODE=router bash examples/mem_agent/run-eval.sh
#   CONVERT=1 SAVE_PATH=/ckpt/run1 HF_CKPT=/models/Qwen3-4B SINGLE_ITER=99 bash examples/mem_agent/run-eval.sh
#   URL=http://10.0.0.5:8000 MODEL_PATH=/models/my-memagent bash examples/mem_agent/run-eval.sh
#   bash examples/mem_agent/run-eval.sh        # no model: the CPU demo with the tiny local Qwen3
#   bash examples/mem_agent/run-eval.sh --model-path /models/my-memagent --length "50 200"   # as flags
#   DRY_RUN=1 NUM_GPUS=8 DP=8 MODEL_PATH=... bash examples/mem_agent/run-eval.sh   # preview, on any machine
set -euo pipefail

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
PYTHON=${PYTHON:-$(checkout_python)} # the interpreter with mem-agent installed
require_python

# One process, this script's own (exec: signals reach it), `mem-agent run-eval` (launch/evaluate.py):
# it checks every setting at once (the evaluator's flags by the evaluator's own checks; all problems
# in one message, exit 2, nothing started), then holds OUTPUT_ROOT/SAVE_FILE's lock for the whole
# run, converts first with CONVERT=1, starts what serves (vLLM's OpenAI server on the GPUs, one per
# replica, vllm-router with DP_MODE=router, or the CPU stack; nothing when no item is left to run),
# waits for health, runs the evaluator (python -m mem_agent.eval_ruler_hqa) and stops every session
# it started (SERVE_STOP_TIMEOUT, then SIGKILL), also when this script is killed with kill -9
# (each is tethered to it). DRY_RUN=1 prints the commands instead.
exec "${PYTHON}" -m mem_agent run-eval "$@"
