"""run-eval.sh's GPU serving path run for real, with stand-ins: it waits for health, evaluates, and
stops every process of the servers it started before it exits.

No GPU here: a stand-in `nvidia-smi` lists one, and the interpreter is this test's Python except for
two commands. `-m vllm.entrypoints.openai.api_server` becomes a stand-in server that answers
/health, ignores SIGTERM and has a child that ignores it too (like an engine process that hangs in
its shutdown); the evaluation itself only records its arguments. Everything else (the settings
check with the evaluator's own, the launch: lock, health wait, stop) is the real code.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem_agent.evaluation.results import read_results
from mem_agent.serving.processes import free_port
from mem_agent.tokenization.tokenizer import bundled_qwen3_dir
from support.folder_holder import start_holder
from support.proc_state import still_running
from support.scripts import (
    PROJECT_ROOT,
    SCRIPTS,
    run_script,
    script_env,
    start_until_first_result,
    write_eval_file,
    write_executable,
)

_SERVER = """
import http.server, pathlib, signal, subprocess, sys

state = pathlib.Path(sys.argv[1])
port = int(sys.argv[sys.argv.index("--port") + 1])
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # inherits SIG_IGN


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", port), Health)
(state / "server").write_text(f"{__import__('os').getpid()} {child.pid}")
server.serve_forever()
"""


@pytest.fixture
def node(tmp_path) -> Iterator[tuple[dict[str, str], Path]]:
    """The run's settings (a model folder, an eval file, the interpreter with the two stand-in
    commands) and the folder where the stand-ins write what they did."""
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    write_eval_file(tmp_path / "data" / "eval_50.json", 1)
    (tmp_path / "server.py").write_text(_SERVER)
    real, server, quoted_state = (shlex.quote(str(path)) for path in (sys.executable, tmp_path / "server.py", state))
    python = write_executable(
        tmp_path / "bin" / "python",
        f"""#!/usr/bin/env bash
case " $* " in
  *" -m mem_agent run-eval "*) exec {real} "$@" ;;  # the checks and the launch (its commands come back here)
  *" -m vllm.entrypoints.openai.api_server "*) exec {real} {server} {quoted_state} "$@" ;;
  *" -m mem_agent.eval_ruler_hqa "*) printf '%s\\n' "$@" > {quoted_state}/evaluated ;;
  *) exec {real} "$@" ;;
esac
""",
    )
    env = {
        "PYTHON": str(python),
        "MODEL_PATH": str(tmp_path / "model"),
        "DATA_ROOT": str(tmp_path / "data"),
        "LENGTH": "50",
        "OUTPUT_ROOT": str(tmp_path / "runs"),
        "PORT": str(free_port()),
        "HEALTH_INTERVAL": "1",
        "SERVE_STOP_TIMEOUT": "1",
    }
    yield env, state
    if (state / "server").exists():  # whatever the script left, so that a failing test leaks nothing
        for pid in map(int, (state / "server").read_text().split()):
            if still_running(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_gpu_run_waits_for_health_evaluates_and_leaves_no_server_process_running(node, tmp_path):
    """The server and its child ignore SIGTERM: after SERVE_STOP_TIMEOUT they get SIGKILL, and the
    script returns only once neither runs (a zombie, which init may reap late, has exited)."""
    env, state = node
    started = time.monotonic()
    result = run_script(SCRIPTS / "run-eval.sh", env, cwd=tmp_path, home=tmp_path, gpus=1, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    evaluated = (state / "evaluated").read_text().splitlines()
    assert evaluated[evaluated.index("--url") + 1] == f"http://127.0.0.1:{env['PORT']}"
    evaluated_at = (state / "evaluated").stat().st_mtime
    server, child = map(int, (state / "server").read_text().split())
    assert not still_running(server) and not still_running(child), "every process of the server's group is gone"
    assert time.time() - evaluated_at >= 1, "SIGKILL only after the grace period (SERVE_STOP_TIMEOUT=1)"
    assert time.monotonic() - started >= 1
    log = tmp_path / "runs" / "model" / "servers" / "vllm_server.log"
    assert log.exists(), "the server's output goes to its log"


# ---- a killed run leaves nothing running ------------------------------------------------------------

# A stand-in vLLM server that answers vime's /inference/v1/generate (the benchmarks' latency server,
# 0.2 s a request) and, like the one above, ignores SIGTERM and has a child that ignores it too.
_ANSWERING_SERVER = """
import os, pathlib, signal, subprocess, sys
sys.path.insert(0, {root!r})
from aiohttp import web
from bench.latency_server import make_app

state = pathlib.Path(sys.argv[1])
port = int(sys.argv[sys.argv.index("--port") + 1])
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # inherits SIG_IGN
with (state / "server").open("a") as pids:
    pids.write(f"{{os.getpid()}} {{child.pid}}\\n")
web.run_app(make_app(tokens=8, delay_s=0.2), host="127.0.0.1", port=port, handle_signals=False, print=None)
"""
ITEMS = 6


@pytest.fixture
def answering_node(node, tmp_path) -> tuple[dict[str, str], Path]:
    """`node` with a server that answers and the real evaluator, one question at a time (so that a
    kill lands mid-run), reading the model folder's tokenizer (the bundled Qwen3's files)."""
    env, state = node
    (tmp_path / "server.py").write_text(_ANSWERING_SERVER.format(root=str(PROJECT_ROOT)))
    for source in bundled_qwen3_dir().iterdir():
        (tmp_path / "model" / source.name).symlink_to(source)
    write_eval_file(tmp_path / "data" / "eval_50.json", ITEMS)
    real = shlex.quote(sys.executable)
    server, quoted_state = shlex.quote(str(tmp_path / "server.py")), shlex.quote(str(state))
    write_executable(
        Path(env["PYTHON"]),
        f"""#!/usr/bin/env bash
case " $* " in
  *" -m mem_agent run-eval "*) exec {real} "$@" ;;
  *" -m vllm.entrypoints.openai.api_server "*) exec {real} {server} {quoted_state} "$@" ;;
  *) exec {real} "$@" ;;
esac
""",
    )
    return env | {"PROTOCOL": "vllm", "QUESTIONS_IN_FLIGHT": "1", "EXTRA_EVAL_ARGS": "--no-plot"}, state


def _processes_of(tmp_path: Path, state: Path) -> dict[int, str]:
    """Every running process whose command line names this test's folder, and the servers' children."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and str(tmp_path) in line and still_running(int(entry.name)):
            found[int(entry.name)] = line
    if (state / "server").exists():
        for pid in map(int, (state / "server").read_text().split()):
            if still_running(pid):
                found.setdefault(pid, "a server or its child")
    return found


@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL], ids=["TERM", "KILL"])
def test_a_run_killed_mid_evaluation_leaves_no_evaluator_or_server_and_a_rerun_completes(
    answering_node, tmp_path, kill, measured
):
    """TERM: the script's trap stops both groups (the server gets SIGKILL after SERVE_STOP_TIMEOUT).
    SIGKILL: no trap runs; each group's tether sees its parent gone and stops the group itself. Either
    way nothing of the run is left, the folder's lock goes with its holders, and a rerun resumes."""
    env, state = answering_node
    results = tmp_path / "runs" / "model" / "results_50.jsonl"
    script = start_until_first_result(script_env(env, home=tmp_path, gpus=1), tmp_path, results, timeout_s=120)
    running = _processes_of(tmp_path, state)
    evaluators = [line for line in running.values() if "mem_agent.eval_ruler_hqa" in line]
    assert any("mem_agent.serving.tether" not in line for line in evaluators)
    assert results.read_bytes().count(b"\n") < ITEMS, "the kill lands mid-run"
    signalled = time.monotonic()
    script.send_signal(kill)
    code = script.wait(timeout=60)
    while _processes_of(tmp_path, state):
        assert time.monotonic() - signalled < 30, _processes_of(tmp_path, state)
        time.sleep(0.02)
    seconds = time.monotonic() - signalled
    measured(f"run-eval.sh {kill.name} mid-run: nothing of the run left after {seconds:.2f} s (SERVE_STOP_TIMEOUT=1)")
    if kill == signal.SIGTERM:
        assert code == 143, (tmp_path / "first.log").read_text()[-3000:]
    finished = [record["id"] for record in read_results(results) if record["status"] == "completed"]
    rerun = run_script(SCRIPTS / "run-eval.sh", env, cwd=tmp_path, home=tmp_path, gpus=1, timeout=180)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    summary = json.loads((results.parent / "summary.json").read_text())
    assert summary["run"]["items_reused"] == len(finished) >= 1, "the rerun resumed: finished items are reused"
    ids = [record["id"] for record in read_results(results)]
    assert sorted(ids, key=int) == [str(i) for i in range(ITEMS)], "one line per item"
    assert not _processes_of(tmp_path, state), "the rerun stopped what it started"


def test_a_second_run_on_a_held_run_folder_is_refused_in_one_line(node, tmp_path):
    """run-eval.sh started twice on one SAVE_FILE: the second stops before it serves anything."""
    env, _ = node
    holder = start_holder(tmp_path / "runs" / "model", command="run-eval.sh")
    try:
        result = run_script(SCRIPTS / "run-eval.sh", env, cwd=tmp_path, home=tmp_path, gpus=1, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ") and f"pid {holder.pid} (run-eval.sh)" in result.stderr
    assert "SAVE_FILE" in result.stderr, "the way out names the setting"
    assert not (tmp_path / "runs" / "model" / "servers").exists(), "no server was started"
