#!/usr/bin/env bash
# RULER-HQA evaluation of a memory agent: serve the model, run the evaluator, stop what we started.
#
#   MODEL_PATH=/models/my-memagent LENGTH="50 200 800" bash examples/mem_agent/run-eval.sh
#   CONVERT=1 SAVE_PATH=/ckpt/run1 HF_CKPT=/models/Qwen3-4B SINGLE_ITER=99 bash examples/mem_agent/run-eval.sh
#   bash examples/mem_agent/run-eval.sh        # no model: the CPU demo with the tiny local Qwen3
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/run-eval.sh

What to evaluate
  MODEL_PATH        Hugging Face model folder (default: none = the CPU demo: tiny Qwen3, synthetic data)
  CONVERT=1         first convert a Megatron checkpoint with convert-to-hf.sh and evaluate that; uses
                    SAVE_PATH (training save folder), HF_CKPT (original HF model), SINGLE_ITER (e.g. 99)
  URL               evaluate against this running server or router instead of starting vLLM
Data and output
  LENGTH            document counts to run (default: "50 100 200 400 800 1600 3200 6400"; demo: "50 200")
  DATA_ROOT         folder with eval_<N>.json (default: data/ruler_hqa; see prepare-eval-data.sh)
  SAVE_FILE         name of this run (default: the model folder's name; demo: demo)
  OUTPUT_ROOT       runs go to OUTPUT_ROOT/SAVE_FILE (default: runs/eval; demo: runs)
Server (ignored with URL)
  TP                tensor-parallel size (default: 1)
  HOST / PORT       where vLLM listens (default: 127.0.0.1 / 8000)
  SERVE_TIMEOUT     seconds to wait for the server to be healthy (default: 1800)
  EXTRA_SERVE_ARGS  more `vllm serve` flags, word-split (default: none)
Evaluator (defaults are the evaluator's own; see python -m mem_agent.eval_ruler_hqa --help)
  PROTOCOL          openai | vllm | sglang (default: openai for vllm serve and URL, vllm for the CPU stack)
  CONCURRENCY, QUESTIONS_IN_FLIGHT, LIMIT, TEMPERATURE, TOP_P, EXTRA_EVAL_ARGS
  MEM_*             agent settings (chunk size, memory size, ...), read by the evaluator itself
Demo only
  DEMO_QUESTIONS    synthetic questions per length (default: 8)
  DEMO_MAX_MEMORY / DEMO_MAX_FINAL   token caps when MEM_MAX_MEMORY / MEM_MAX_FINAL are unset
                    (default: 128 / 64; the CPU server samples slowly, the tiny model says nothing)
Other
  PYTHON            interpreter with mem_agent installed (default: python3)
  DRY_RUN=1         print the commands instead of running them
USAGE
}

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
accept_only_help "$@"
SCRIPT_DIR=${MEM_AGENT_DIR}
MODEL_PATH=${MODEL_PATH:-}
CONVERT=${CONVERT:-0}
URL=${URL:-}
TP=${TP:-1}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
SERVE_TIMEOUT=${SERVE_TIMEOUT:-1800}
EXTRA_SERVE_ARGS=${EXTRA_SERVE_ARGS:-}
EXTRA_EVAL_ARGS=${EXTRA_EVAL_ARGS:-}
PROTOCOL=${PROTOCOL:-}
DEMO_QUESTIONS=${DEMO_QUESTIONS:-8}

if [[ "${CONVERT}" == "1" ]]; then
  [[ -n "${SINGLE_ITER:-}" ]] || die "CONVERT=1 needs SINGLE_ITER (the iteration to convert, e.g. 99)"
  iter_name=$(printf 'iter_%07d' "$((10#${SINGLE_ITER#iter_}))")
  run env SINGLE_ITER="${SINGLE_ITER}" bash "${SCRIPT_DIR}/convert-to-hf.sh"
  MODEL_PATH="${OUT_ROOT:-${SAVE_PATH}_hf}/${iter_name}"
fi

DEMO=0
[[ -z "${MODEL_PATH}" && -z "${URL}" ]] && DEMO=1

if [[ "${DEMO}" == "1" ]]; then
  LENGTH=${LENGTH:-"50 200"}
  SAVE_FILE=${SAVE_FILE:-demo}
  OUTPUT_ROOT=${OUTPUT_ROOT:-runs}
else
  LENGTH=${LENGTH:-"50 100 200 400 800 1600 3200 6400"}
  SAVE_FILE=${SAVE_FILE:-$(basename "${MODEL_PATH:-server}")}
  OUTPUT_ROOT=${OUTPUT_ROOT:-runs/eval}
fi
RUN_DIR="${OUTPUT_ROOT}/${SAVE_FILE}"
read -r -a lengths <<<"${LENGTH}"
read -r -a extra_eval <<<"${EXTRA_EVAL_ARGS}"
read -r -a extra_serve <<<"${EXTRA_SERVE_ARGS}"

eval_args=(--output-dir "${RUN_DIR}" --lengths "${lengths[@]}")
[[ -n "${CONCURRENCY:-}" ]] && eval_args+=(--concurrency "${CONCURRENCY}")
[[ -n "${QUESTIONS_IN_FLIGHT:-}" ]] && eval_args+=(--questions-in-flight "${QUESTIONS_IN_FLIGHT}")
[[ -n "${LIMIT:-}" ]] && eval_args+=(--limit "${LIMIT}")
[[ -n "${TEMPERATURE:-}" ]] && eval_args+=(--temperature "${TEMPERATURE}")
[[ -n "${TOP_P:-}" ]] && eval_args+=(--top-p "${TOP_P}")
eval_args+=("${extra_eval[@]}")

run_demo() {
  local data="${RUN_DIR}/data" raw="${RUN_DIR}/data/synthetic_qa.json" missing=()
  echo "demo: synthetic multi-hop QA made by mem_agent.synthetic_qa (real HotpotQA is not downloaded here)"
  [[ -f "${raw}" ]] || run "${PYTHON}" -m mem_agent.synthetic_qa --out "${raw}" --num-questions "$((DEMO_QUESTIONS * 4))"
  for n in "${lengths[@]}"; do
    [[ -f "${data}/eval_${n}.json" ]] || missing+=("${n}")
  done
  if ((${#missing[@]})); then
    run "${PYTHON}" -m mem_agent.build_long_context --input "${raw}" --num-docs "${missing[@]}" \
      --num-questions "${DEMO_QUESTIONS}" --out-dir "${data}"
  fi
  local caps=()
  [[ -z "${MEM_MAX_MEMORY:-}" ]] && caps+=(--max-memory "${DEMO_MAX_MEMORY:-128}")
  [[ -z "${MEM_MAX_FINAL:-}" ]] && caps+=(--max-final "${DEMO_MAX_FINAL:-64}")
  # The local stack exports MEM_ROUTER_URL and MEM_MODEL_PATH, which the evaluator reads as its
  # defaults for --url and --tokenizer; it stops vLLM and the router when the evaluator exits.
  run "${PYTHON}" -m mem_agent.local_stack exec --run-dir "${RUN_DIR}/servers" -- \
    "${PYTHON}" -m mem_agent.eval_ruler_hqa --data-root "${data}" --protocol "${PROTOCOL:-vllm}" \
    "${caps[@]}" "${eval_args[@]}"
}

SERVER_PGID=""
stop_server() {
  if [[ -n "${SERVER_PGID}" ]]; then
    kill -TERM -- "-${SERVER_PGID}" 2>/dev/null || true
    sleep 5
    kill -KILL -- "-${SERVER_PGID}" 2>/dev/null || true
  fi
}

start_vllm() {
  local log="${RUN_DIR}/vllm_server.log"
  local serve=("${PYTHON}" -m vllm.entrypoints.openai.api_server --model "${MODEL_PATH}"
    --host "${HOST}" --port "${PORT}" --tensor-parallel-size "${TP}" "${extra_serve[@]}")
  if [[ "${DRY_RUN}" == "1" ]]; then
    run "${serve[@]}"
    URL="http://${HOST}:${PORT}"
    return
  fi
  mkdir -p "${RUN_DIR}"
  # A new session makes the server its own process group, so stopping it also stops the
  # engine processes it forks, and nothing else on the node.
  setsid "${serve[@]}" >"${log}" 2>&1 </dev/null &
  SERVER_PGID=$!
  trap stop_server EXIT
  URL="http://${HOST}:${PORT}"
  local waited=0
  until curl --silent --fail --noproxy '*' "${URL}/health" >/dev/null 2>&1; do
    if ! kill -0 "${SERVER_PGID}" 2>/dev/null; then
      echo "error: vLLM exited before it was healthy; last lines of ${log}:" >&2
      tail -n 30 "${log}" >&2
      exit 1
    fi
    if ((waited >= SERVE_TIMEOUT)); then
      echo "error: vLLM not healthy at ${URL} after ${SERVE_TIMEOUT} s; last lines of ${log}:" >&2
      tail -n 30 "${log}" >&2
      exit 1
    fi
    sleep 5
    waited=$((waited + 5))
  done
  echo "vLLM is up at ${URL} after ${waited} s (log: ${log})"
}

run_model() {
  DATA_ROOT=${DATA_ROOT:-data/ruler_hqa}
  local missing=()
  for n in "${lengths[@]}"; do
    [[ -f "${DATA_ROOT}/eval_${n}.json" ]] || missing+=("${DATA_ROOT}/eval_${n}.json")
  done
  if ((${#missing[@]})) && [[ "${DRY_RUN}" != "1" ]]; then
    die "missing eval data: ${missing[*]} (get it with: DATA_ROOT=${DATA_ROOT} bash ${SCRIPT_DIR}/prepare-eval-data.sh --download)"
  fi
  [[ -z "${MODEL_PATH}" || -d "${MODEL_PATH}" || "${DRY_RUN}" == "1" ]] || die "MODEL_PATH ${MODEL_PATH} is not a folder"
  local tokenizer=()
  [[ -n "${MODEL_PATH}" ]] && tokenizer=(--tokenizer "${MODEL_PATH}")
  if [[ -n "${URL}" ]]; then
    run "${PYTHON}" -m mem_agent.eval_ruler_hqa --data-root "${DATA_ROOT}" --url "${URL}" \
      --protocol "${PROTOCOL:-openai}" "${tokenizer[@]}" "${eval_args[@]}"
  elif command -v nvidia-smi >/dev/null 2>&1; then
    start_vllm
    run "${PYTHON}" -m mem_agent.eval_ruler_hqa --data-root "${DATA_ROOT}" --url "${URL}" \
      --protocol "${PROTOCOL:-openai}" "${tokenizer[@]}" "${eval_args[@]}"
  else
    echo "no GPU found: serving ${MODEL_PATH} with vLLM's CPU build (slow beyond small models)"
    run "${PYTHON}" -m mem_agent.local_stack exec --model "${MODEL_PATH}" --run-dir "${RUN_DIR}/servers" -- \
      "${PYTHON}" -m mem_agent.eval_ruler_hqa --data-root "${DATA_ROOT}" --protocol "${PROTOCOL:-vllm}" "${eval_args[@]}"
  fi
}

if [[ "${DEMO}" == "1" ]]; then
  run_demo
else
  run_model
fi
