"""run-eval.sh's GPU serving path run for real, with stand-ins: it waits for health, evaluates, and
stops every process of the servers it started before it exits.

No GPU here: a stand-in `nvidia-smi` lists one, and the interpreter is this test's Python except for
two commands. `-m vllm.entrypoints.openai.api_server` becomes a stand-in server that answers
/health, ignores SIGTERM and has a child that ignores it too (like an engine process that hangs in
its shutdown); the evaluation itself only records its arguments. Everything else (the settings
check, the evaluator's own --check, the health wait, the stop) is the script's real code.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem_agent.serving.processes import free_port
from support.proc_state import still_running
from support.scripts import SCRIPTS, run_script, write_eval_file, write_executable

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
  *" -m vllm.entrypoints.openai.api_server "*) exec {real} {server} {quoted_state} "$@" ;;
  *" -m mem_agent.eval_ruler_hqa "*" --check "*) exec {real} "$@" ;;
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
    assert f"vllm_server is up at http://127.0.0.1:{env['PORT']}" in result.stdout
    evaluated = (state / "evaluated").read_text().splitlines()
    assert evaluated[evaluated.index("--url") + 1] == f"http://127.0.0.1:{env['PORT']}"
    server, child = map(int, (state / "server").read_text().split())
    assert "still running after 1 s: SIGKILL" in result.stdout and "outlived SIGKILL" not in result.stderr
    assert not still_running(server) and not still_running(child), "every process of the server's group is gone"
    assert time.monotonic() - started >= 1, "SIGKILL only after the grace period"
    log = tmp_path / "runs" / "model" / "servers" / "vllm_server.log"
    assert log.exists(), "the server's output goes to its log"
