"""Running the shell scripts in tests, from a minimal environment, and the files they read.

A script test must not depend on the machine or on the caller's shell: an exported `DATA_ROOT`,
`TP` or `EVAL_INTERVAL` is a "set but not used" error for most runs, and an `nvidia-smi` on the
machine switches run-eval.sh to GPU serving. So `run_script` starts from nothing but `PATH`,
`HOME`, `PYTHON` (this interpreter) and `PYTHONPATH` (the checkout first, see suite_policy.py),
with a stand-in `nvidia-smi` first on `PATH` that lists no GPU unless the test asks for some.
What else a script needs, the test gives.

The builders write what the scripts look for: fake slime / vime checkouts with Megatron-LM,
checkpoints and data beside them, stand-ins for `ray`, and RULER-HQA eval files.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = PROJECT_ROOT / "examples" / "mem_agent"
SYSTEM_PATH = ("/usr/bin", "/bin")  # bash, coreutils, awk, ps, curl; never the caller's tools


def _scratch(name: str) -> Path:
    """A folder of this test process's own, removed when it exits."""
    folder = Path(tempfile.mkdtemp(prefix=f"mem_agent_{name}_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def empty_home() -> Path:
    """HOME for a run that names no other: empty, so `~/slime` and `~/models` are never found."""
    return _scratch("home")


@functools.cache
def gpu_bin(gpus: int) -> Path:
    """A folder holding an `nvidia-smi` that lists `gpus` GPUs (none: what a GPU-less node prints)."""
    folder = _scratch(f"gpus{gpus}")
    listing = f"seq 0 {gpus - 1}" if gpus else 'echo "No devices were found" >&2; exit 6'
    write_executable(
        folder / "nvidia-smi", f'#!/usr/bin/env bash\n[[ "$*" == *--query-gpu=index* ]] || exit 0\n{listing}\n'
    )
    return folder


def write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def path_without(folder: Path, *names: str) -> Path:
    """`folder` filled with links to every command of the system PATH except `names` (a machine
    without curl, say), for a test to put on PATH instead of the system folders."""
    folder.mkdir(parents=True, exist_ok=True)
    for system in SYSTEM_PATH:
        for command in Path(system).iterdir():
            link = folder / command.name
            if command.name not in names and not link.exists():
                link.symlink_to(command)
    return folder


def script_env(
    env: Mapping[str, str | None],
    *,
    home: Path | None = None,
    gpus: int = 0,
    bin_dirs: Sequence[Path] = (),
    system_path: Sequence[Path | str] = SYSTEM_PATH,
) -> dict[str, str]:
    """The minimal environment plus `env`; a None value leaves that variable out (e.g. PYTHON).
    PATH: the stand-in nvidia-smi, `bin_dirs`, then `system_path` (see path_without)."""
    path = [str(gpu_bin(gpus)), *map(str, bin_dirs), *map(str, system_path)]
    base: dict[str, str | None] = {
        "PATH": os.pathsep.join(path),
        "HOME": str(home or empty_home()),
        "PYTHON": sys.executable,
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    merged = base | dict(env)
    assert "PATH" not in env or env["PATH"] is None, "give commands through bin_dirs, not PATH"
    return {name: value for name, value in merged.items() if value is not None}


def run_command(
    argv: Sequence[str],
    env: Mapping[str, str | None] | None = None,
    *,
    cwd: Path = PROJECT_ROOT,
    home: Path | None = None,
    gpus: int = 0,
    bin_dirs: Sequence[Path] = (),
    system_path: Sequence[Path | str] = SYSTEM_PATH,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        env=script_env(env or {}, home=home, gpus=gpus, bin_dirs=bin_dirs, system_path=system_path),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_until_first_result(env: Mapping[str, str], cwd: Path, results: Path, timeout_s: float) -> subprocess.Popen:
    """run-eval.sh started in its own session (so a test can signal it as a user would), output to
    cwd/first.log, returned once `results` holds its first line: the run is then mid-evaluation."""
    log_path = cwd / "first.log"
    with log_path.open("w") as log:
        script = subprocess.Popen(
            ["bash", str(SCRIPTS / "run-eval.sh")],
            env=env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout_s
    while not (results.exists() and results.read_bytes().count(b"\n") >= 1):
        assert script.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
        time.sleep(0.05)
    return script


def run_script(
    script: Path,
    env: Mapping[str, str | None] | None = None,
    *args: str,
    cwd: Path = PROJECT_ROOT,
    home: Path | None = None,
    gpus: int = 0,
    bin_dirs: Sequence[Path] = (),
    system_path: Sequence[Path | str] = SYSTEM_PATH,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`bash script args...` in the minimal environment plus `env`."""
    return run_command(
        ["bash", str(script), *args],
        env,
        cwd=cwd,
        home=home,
        gpus=gpus,
        bin_dirs=bin_dirs,
        system_path=system_path,
        timeout=timeout,
    )


def refusal(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The problems of a script's one refusal (exit 2, one `error:` line, no traceback), one each."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr, result.stderr
    message = result.stderr[result.stderr.index("error:") :]  # a dry run's warnings come before it
    return [line.removeprefix("  - ") for line in message.splitlines() if line.startswith("  - ")]


def named(problems: Sequence[str]) -> list[str]:
    """The variable each problem names first: `LENGTH=abc must be ...` and `TP is set but not used` name
    LENGTH and TP."""
    return [match.group(0) for problem in problems if (match := re.match(r"[A-Z][A-Z0-9_]*\b", problem))]


def unused(problems: Sequence[str]) -> list[str]:
    """The variables refused as set but not used by the chosen mode (Problems.unused, docs/settings.md)."""
    return [problem.split()[0] for problem in problems if " is set but not used" in problem]


# ---- the trainer side: checkouts, checkpoints, data, `ray` ----------------------------------------


@dataclass(frozen=True)
class TrainerFiles:
    """Fake slime and vime checkouts, Megatron-LM, checkpoints and data under `root`, and a `ray`
    in `bin_dir` that logs its arguments to `ray_calls` and fails (a dry run never reaches it)."""

    root: Path

    def checkout(self, host: str) -> Path:
        return self.root / host / "trainer"

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def ray_calls(self) -> Path:
        return self.root / "ray_calls"

    def env(self, host: str = "slime") -> dict[str, str]:
        """The paths a launch or a conversion reads, with TRAINER_ROOT at `host`'s checkout."""
        return {
            "TRAINER_ROOT": str(self.checkout(host)),
            "MEGATRON_PATH": str(self.root / "Megatron-LM"),
            "HF_CKPT": str(self.root / "hf"),
            "TORCH_DIST": str(self.root / "dist"),
            "TRAIN_DATA": str(self.root / "train.jsonl"),
            "SAVE_PATH": str(self.root / "save"),
        }


def write_trainer_files(root: Path) -> TrainerFiles:
    files = TrainerFiles(root)
    for host in ("slime", "vime"):
        checkout = files.checkout(host)
        (checkout / host).mkdir(parents=True)
        (checkout / "train.py").write_text("")
        (checkout / "tools").mkdir()
        (checkout / "tools" / "convert_torch_dist_to_hf.py").write_text("")
    for folder in ("Megatron-LM", "hf", "dist"):
        (root / folder).mkdir()
    (root / "hf" / "config.json").write_text(json.dumps({"vocab_size": 151936}))
    (root / "train.jsonl").write_text("{}\n")
    write_executable(files.bin_dir / "ray", f'#!/usr/bin/env bash\necho "$*" >> {files.ray_calls}\nexit 1\n')
    return files


_LIVE_RAY = """#!/usr/bin/env bash
# Stand-in for `ray`: `start --head --block` stays in the foreground with a child that ignores
# SIGTERM (like a stuck raylet) and serves the job API's GETs from the folder $state/api (Ray's
# /api/version; /api/jobs/ID once the job exists), unless state/no_api; with state/head_fails it
# exits at once. `job submit` logs its argv and, as files in the state folder ask, fails once
# before the job exists (no_agent), fails after creating it (job_fails) or runs until stopped (hold).
state={state}
case "$1 $2" in
  "start --head")
    echo $$ > "$state/head"
    bash -c 'trap "" TERM; exec sleep 600' &
    echo $! > "$state/child"
    [[ ! -e "$state/head_fails" ]] || exit 1
    mkdir -p "$state/api/api/jobs" && echo '{{"ray_version": "stand-in"}}' > "$state/api/api/version"
    port=$(sed -n 's/.*--dashboard-port \\([0-9]*\\).*/\\1/p' <<< "$*")
    [[ -e "$state/no_api" ]] || {python} -m http.server --bind 127.0.0.1 --directory "$state/api" "$port" &
    wait
    ;;
  "job submit")
    printf '%s\\n' "$@" > "$state/submitted"
    echo "$$" >> "$state/submissions"
    if [[ -e "$state/no_agent" ]]; then rm "$state/no_agent"; echo "No available agent" >&2; exit 1; fi
    id=$(sed -n 's/.*--submission-id \\([^ ]*\\).*/\\1/p' <<< "$*")
    if [[ -e "$state/job_fails" ]]; then touch "$state/api/api/jobs/$id"; exit 1; fi
    [[ ! -e "$state/hold" ]] || exec sleep 600
    ;;
  *) exit 1 ;;
esac
"""


def write_live_ray(bin_dir: Path, state: Path) -> Path:
    """A `ray` whose head runs until stopped: the head's pid goes to state/head, its child's
    (which ignores SIGTERM) to state/child, the submitted job's words to state/submitted and each
    submission's pid to a line of state/submissions."""
    script = _LIVE_RAY.format(state=shlex.quote(str(state)), python=shlex.quote(sys.executable))
    return write_executable(bin_dir / "ray", script)


# ---- eval files ------------------------------------------------------------------------------------


def eval_items(count: int) -> str:
    """A valid RULER-HQA eval file's text: `count` items with context, input and answers."""
    return json.dumps(
        [{"context": "c", "input": "q", "answers": ["a"], "num_docs": 2, "index": i} for i in range(count)]
    )


def write_eval_file(path: Path, count: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(eval_items(count))
    return path
