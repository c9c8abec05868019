"""run-eval.sh's checks of the machine and of what it serves, each finding a `Problems` entry: a
value that cannot work is a problem, what this machine lacks is one only in a real run.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from mem_agent.common.jsonstream import iter_json_array
from mem_agent.common.usage import Problems, UsageError
from mem_agent.evaluation.files import check_eval_file
from mem_agent.evaluation.request import EvalRequest
from mem_agent.evaluation.run_plan import RunSettings, check_packages
from mem_agent.evaluation.suites import LONGBENCH, RULER, RULER_HQA
from mem_agent.inference.agent_flags import reach_servers
from mem_agent.launch.convert import Conversion, converted_path
from mem_agent.launch.eval_settings import SERVER_KNOBS, DpMode, EvalSettings, Mode
from mem_agent.serving.cpu_stack import VLLM_SERVER, router_argv
from mem_agent.serving.processes import port_in_use

MEM_AGENT_DIR = Path(__file__).resolve().parents[1]
REPO = MEM_AGENT_DIR.parents[1]

Server = tuple[str, list[str], str]  # a server's name (its log: servers/<name>.log), command and URL
Step = str | tuple[str, list[str]]  # a line for a person, or a command (its name, its words) run in the foreground


def node_gpus(settings: EvalSettings, environ: Mapping[str, str], problems: Problems) -> tuple[str, ...]:
    """The node's GPUs (CUDA_VISIBLE_DEVICES, else nvidia-smi's list); a dry run may preview others."""
    found: list[str] = []
    if shutil.which("nvidia-smi", path=environ.get("PATH")) is not None:
        visible = environ.get("CUDA_VISIBLE_DEVICES", "").strip()
        if visible:
            found = visible.split(",")
        else:
            query = ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"]
            listed = subprocess.run(query, capture_output=True, text=True, timeout=60, check=False, env=environ)
            found = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    if not settings.dry_run:
        return tuple(found)
    count = settings.num_gpus
    if count is None and not found and any(environ.get(knob, "").strip() for knob in SERVER_KNOBS):
        count = settings.dp * settings.tp
        preview = f"previewing the launch on {count} GPU(s), DP x TP (NUM_GPUS=N previews another node)"
        problems.warnings.append(f"no GPU on this machine: {preview}")
    return tuple(map(str, range(count))) if count else tuple(found)


def model_folder(
    settings: EvalSettings, environ: Mapping[str, str], problems: Problems
) -> tuple[str, Conversion | None]:
    """MODEL_PATH, or with CONVERT=1 the folder the conversion writes and the conversion (its checks
    are ours, prefixed)."""
    if not settings.convert:
        if settings.model_path and not (Path(settings.model_path) / "config.json").is_file():
            problems.missing(f"MODEL_PATH={settings.model_path} is not a Hugging Face model folder (no config.json)")
        return settings.model_path, None
    if not environ.get("SINGLE_ITER", "").strip():
        problems.problem("CONVERT=1 needs SINGLE_ITER (the iteration to convert, e.g. 99)")
        return "", None
    conversion, folder = converted_path(environ, problems)
    return str(folder), conversion


def gpu_servers(
    settings: EvalSettings, gpus: tuple[str, ...], python: str, model: str, problems: Problems
) -> list[list[Server]]:
    """The servers of a GPU node, checked (enough GPUs, free ports, the router), in waves: DP_MODE=router
    puts replica i on GPUs [i*TP, (i+1)*TP) of the node's list at PORT+1+i, then vllm-router at PORT in
    front of them (metrics at PORT+DP+1); otherwise one server (vLLM's own --data-parallel-size) at PORT."""
    dp, tp, host, port = settings.dp, settings.tp, settings.host, settings.port
    routed = dp > 1 and settings.dp_mode is DpMode.ROUTER
    serve = [python, *VLLM_SERVER, "--model", model, "--host", host, "--tensor-parallel-size", str(tp)]
    serve += settings.extra_serve_args.split()
    ports = range(port, port + (dp + 2 if routed else 1))
    if dp * tp > len(gpus):
        have = f"NUM_GPUS={settings.num_gpus}" if settings.num_gpus else f"this node has {len(gpus)} ({' '.join(gpus)})"
        (problems.problem if settings.num_gpus else problems.missing)(f"DP={dp} x TP={tp} needs {dp * tp} GPUs; {have}")
    if ports[-1] > 65535:
        problems.problem(f"PORT={port}: the router mode needs ports up to PORT+DP+1 = {ports[-1]}")
    elif not settings.dry_run:
        problems.extend(
            f"port {n} is already in use on this node: choose another PORT" for n in ports if port_in_use(n)
        )

    def server(name: str, devices: tuple[str, ...], at: int, *more: str) -> Server:
        command = ["env", f"CUDA_VISIBLE_DEVICES={','.join(devices)}", *serve, "--port", str(at), *more]
        return name, command, f"http://{host}:{at}"

    if not routed:
        return [[server("vllm_server", gpus[: dp * tp], port, *(["--data-parallel-size", str(dp)] if dp > 1 else []))]]
    replicas = [server(f"vllm_server_{i}", gpus[i * tp : (i + 1) * tp], port + 1 + i) for i in range(dp)]
    command = router_argv([url for _, _, url in replicas], host, port, ports[-1])
    if shutil.which(command[0]) is None:
        problems.missing(
            "command 'vllm-router' not found: DP_MODE=router puts it in front of the servers (pip install vllm-router)"
        )
    return [replicas, [("vllm_router", command, f"http://{host}:{port}")]]


def check_needs(request: EvalRequest, checked: RunSettings, settings: EvalSettings, problems: Problems) -> None:
    """What the evaluator's `request` needs of this machine: vLLM where it is served here, the
    evaluator's packages, each suite's files (not the demo's: it makes them), the server at URL."""
    if not settings.url and importlib.util.find_spec("vllm") is None:
        problems.missing(
            f"{sys.executable} cannot import vllm: run bash {REPO}/scripts/bootstrap.sh (it makes {REPO}/.venv with"
            f" everything), or set PYTHON to an interpreter with mem-agent installed (pip install -e '{REPO}[eval]')"
        )
    try:
        check_packages(request)
    except UsageError as error:
        problems.missing(str(error))
    if settings.mode() is not Mode.DEMO:
        _check_files(request, problems)
    try:
        reach_servers(list(checked.servers) if settings.url else [])
    except UsageError as error:
        problems.missing(f"URL={settings.url}: {error}; start the server or router first, or fix URL")
    except ValueError as error:  # a port that is not one
        problems.problem(f"URL={settings.url}: {error}")


def _check_files(request: EvalRequest, problems: Problems) -> None:
    """Each suite's files, found as the evaluator finds them (it reads them in full later)."""
    lengths = " ".join(map(str, request.lengths or ()))
    hqa = f'DATA_ROOT={request.data_root} LENGTH="{lengths}" bash {MEM_AGENT_DIR}/prepare-eval-data.sh --download'
    ruler = f"python -m mem_agent.build_ruler --out-dir {request.ruler_root} --tokenizer MODEL_PATH --lengths ..."
    longbench = (
        "unpack LongBench's data.zip there: its data/ folder holds <task>.jsonl; docs/evaluation.md#longbench-qa"
    )
    for suite, variable, root, get in (
        (RULER_HQA, "DATA_ROOT", request.data_root, f"get them with: {hqa}, or --build-from RAW.json"),
        (RULER, "RULER_ROOT", request.ruler_root, f"copy MemAgent's or RULER's files there, or make ours: {ruler}"),
        (LONGBENCH, "LONGBENCH_ROOT", request.longbench_root, longbench),
    ):
        try:
            absent = [path.name for path in suite.find(request, allow_missing=True) if not path.is_file()]
        except UsageError:  # not a folder
            absent = ["its files"]
        if absent:
            shown = " ".join(absent[:8]) + (f" and {len(absent) - 8} more" if len(absent) > 8 else "")
            problems.missing(f"{variable}={root} lacks {shown} ({get})")


def demo_data(python: str, data: Path, lengths: list[str], questions: int, problems: Problems) -> list[Step]:
    """The steps that make the demo's data; what an earlier demo made is reused if it has the questions
    asked for now."""
    raw = data / "synthetic_qa.json"
    wanted = {data / f"eval_{n}.json": questions for n in lengths} | {raw: 4 * questions}
    reused = [path for path in wanted if path.is_file()]
    for path in reused:
        try:
            found = str(len(check_eval_file(path)) if path != raw else sum(1 for _ in iter_json_array(path)))
        except ValueError as error:
            found = f"unreadable data ({error})"
        if found != str(wanted[path]):
            problems.problem(
                f"{path} (from an earlier demo) holds {found} questions, not {wanted[path]} (DEMO_QUESTIONS="
                f"{questions}): choose another SAVE_FILE, or move {data.parent} aside"
            )
    steps: list[Step] = [
        "demo: synthetic multi-hop QA made by mem_agent.synthetic_qa (real HotpotQA is not downloaded here)"
    ]
    if reused:
        steps.append(f"demo: reusing {' '.join(path.name for path in reused)} in {data} (made by an earlier run)")
    if raw not in reused:
        made = [python, "-m", "mem_agent.synthetic_qa", "--out", str(raw), "--num-questions", str(4 * questions)]
        steps.append(("synthetic_qa", made))
    if build := [n for n in lengths if data / f"eval_{n}.json" not in reused]:
        # text layout at every length: the demo's synthetic set is too small a corpus for index files
        builder = [python, "-m", "mem_agent.build_long_context", "--input", str(raw), "--layout", "text", "--num-docs"]
        steps.append(
            ("build_long_context", [*builder, *build, "--num-questions", str(questions), "--out-dir", str(data)])
        )
    return steps
