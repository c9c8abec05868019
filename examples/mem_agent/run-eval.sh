#!/usr/bin/env bash
# RULER-HQA (and, with SUITE, RULER's general tasks and LongBench QA) evaluation of a memory agent:
# check every setting, serve the model, run the evaluator, stop what we started. Every setting: --help.
#
#   MODEL_PATH=/models/my-memagent LENGTH="50 200 800" bash examples/mem_agent/run-eval.sh
#   MODEL_PATH=/models/my-memagent SUITE="hqa ruler" RULER_ROOT=data/ruler bash examples/mem_agent/run-eval.sh
#   MODEL_PATH=/models/my-memagent SUITE=longbench LONGBENCH_ROOT=data/longbench bash examples/mem_agent/run-eval.sh
#   MODEL_PATH=/models/my-memagent DP=8 bash examples/mem_agent/run-eval.sh     # 8 GPUs, data-parallel
#   MODEL_PATH=/models/my-memagent DP=4 TP=2 DP_MODE=router bash examples/mem_agent/run-eval.sh
#   CONVERT=1 SAVE_PATH=/ckpt/run1 HF_CKPT=/models/Qwen3-4B SINGLE_ITER=99 bash examples/mem_agent/run-eval.sh
#   URL=http://10.0.0.5:8000 MODEL_PATH=/models/my-memagent bash examples/mem_agent/run-eval.sh
#   bash examples/mem_agent/run-eval.sh        # no model: the CPU demo with the tiny local Qwen3
#   DRY_RUN=1 NUM_GPUS=8 DP=8 MODEL_PATH=... bash examples/mem_agent/run-eval.sh   # preview, on any machine
set -euo pipefail

# The interpreter with mem-agent installed: the checkout's .venv (scripts/bootstrap.sh) when there.
VENV=${VENV:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.venv}
[[ -n "${PYTHON:-}" || ! -x "${VENV}/bin/python" ]] || PYTHON=${VENV}/bin/python
PYTHON=${PYTHON:-python3}
# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
launch_help eval "$@"
# Checks every setting at once (the evaluator's flags by the evaluator's own checks, in-process; they
# also count the items left to run) and sets the arrays below. Nothing is started or written here.
settings=$(launch_settings eval "$@")
eval "${settings}"

# ---- the evaluator (python -m mem_agent.eval_ruler_hqa --help), its flags by concern ----------
# DATA_ARGS    data and output: --output-dir OUTPUT_ROOT/SAVE_FILE; SUITE hqa: --data-root DATA_ROOT
#              (the demo's: its own), --lengths LENGTH; ruler: --ruler-root RULER_ROOT, --ruler-splits
#              RULER_SPLITS, --ruler-lengths RULER_LENGTHS; longbench: --longbench-root LONGBENCH_ROOT,
#              --longbench-tasks LONGBENCH_TASKS
# AGENT_ARGS   agent and sampling: --protocol, CONCURRENCY QUESTIONS_IN_FLIGHT LIMIT TEMPERATURE TOP_P
#              where set, the demo's --max-memory/--max-final, --tokenizer MODEL_PATH, EXTRA_EVAL_ARGS
EVALUATE=("${PYTHON}" -m mem_agent.eval_ruler_hqa "${DATA_ARGS[@]}" "${AGENT_ARGS[@]}")

# ---- the server: vLLM's OpenAI server, every replica alike -----------------------------------------
# SERVE_ARGS   --model, --host HOST, --tensor-parallel-size TP, EXTRA_SERVE_ARGS; the launch gives each
#              replica its GPUs (CUDA_VISIBLE_DEVICES) and port, and with DP_MODE=vllm --data-parallel-size
SERVE=("${PYTHON}" -m vllm.entrypoints.openai.api_server "${SERVE_ARGS[@]}")

# ---- the launch ---------------------------------------------------------------------------------------
# One process, this script's own (exec: signals reach it): it holds OUTPUT_ROOT/SAVE_FILE's lock
# for the whole run, converts first with CONVERT=1, starts what serves (GPU servers, vllm-router
# or the CPU stack; nothing when no item is left to run), waits for health, runs EVALUATE, and
# stops every process group it started (SERVE_STOP_TIMEOUT, then SIGKILL), also when this script
# is killed with kill -9 (each group is tethered to it). LAUNCH_ARGS: the mode's plan (see
# python -m mem_agent.launch eval-run --help). DRY_RUN=1 prints the commands instead.
exec "${PYTHON}" -m mem_agent.launch eval-run --python "${PYTHON}" "${LAUNCH_ARGS[@]}" --serve "${SERVE[@]}" \
  -- "${EVALUATE[@]}"
