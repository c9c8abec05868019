"""run-eval.sh's checks of the machine: the node's GPUs (or a dry run's preview), the model (or
the folder CONVERT=1 converts into), the data, the server at URL, the ports, the router, the
packages, and the data an earlier demo left. Every finding goes to `Problems`: a value that cannot
work is a problem, what this machine lacks is one only in a real run (a warning in a dry run).
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace

from mem_agent.common.jsonstream import iter_json_array
from mem_agent.evaluation.files import check_eval_file
from mem_agent.evaluation.suites.longbench import LONGBENCH
from mem_agent.evaluation.suites.ruler import RULER
from mem_agent.launch.convert import Conversion, converted_path
from mem_agent.launch.eval_settings import SERVER_KNOBS, EvalSettings, Mode, Suite, runs
from mem_agent.launch.problems import Problems, port_in_use
from mem_agent.launch.serving import GpuLayout

MEM_AGENT_DIR = Path(__file__).resolve().parents[1]
REPO = MEM_AGENT_DIR.parents[1]


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
        return settings.model_path, None
    if not environ.get("SINGLE_ITER", "").strip():
        problems.problem("CONVERT=1 needs SINGLE_ITER (the iteration to convert, e.g. 99)")
        return "", None
    conversion, folder = converted_path(environ, problems)
    return str(folder), conversion


def check_machine(settings: EvalSettings, mode: Mode, lengths: list[str], problems: Problems) -> None:
    """What this machine must have: the data, the model, the server at URL, the packages."""
    if mode is not Mode.DEMO and runs(settings, Suite.RULER):
        _check_ruler_files(settings, problems)
    if mode is not Mode.DEMO and runs(settings, Suite.LONGBENCH):
        _check_longbench_files(settings, problems)
    if mode is not Mode.DEMO and runs(settings, Suite.HQA):
        absent = [f"eval_{n}.json" for n in lengths if not (Path(settings.data_root) / f"eval_{n}.json").is_file()]
        if absent:
            get = (
                f'DATA_ROOT={settings.data_root} LENGTH="{" ".join(lengths)}" bash {MEM_AGENT_DIR}/prepare-eval-data.sh'
            )
            problems.missing(
                f"DATA_ROOT={settings.data_root} lacks {' '.join(absent)} (get them with: {get} --download,"
                " or --build-from RAW.json)"
            )
    if settings.model_path and not settings.convert and not (Path(settings.model_path) / "config.json").is_file():
        problems.missing(f"MODEL_PATH={settings.model_path} is not a Hugging Face model folder (no config.json)")
    if settings.url:
        _reach(settings.url, problems)
    needed = [] if settings.url else ["vllm"]  # serving, on GPUs or on the CPU stack
    needed += [] if "--no-plot" in settings.extra_eval_args.split() else ["matplotlib"]  # the accuracy plot
    absent = [name for name in needed if importlib.util.find_spec(name) is None]
    if absent:
        problems.missing(
            f"{sys.executable} cannot import {', '.join(absent)}: run bash {REPO}/scripts/bootstrap.sh (it makes"
            f" {REPO}/.venv with everything), or set PYTHON to an interpreter with mem-agent installed"
            f" (pip install -e '{REPO}[eval]')"
        )


def _check_ruler_files(settings: EvalSettings, problems: Problems) -> None:
    """Every split x length file is there, found as the evaluator finds them (their items are read in
    full by the evaluator's own checks)."""
    root = Path(settings.ruler_root)
    wanted = SimpleNamespace(
        ruler_root=root,
        ruler_splits=settings.ruler_splits.split(),
        ruler_lengths=[int(n) for n in settings.ruler_lengths.split()],
    )
    absent = (
        [path.name for path in RULER.find(wanted, allow_missing=True) if not path.is_file()] if root.is_dir() else []
    )
    if absent or not root.is_dir():
        shown = " ".join(absent[:4]) + (f" and {len(absent) - 4} more" if len(absent) > 4 else "") or "its files"
        build = f"python -m mem_agent.build_ruler --out-dir {root} --tokenizer MODEL_PATH --lengths ..."
        problems.missing(
            f"RULER_ROOT={root} lacks {shown} (copy MemAgent's or RULER's files there, or make ours: {build})"
        )


def _check_longbench_files(settings: EvalSettings, problems: Problems) -> None:
    """Every task's file is there, found as the evaluator finds them."""
    root = Path(settings.longbench_root)
    wanted = SimpleNamespace(longbench_root=root, longbench_tasks=settings.longbench_tasks.split())
    absent = [path.name for path in LONGBENCH.find(wanted, allow_missing=True) if not path.is_file()]
    if absent:
        problems.missing(
            f"LONGBENCH_ROOT={root} lacks {' '.join(absent)} (unpack LongBench's data.zip there: its data/ folder"
            " holds <task>.jsonl; docs/evaluation.md#longbench-qa)"
        )


def _reach(url: str, problems: Problems) -> None:
    """One TCP connection before anything is written: an address where nothing listens is one line
    now, not a run whose every item fails after its retries."""
    address = urllib.parse.urlsplit(url)
    try:
        port = address.port or (443 if address.scheme == "https" else 80)
    except ValueError:
        problems.problem(f"URL={url} has no valid port")
        return
    try:
        socket.create_connection((address.hostname or "", port), timeout=10).close()
    except OSError:
        problems.missing(
            f"URL={url}: nothing answers at {address.hostname}:{port}; start the server or router first, or fix URL"
        )


def check_layout(settings: EvalSettings, layout: GpuLayout, problems: Problems) -> str:
    """Enough GPUs, free ports, the router; returns the router's path (with DP_MODE=router)."""
    needed = settings.dp * settings.tp
    if needed > len(layout.gpus):
        have = (
            f"NUM_GPUS={settings.num_gpus}"
            if settings.num_gpus
            else f"this node has {len(layout.gpus)} ({' '.join(layout.gpus)})"
        )
        (problems.problem if settings.num_gpus else problems.missing)(
            f"DP={settings.dp} x TP={settings.tp} needs {needed} GPUs; {have}"
        )
    if layout.ports[-1] > 65535:
        problems.problem(f"PORT={settings.port}: the router mode needs ports up to PORT+DP+1 = {layout.ports[-1]}")
    elif not settings.dry_run:
        for port in layout.ports:
            if port_in_use(port):
                problems.problem(f"port {port} is already in use on this node: choose another PORT")
    if not layout.behind_router:
        return ""
    beside = Path(sys.executable).with_name("vllm-router")  # installed with the interpreter (the project's .venv)
    router = str(beside) if beside.exists() else shutil.which("vllm-router")
    if router is None:
        problems.missing(
            "command 'vllm-router' not found: DP_MODE=router puts it in front of the servers (pip install vllm-router)"
        )
    return router or "vllm-router"


def check_demo_data(data: Path, lengths: list[str], questions: int, problems: Problems) -> None:
    """Data an earlier demo made is reused only if it has the questions asked for now."""
    wanted = {f"eval_{n}.json": questions for n in lengths} | {"synthetic_qa.json": 4 * questions}
    for name, count in wanted.items():
        if not (data / name).is_file():
            continue
        try:
            found = str(len(check_eval_file(data / name))) if name != "synthetic_qa.json" else str(_items(data / name))
        except ValueError as error:
            found = f"unreadable data ({error})"
        if found != str(count):
            problems.problem(
                f"{data / name} (from an earlier demo) holds {found} questions, not {count} (DEMO_QUESTIONS="
                f"{questions}): choose another SAVE_FILE, or move {data.parent} aside"
            )


def _items(path: Path) -> int:
    return sum(1 for _ in iter_json_array(path))
