#!/usr/bin/env bash
# RULER-HQA evaluation of a memory agent: check every setting, serve the model, run the evaluator,
# stop what we started.
#
#   MODEL_PATH=/models/my-memagent LENGTH="50 200 800" bash examples/mem_agent/run-eval.sh
#   MODEL_PATH=/models/my-memagent DP=8 bash examples/mem_agent/run-eval.sh     # 8 GPUs, data-parallel
#   CONVERT=1 SAVE_PATH=/ckpt/run1 HF_CKPT=/models/Qwen3-4B SINGLE_ITER=99 bash examples/mem_agent/run-eval.sh
#   bash examples/mem_agent/run-eval.sh        # no model: the CPU demo with the tiny local Qwen3
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: [VAR=value ...] bash examples/mem_agent/run-eval.sh

Every setting is checked before anything starts; all problems are reported in one message. A
setting the chosen mode does not use is an error (e.g. DATA_ROOT in the demo, TP with URL).

What to evaluate (the mode)
  MODEL_PATH        Hugging Face model folder, served here (default: none = the CPU demo: tiny Qwen3,
                    synthetic data). With URL it only names the tokenizer.
  CONVERT=1         first convert a Megatron checkpoint with convert-to-hf.sh and evaluate that; uses
                    SAVE_PATH (training save folder), HF_CKPT (original HF model), SINGLE_ITER (e.g. 99),
                    OUT_ROOT (see convert-to-hf.sh --help)
  URL               evaluate against this running server or router instead of serving a model; it
                    must answer (a connection) before the run starts
Data and output
  LENGTH            document counts to run (default: "50 100 200 400 800 1600 3200 6400"; demo: "50 200")
  DATA_ROOT         folder with eval_<N>.json (default: data/ruler_hqa; see prepare-eval-data.sh; not the demo)
  SAVE_FILE         name of this run: a name, not a path (no '/', no leading dot; default: the model
                    folder's name; demo: demo)
  OUTPUT_ROOT       runs go to OUTPUT_ROOT/SAVE_FILE, and nothing of a run is written outside that
                    folder (default: runs/eval; demo: runs). Rerunning into
                    the same folder reuses its finished results and says so; the evaluator refuses
                    earlier results made with other settings (EXTRA_EVAL_ARGS=--force redoes them).
                    One run per folder at a time: a second is refused at once, naming the first's PID.
                    Every eval file of every LENGTH is read in full before anything starts; a rerun
                    with nothing left to run starts no server, and one with other LENGTH values keeps
                    the earlier lengths in summary.json and the plot
Serving on GPUs (MODEL_PATH or CONVERT=1, where nvidia-smi lists GPUs)
  TP                tensor-parallel size of each model replica (default: 1)
  DP                data-parallel replicas, DP x TP GPUs in all (default: 1)
  DP_MODE           with DP > 1: vllm = one server with vLLM's own --data-parallel-size (default);
                    router = DP servers, one per TP GPUs (CUDA_VISIBLE_DEVICES), ports PORT+1 ...
                    PORT+DP, behind vllm-router on PORT (metrics on PORT+DP+1)
  HOST / PORT       where the server (or router) listens (default: 127.0.0.1 / 8000)
  EXTRA_SERVE_ARGS  more vLLM server flags, word-split (default: none)
  SERVE_TIMEOUT     seconds to wait for the servers to be healthy (default: 1800; also on CPU)
  HEALTH_INTERVAL   seconds between two health checks of a starting server (default: 5)
  SERVE_STOP_TIMEOUT  seconds a stopped server gets after SIGTERM before SIGKILL (default: 30); also
                    after this script is killed (kill -9 included), when its servers and evaluator stop
  Without a GPU the model is served by vLLM's CPU build (mem_agent.local_stack) and the settings
  above, except SERVE_TIMEOUT, are errors; in a dry run they preview a GPU launch instead (below).
  Server logs go to OUTPUT_ROOT/SAVE_FILE/servers/.
  NUM_GPUS          DRY_RUN=1 only: preview the launch on a node with this many GPUs, on any machine
                    (default: the GPUs nvidia-smi lists; where it lists none and TP, DP, DP_MODE,
                    PORT or another setting above is set: DP x TP)
Evaluator (defaults are the evaluator's own; see python -m mem_agent.eval_ruler_hqa --help)
  PROTOCOL          openai | vllm | sglang (default: openai for vllm serve and URL, vllm for the CPU stack)
  CONCURRENCY, QUESTIONS_IN_FLIGHT, LIMIT (positive integers), TEMPERATURE (>= 0), TOP_P (0 to 1)
  EXTRA_EVAL_ARGS   more evaluator flags, word-split (checked by the evaluator before anything starts)
  MEM_*             agent settings (chunk size, memory size, ...), read by the evaluator itself
Demo only (no MODEL_PATH, no URL)
  DEMO_QUESTIONS    synthetic questions per length (default: 8)
  DEMO_MAX_MEMORY / DEMO_MAX_FINAL   token caps when MEM_MAX_MEMORY / MEM_MAX_FINAL are unset
                    (default: 128 / 64; the CPU server samples slowly, the tiny model says nothing)
Other
  PYTHON            interpreter with mem_agent installed (default: VENV/bin/python, VENV defaulting
                    to the checkout's .venv made by scripts/bootstrap.sh; else a python3 that
                    imports mem_agent)
  DRY_RUN=1         print the commands instead of running them; what this machine lacks is a warning
USAGE
}

# shellcheck source=examples/mem_agent/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"
accept_only_help "$@"
SCRIPT_DIR=${MEM_AGENT_DIR}
# mem_agent from this checkout, also where `pip install -e` was not run.
export PYTHONPATH="${MEM_EXAMPLES_DIR}${PYTHONPATH:+:${PYTHONPATH}}"
MODEL_PATH=${MODEL_PATH:-}
CONVERT=${CONVERT:-0}
URL=${URL:-}

# ---- the mode, and the settings it does not use (judged on what the user set) ----------------
require_flag DRY_RUN
require_flag CONVERT
GPUS=()
if [[ -n "${URL}" ]]; then
  MODE=url
elif [[ -n "${MODEL_PATH}" || "${CONVERT}" == "1" ]]; then
  MODE=serve
  if command -v nvidia-smi >/dev/null 2>&1; then
    if [[ -n "${CUDA_VISIBLE_DEVICES:-}" ]]; then
      IFS=, read -r -a GPUS <<<"${CUDA_VISIBLE_DEVICES}"
    else
      mapfile -t GPUS < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ')
    fi
  fi
else
  MODE=demo
fi
SERVER_KNOBS=(TP DP DP_MODE HOST PORT EXTRA_SERVE_ARGS HEALTH_INTERVAL SERVE_STOP_TIMEOUT)
# A dry run previews a GPU launch on any machine: NUM_GPUS (or, where nvidia-smi lists none and a
# GPU setting is given, DP x TP) stands for the node's GPUs. A real run uses the GPUs it finds.
PREVIEW_GPUS=0
if [[ "${MODE}" == serve && "${DRY_RUN}" == 1 ]]; then
  if [[ -n "${NUM_GPUS:-}" ]]; then
    require_count NUM_GPUS
    [[ ! "${NUM_GPUS}" =~ ^[0-9]+$ ]] || ((10#${NUM_GPUS} < 1)) || PREVIEW_GPUS=$((10#${NUM_GPUS}))
  elif ((${#GPUS[@]} == 0)); then
    for knob in "${SERVER_KNOBS[@]}"; do
      [[ -z "${USER_SET[${knob}]:-}" ]] || PREVIEW_GPUS=1
    done
    if ((PREVIEW_GPUS)) && [[ "${DP:-1}" =~ ^[1-9][0-9]*$ && "${TP:-1}" =~ ^[1-9][0-9]*$ ]]; then
      PREVIEW_GPUS=$((${DP:-1} * ${TP:-1}))
    fi
    ((PREVIEW_GPUS == 0)) ||
      WARNINGS+=("no GPU on this machine: previewing the launch on ${PREVIEW_GPUS} GPU(s), DP x TP (NUM_GPUS=N previews another node)")
  fi
  ((PREVIEW_GPUS == 0)) || mapfile -t GPUS < <(seq 0 $((PREVIEW_GPUS - 1)))
else
  unused NUM_GPUS "it sizes the node a dry run of a served model (MODEL_PATH or CONVERT=1) previews; a real run uses the GPUs nvidia-smi lists"
fi
DEMO_KNOBS=(DEMO_QUESTIONS DEMO_MAX_MEMORY DEMO_MAX_FINAL)
case "${MODE}" in
  demo)
    unused DATA_ROOT "the demo makes its own synthetic data (set MODEL_PATH or URL to evaluate DATA_ROOT's files)"
    unused "${SERVER_KNOBS[@]}" "the demo serves the tiny model on vLLM's CPU build (mem_agent.local_stack)"
    ;;
  url)
    [[ "${CONVERT}" != "1" ]] || problem "CONVERT=1 and URL together: the converted model would not be served; unset URL to serve it here"
    unused "${SERVER_KNOBS[@]}" SERVE_TIMEOUT "URL names a running server, nothing is served here"
    unused "${DEMO_KNOBS[@]}" "the demo runs only without MODEL_PATH and URL"
    ;;
  serve)
    [[ "${CONVERT}" != "1" || -z "${MODEL_PATH}" ]] || problem "CONVERT=1 evaluates the converted checkpoint: unset MODEL_PATH=${MODEL_PATH}"
    ((${#GPUS[@]})) ||
      unused "${SERVER_KNOBS[@]}" "no GPU found (nvidia-smi is not on PATH or lists none): the model is served by vLLM's CPU build (mem_agent.local_stack)"
    unused "${DEMO_KNOBS[@]}" "the demo runs only without MODEL_PATH and URL"
    ;;
esac
[[ "${CONVERT}" == "1" ]] || unused SINGLE_ITER OUT_ROOT "they choose the checkpoint CONVERT=1 converts"
[[ -n "${DP:-}" && "${DP:-}" != 1 ]] || unused DP_MODE "it chooses how DP > 1 replicas are served"
[[ -z "${DEMO_MAX_MEMORY:-}" ]] || unused MEM_MAX_MEMORY "DEMO_MAX_MEMORY applies only while MEM_MAX_MEMORY is unset; set one of them"
[[ -z "${DEMO_MAX_FINAL:-}" ]] || unused MEM_MAX_FINAL "DEMO_MAX_FINAL applies only while MEM_MAX_FINAL is unset; set one of them"

# ---- the settings' values ----------------------------------------------------------------------
TP=${TP:-1}
DP=${DP:-1}
DP_MODE=${DP_MODE:-vllm}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
SERVE_TIMEOUT=${SERVE_TIMEOUT:-1800}
HEALTH_INTERVAL=${HEALTH_INTERVAL:-5}
SERVE_STOP_TIMEOUT=${SERVE_STOP_TIMEOUT:-30}
KILL_WAIT=30 # seconds a SIGKILLed server may take to be gone before we say it outlived the signal
EXTRA_SERVE_ARGS=${EXTRA_SERVE_ARGS:-}
EXTRA_EVAL_ARGS=${EXTRA_EVAL_ARGS:-}
PROTOCOL=${PROTOCOL:-}
DEMO_QUESTIONS=${DEMO_QUESTIONS:-8}
DEMO_MAX_MEMORY=${DEMO_MAX_MEMORY:-128}
DEMO_MAX_FINAL=${DEMO_MAX_FINAL:-64}
if [[ "${MODE}" == "demo" ]]; then
  LENGTH=${LENGTH:-"50 200"}
  SAVE_FILE=${SAVE_FILE:-demo}
  OUTPUT_ROOT=${OUTPUT_ROOT:-runs}
else
  LENGTH=${LENGTH:-"50 100 200 400 800 1600 3200 6400"}
  SAVE_FILE=${SAVE_FILE:-$(basename "${MODEL_PATH:-server}")}
  OUTPUT_ROOT=${OUTPUT_ROOT:-runs/eval}
  DATA_ROOT=${DATA_ROOT:-data/ruler_hqa}
fi
RUN_DIR="${OUTPUT_ROOT}/${SAVE_FILE}"
# Everything of a run stays in RUN_DIR: SAVE_FILE is a name in OUTPUT_ROOT, never a way out of it.
require_name SAVE_FILE "OUTPUT_ROOT=${OUTPUT_ROOT} says where runs go"
[[ -n "${OUTPUT_ROOT}" ]] || problem "OUTPUT_ROOT is empty: runs go to OUTPUT_ROOT/SAVE_FILE"
[[ ! -L "${RUN_DIR}" ]] ||
  problem "${RUN_DIR} is a symbolic link: a run writes only inside OUTPUT_ROOT=${OUTPUT_ROOT}; choose another SAVE_FILE"
read -r -a lengths <<<"${LENGTH}"
read -r -a extra_eval <<<"${EXTRA_EVAL_ARGS}"
read -r -a extra_serve <<<"${EXTRA_SERVE_ARGS}"

((${#lengths[@]})) || problem "LENGTH='${LENGTH}' is empty: give document counts such as \"50 200\""
declare -A seen_length=()
for n in "${lengths[@]}"; do
  if [[ ! "${n}" =~ ^[1-9][0-9]*$ ]]; then
    problem "LENGTH has '${n}': document counts are positive integers, such as \"50 200\""
  elif [[ -n "${seen_length[${n}]:-}" ]]; then
    problem "LENGTH lists ${n} twice"
  fi
  seen_length[${n}]=1
done
for knob in CONCURRENCY QUESTIONS_IN_FLIGHT LIMIT; do
  [[ -z "${!knob:-}" ]] || require_count "${knob}"
done
[[ -z "${TEMPERATURE:-}" ]] || require_number TEMPERATURE 0
[[ -z "${TOP_P:-}" ]] || require_number TOP_P 0 1 open
require_choice PROTOCOL openai vllm sglang
require_count SERVE_TIMEOUT
[[ -z "${URL}" || "${URL}" =~ ^https?://[^[:space:]]+$ ]] || problem "URL=${URL} must start with http:// or https://"
# The server or router is reached (one TCP connection) before anything is written: an address where
# nothing listens is one line now, not a run whose every item fails after its retries.
if [[ "${URL}" =~ ^(https?)://([^/:?#[:space:]]+)(:([0-9]+))?([/?#].*)?$ ]]; then
  url_host=${BASH_REMATCH[2]} url_port=${BASH_REMATCH[4]:-80}
  [[ -n "${BASH_REMATCH[4]}" || "${BASH_REMATCH[1]}" == http ]] || url_port=443
  # shellcheck disable=SC2016 # $0 and $1 are the inner shell's: the address is passed, never spliced in
  timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "${url_host}" "${url_port}" 2>/dev/null ||
    missing "URL=${URL}: nothing answers at ${url_host}:${url_port}; start the server or router first, or fix URL"
fi
if [[ "${MODE}" == "demo" ]]; then
  for knob in "${DEMO_KNOBS[@]}"; do
    require_count "${knob}"
  done
fi
if ((${#GPUS[@]})); then
  require_count TP
  require_count DP
  require_port PORT
  require_choice DP_MODE vllm router
  require_count HEALTH_INTERVAL
  require_count SERVE_STOP_TIMEOUT
  [[ -n "${HOST}" ]] || problem "HOST is empty"
  require_cmd setsid "util-linux; each server runs in its own session, so that stopping it stops its engine processes"
  require_cmd curl "it asks the servers for /health before the evaluation starts"
fi
if [[ "${CONVERT}" == "1" ]]; then
  if [[ -z "${SINGLE_ITER:-}" ]]; then
    problem "CONVERT=1 needs SINGLE_ITER (the iteration to convert, e.g. 99)"
  else
    adopt_checks "CONVERT=1, convert-to-hf.sh: " env SINGLE_ITER="${SINGLE_ITER}" bash "${SCRIPT_DIR}/convert-to-hf.sh"
    number=${SINGLE_ITER#iter_}
    # Where convert-to-hf.sh writes it (a bad SINGLE_ITER is its problem, reported above).
    [[ ! "${number}" =~ ^[0-9]+$ ]] || MODEL_PATH=$(printf '%s/iter_%07d' "${OUT_ROOT:-${SAVE_PATH}_hf}" "$((10#${number}))")
  fi
fi
needed=(aiohttp numpy orjson tqdm)                    # the evaluator
[[ -n "${URL}" ]] || needed+=(vllm)                   # serving, on GPUs or on the CPU stack
[[ " ${EXTRA_EVAL_ARGS} " == *" --no-plot "* ]] || needed+=(matplotlib) # the accuracy plot
PYTHON_READY=1
resolve_python "${needed[@]}" || PYTHON_READY=0
check_mem_settings

# ---- the run folder: one writer at a time, locked before its first read ------------------------------
# A folder that exists is locked now, before the checks below read it; a new one is made (and
# locked) only once every check has passed. A second run on a held folder stops here, in one line.
if [[ "${DRY_RUN}" != "1" && "${_MEM_CHECK_ONLY:-0}" != "1" && -d "${RUN_DIR}" ]] && ((${#PROBLEMS[@]} == 0)); then
  lock_run_folder "${RUN_DIR}" "choose another SAVE_FILE"
fi

# ---- the paths and the machine -----------------------------------------------------------------
if [[ "${MODE}" != "demo" ]]; then
  absent=()
  for n in "${lengths[@]}"; do
    [[ -f "${DATA_ROOT}/eval_${n}.json" ]] || absent+=("eval_${n}.json")
  done
  ((${#absent[@]} == 0)) ||
    missing "DATA_ROOT=${DATA_ROOT} lacks ${absent[*]} (get them with: DATA_ROOT=${DATA_ROOT} LENGTH=\"${LENGTH}\" bash ${SCRIPT_DIR}/prepare-eval-data.sh --download, or --build-from RAW.json)"
fi
if [[ -n "${MODEL_PATH}" && "${CONVERT}" != "1" && ! -f "${MODEL_PATH}/config.json" ]]; then
  missing "MODEL_PATH=${MODEL_PATH} is not a Hugging Face model folder (no config.json)"
fi
if ((${#GPUS[@]} && ${#PROBLEMS[@]} == 0)); then
  if ((DP * TP > ${#GPUS[@]})); then
    if [[ -n "${NUM_GPUS:-}" ]]; then
      problem "DP=${DP} x TP=${TP} needs $((DP * TP)) GPUs; NUM_GPUS=${NUM_GPUS}"
    else
      missing "DP=${DP} x TP=${TP} needs $((DP * TP)) GPUs; this node has ${#GPUS[@]} (${GPUS[*]})"
    fi
  fi
  server_ports=("${PORT}")
  if [[ "${DP_MODE}" == "router" ]] && ((DP > 1)); then
    ((PORT + DP + 1 <= 65535)) || problem "PORT=${PORT}: the router mode needs ports up to PORT+DP+1 = $((PORT + DP + 1))"
    for ((i = 1; i <= DP + 1; i++)); do
      server_ports+=("$((PORT + i))")
    done
    # The router installed beside PYTHON (as in the project's .venv), else the one on PATH.
    VLLM_ROUTER="$(dirname "${PYTHON}")/vllm-router"
    [[ -x "${VLLM_ROUTER}" ]] || VLLM_ROUTER=$(command -v vllm-router || echo vllm-router)
    command -v "${VLLM_ROUTER}" >/dev/null 2>&1 ||
      missing "command 'vllm-router' not found: DP_MODE=router puts it in front of the servers (pip install vllm-router)"
  fi
  if [[ "${DRY_RUN}" != "1" ]]; then
    for port in "${server_ports[@]}"; do
      ! port_in_use "${port}" || problem "port ${port} is already in use on this node: choose another PORT"
    done
  fi
fi
if [[ "${MODE}" == "demo" ]]; then
  # Data an earlier demo made is reused only if it has the questions asked for now.
  for n in "${lengths[@]}"; do
    file="${RUN_DIR}/data/eval_${n}.json"
    [[ -f "${file}" ]] || continue
    items=$("${PYTHON}" -m mem_agent.common.jsonstream --check "${file}" 2>&1) || items="?"
    [[ "${items}" == "${DEMO_QUESTIONS}" ]] ||
      problem "${file} (from an earlier demo) holds ${items##*$'\n'} questions, DEMO_QUESTIONS=${DEMO_QUESTIONS}: choose another SAVE_FILE, or move ${RUN_DIR} aside"
  done
fi
if [[ "${MODE}" == "demo" && -f "${RUN_DIR}/data/synthetic_qa.json" ]]; then
  items=$("${PYTHON}" -m mem_agent.common.jsonstream --check "${RUN_DIR}/data/synthetic_qa.json" 2>&1) || items="?"
  [[ "${items}" == "$((DEMO_QUESTIONS * 4))" ]] ||
    problem "${RUN_DIR}/data/synthetic_qa.json (from an earlier demo) holds ${items##*$'\n'} questions, not 4 x DEMO_QUESTIONS=${DEMO_QUESTIONS}: choose another SAVE_FILE, or move ${RUN_DIR} aside"
fi

# ---- the evaluator's own arguments, checked by the evaluator before anything starts ------------
eval_args=(--output-dir "${RUN_DIR}" --lengths "${lengths[@]}")
[[ -z "${CONCURRENCY:-}" ]] || eval_args+=(--concurrency "${CONCURRENCY}")
[[ -z "${QUESTIONS_IN_FLIGHT:-}" ]] || eval_args+=(--questions-in-flight "${QUESTIONS_IN_FLIGHT}")
[[ -z "${LIMIT:-}" ]] || eval_args+=(--limit "${LIMIT}")
[[ -z "${TEMPERATURE:-}" ]] || eval_args+=(--temperature "${TEMPERATURE}")
[[ -z "${TOP_P:-}" ]] || eval_args+=(--top-p "${TOP_P}")
if [[ "${MODE}" == "demo" ]]; then
  DATA_ROOT="${RUN_DIR}/data"
  [[ -n "${MEM_MAX_MEMORY:-}" ]] || eval_args+=(--max-memory "${DEMO_MAX_MEMORY}")
  [[ -n "${MEM_MAX_FINAL:-}" ]] || eval_args+=(--max-final "${DEMO_MAX_FINAL}")
fi
[[ -z "${MODEL_PATH}" ]] || eval_args+=(--tokenizer "${MODEL_PATH}")
eval_args+=("${extra_eval[@]}")
if [[ "${MODE}" == "demo" || (${#GPUS[@]} -eq 0 && "${MODE}" == "serve") ]]; then
  PROTOCOL=${PROTOCOL:-vllm} # the CPU stack: vLLM with --enable-scale-out behind vllm-router
else
  PROTOCOL=${PROTOCOL:-openai}
fi
eval_args=(--data-root "${DATA_ROOT}" --protocol "${PROTOCOL}" "${eval_args[@]}")
# The evaluator's --check reads every eval file that exists in full (the demo makes its own
# later) and says how many items are left to run: none, and nothing needs serving.
LEFT_TO_RUN="?"
if ((PYTHON_READY && ${#PROBLEMS[@]} == 0)); then
  if ! out=$("${PYTHON}" -m mem_agent.eval_ruler_hqa --check "${eval_args[@]}" 2>&1); then
    out=${out##*$'\n'}
    problem "the evaluator refuses its arguments (EXTRA_EVAL_ARGS, the settings above or the data): ${out##*error: }"
  elif [[ "${out##*$'\n'}" =~ ^left\ to\ run:\ ([0-9]+)$ ]]; then
    LEFT_TO_RUN=${BASH_REMATCH[1]}
  fi
fi
report_problems

# ---- one writer per run folder ----------------------------------------------------------------------
# Every check has passed: the folder may be made now. (Held already where it existed before its first read.)
[[ "${DRY_RUN}" == "1" ]] || lock_run_folder "${RUN_DIR}" "choose another SAVE_FILE"

# ---- process groups: servers and the evaluator ---------------------------------------------------
# Each runs in its own process group (setsid), led by a tether to this script (mem_agent.serving.tether):
# TERM or INT here stops every group (the traps below); SIGKILL here, which nothing can trap, is
# seen by each tether within 0.1 s, and it stops its group itself (SIGTERM, SERVE_STOP_TIMEOUT, SIGKILL).
STARTED_PGIDS=()
tethered=("${PYTHON}" -m mem_agent.serving.tether --parent "$$" --grace "${SERVE_STOP_TIMEOUT}" --)
running_groups() { # the started process groups of which a process still runs (a zombie has exited)
  local pgids=" ${STARTED_PGIDS[*]} "
  ps -eo pgid=,stat= | awk -v ours="${pgids}" 'index(ours, " " $1 " ") && $2 !~ /^Z/ { print $1 }' | sort -u
}
wait_groups_gone() { # wait_groups_gone SECONDS: true once no process of the groups we started runs
  local waited=0
  while [[ -n "$(running_groups)" ]]; do
    ((waited < $1)) || return 1
    sleep 1
    waited=$((waited + 1))
  done
}
stop_started() { # each started command is its own process group (setsid): stopping it stops what it forked
  local pgid
  ((${#STARTED_PGIDS[@]})) || return 0
  for pgid in $(running_groups); do
    kill -TERM -- "-${pgid}" 2>/dev/null || true
  done
  wait_groups_gone "${SERVE_STOP_TIMEOUT}" && return 0
  for pgid in $(running_groups); do
    echo "process group ${pgid} still running after ${SERVE_STOP_TIMEOUT} s: SIGKILL"
    kill -KILL -- "-${pgid}" 2>/dev/null || true
  done
  wait_groups_gone "${KILL_WAIT}" ||
    echo "warning: processes of group(s) $(running_groups | xargs) outlived SIGKILL by ${KILL_WAIT} s" >&2
}

start_server() { # start_server NAME COMMAND...: in its own session, logged to servers/NAME.log
  local name=$1 log="${RUN_DIR}/servers/$1.log"
  shift
  if [[ "${DRY_RUN}" == "1" ]]; then
    run "$@"
    return 0
  fi
  mkdir -p "${RUN_DIR}/servers"
  # The run folder's lock is not passed on: a server writes only its log.
  setsid "${tethered[@]}" "$@" >"${log}" 2>&1 </dev/null {RUN_LOCK_FD}>&- &
  STARTED_PGIDS+=("$!")
  echo "started ${name} (pid $!, log ${log})"
}

wait_healthy() { # wait_healthy URL NAME INDEX: until URL/health answers, server INDEX exits, or SERVE_TIMEOUT
  local url=$1 log="${RUN_DIR}/servers/$2.log" waited=0
  [[ "${DRY_RUN}" != "1" ]] || return 0
  until curl --silent --fail --noproxy '*' "${url}/health" >/dev/null 2>&1; do
    if ! kill -0 "${STARTED_PGIDS[$3]}" 2>/dev/null; then
      echo "error: $2 exited before it was healthy; last lines of ${log}:" >&2
      tail -n 30 "${log}" >&2
      exit 1
    fi
    if ((waited >= SERVE_TIMEOUT)); then
      echo "error: $2 not healthy at ${url} after ${SERVE_TIMEOUT} s; last lines of ${log}:" >&2
      tail -n 30 "${log}" >&2
      exit 1
    fi
    sleep "${HEALTH_INTERVAL}"
    waited=$((waited + HEALTH_INTERVAL))
  done
  echo "$2 is up at ${url} after ${waited} s"
}

gpu_list() { # gpu_list FIRST COUNT: those entries of the node's GPU list, comma-separated
  local IFS=,
  echo "${GPUS[*]:$1:$2}"
}

# Data-parallel serving, two ways. DP_MODE=vllm: one server whose engine runs DP replicas and
# balances requests itself (vLLM's --data-parallel-size; one port, one log). DP_MODE=router: DP
# independent servers, replica i on GPUs [i*TP, (i+1)*TP) of the node's list, behind
# vllm-router: a replica that fails leaves the others serving, and each has its own log.
serve_on_gpus() {
  local serve=("${PYTHON}" -m vllm.entrypoints.openai.api_server --model "${MODEL_PATH}" --host "${HOST}"
    --tensor-parallel-size "${TP}" "${extra_serve[@]}")
  [[ "${DRY_RUN}" != "1" ]] ||
    echo "dry run: DP=${DP} x TP=${TP} = $((DP * TP)) of ${#GPUS[@]} GPU(s) (${GPUS[*]}), DP_MODE=${DP_MODE}, serving at http://${HOST}:${PORT}"
  if ((DP == 1)) || [[ "${DP_MODE}" == "vllm" ]]; then
    local dp_flags=()
    ((DP == 1)) || dp_flags=(--data-parallel-size "${DP}")
    start_server vllm_server env CUDA_VISIBLE_DEVICES="$(gpu_list 0 $((DP * TP)))" \
      "${serve[@]}" --port "${PORT}" "${dp_flags[@]}"
    wait_healthy "http://${HOST}:${PORT}" vllm_server 0
  else
    local workers=() i
    for ((i = 0; i < DP; i++)); do
      workers+=("http://${HOST}:$((PORT + 1 + i))")
      start_server "vllm_server_${i}" env CUDA_VISIBLE_DEVICES="$(gpu_list $((i * TP)) "${TP}")" \
        "${serve[@]}" --port "$((PORT + 1 + i))"
    done
    for ((i = 0; i < DP; i++)); do
      wait_healthy "${workers[i]}" "vllm_server_${i}" "${i}"
    done
    start_server vllm_router "${VLLM_ROUTER}" --host "${HOST}" --port "${PORT}" --worker-urls "${workers[@]}" \
      --policy round_robin --prometheus-host "${HOST}" --prometheus-port "$((PORT + DP + 1))"
    wait_healthy "http://${HOST}:${PORT}" vllm_router "${DP}"
  fi
  URL="http://${HOST}:${PORT}"
}

# run_in_group COMMAND...: in its own tethered group, waited for; returns its exit status. The wait
# is what lets a TERM or INT reach the traps at once (bash runs a trap only after a foreground
# command ends, which for an evaluation may be hours).
run_in_group() {
  if [[ "${DRY_RUN}" == "1" ]]; then
    run "$@"
    return 0
  fi
  setsid "${tethered[@]}" "$@" &
  STARTED_PGIDS+=("$!")
  wait "$!"
}

# ---- run -----------------------------------------------------------------------------------------
trap stop_started EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ "${CONVERT}" == "1" ]]; then
  run env SINGLE_ITER="${SINGLE_ITER}" bash "${SCRIPT_DIR}/convert-to-hf.sh"
fi
evaluate=("${PYTHON}" -m mem_agent.eval_ruler_hqa "${eval_args[@]}")
if [[ "${LEFT_TO_RUN}" == 0 && "${CONVERT}" != "1" ]]; then
  echo "nothing left to run in ${RUN_DIR}: every item has a result, so no server is started"
  run_in_group "${evaluate[@]}"
  exit 0
fi
case "${MODE}" in
  demo)
    echo "demo: synthetic multi-hop QA made by mem_agent.synthetic_qa (real HotpotQA is not downloaded here)"
    raw="${DATA_ROOT}/synthetic_qa.json"
    if [[ -f "${raw}" ]]; then
      echo "demo: reusing ${raw} (made by an earlier run)"
    else
      run "${PYTHON}" -m mem_agent.synthetic_qa --out "${raw}" --num-questions "$((DEMO_QUESTIONS * 4))"
    fi
    build=() reuse=()
    for n in "${lengths[@]}"; do
      if [[ -f "${DATA_ROOT}/eval_${n}.json" ]]; then reuse+=("eval_${n}.json"); else build+=("${n}"); fi
    done
    ((${#reuse[@]} == 0)) || echo "demo: reusing ${reuse[*]} in ${DATA_ROOT} (made by an earlier run)"
    ((${#build[@]} == 0)) || run "${PYTHON}" -m mem_agent.build_long_context --input "${raw}" \
      --num-docs "${build[@]}" --num-questions "${DEMO_QUESTIONS}" --out-dir "${DATA_ROOT}"
    # The local stack exports MEM_ROUTER_URL and MEM_MODEL_PATH, which the evaluator reads as its
    # defaults for --url and --tokenizer; it stops vLLM and the router when the evaluator exits.
    run_in_group "${PYTHON}" -m mem_agent.local_stack exec --run-dir "${RUN_DIR}/servers" --start-timeout "${SERVE_TIMEOUT}" \
      -- "${evaluate[@]}"
    ;;
  url)
    run_in_group "${evaluate[@]}" --url "${URL}"
    ;;
  serve)
    if ((${#GPUS[@]})); then
      serve_on_gpus
      run_in_group "${evaluate[@]}" --url "${URL}"
    else
      echo "no GPU found: serving ${MODEL_PATH} with vLLM's CPU build (slow beyond small models)"
      run_in_group "${PYTHON}" -m mem_agent.local_stack exec --model "${MODEL_PATH}" --run-dir "${RUN_DIR}/servers" \
        --start-timeout "${SERVE_TIMEOUT}" -- "${evaluate[@]}"
    fi
    ;;
esac
