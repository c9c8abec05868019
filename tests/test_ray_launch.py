"""run-qwen3-4b-train.sh through a real Ray on loopback: head, job submission, runtime env, stop.

The other launch tests use a stand-in `ray`; this one runs the script's live path with the Ray
from the package registry: `ray start --head` as the launch starts it (its own session, loopback
addresses, usage stats off), `ray job submit --runtime-env-json ...` with the job the script
builds, and the head stopped through its session. The job's entry point is a stand-in for the
trainer's train.py (the trainers need GPUs): it imports the hooks the job's flags name, asks a Ray
worker for its environment and its session (the head's: the raylet started it), and prints what it
saw as one JSON line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mem_agent.serving.processes import free_port
from support.proc_state import still_running
from support.scripts import SCRIPTS, run_script, write_executable, write_trainer_files

TRAIN = SCRIPTS / "run-qwen3-4b-train.sh"
REAL_RAY = Path(sys.executable).with_name("ray")
MARK = "STAND-IN TRAINER:"

# The trainer's entry point as the job runs it: `python TRAINER_ROOT/train.py FLAGS...`.
STAND_IN_TRAIN = f'''
import importlib, json, os, sys

import ray

hooks = {{}}
for flag in ("--custom-generate-function-path", "--custom-rm-path", "--custom-reward-post-process-path",
             "--custom-convert-samples-to-train-data-path"):
    module, _, name = sys.argv[sys.argv.index(flag) + 1].rpartition(".")
    hooks[flag] = callable(getattr(importlib.import_module(module), name))

@ray.remote(num_cpus=0)
def worker_env():
    import mem_agent.rollout
    seen = {{k: v for k, v in os.environ.items() if k.startswith("MEM_") or k == "PYTHONPATH"}}
    return seen | {{"session": os.getsid(0)}}

ray.init(address="auto")
seen = {{
    "driver": {{k: v for k, v in os.environ.items() if k.startswith("MEM_") or k == "PYTHONPATH"}},
    "worker": ray.get(worker_env.remote()),
    "hooks": hooks,
    "cwd": os.getcwd(),
    "argv": sys.argv[1:],
}}
print("{MARK}", json.dumps(seen), flush=True)
'''


def test_the_launch_runs_a_job_on_a_real_loopback_ray_and_stops_its_head(tmp_path):
    """The job's driver and its Ray workers see the MEM_* settings the user set and the PYTHONPATH
    the script built, import our hooks by the paths the flags name, and nothing of the head outlives
    the launch."""
    trainer = write_trainer_files(tmp_path)
    checkout = trainer.checkout("slime")
    (checkout / "train.py").write_text(STAND_IN_TRAIN)
    write_executable(trainer.bin_dir / "ray", f'#!/usr/bin/env bash\nexec {REAL_RAY} "$@"\n')
    ray_dir = tempfile.mkdtemp(prefix="mem_ray_")  # short: Ray's socket paths live under it
    env = trainer.env("slime") | {
        "DRY_RUN": "0",
        "GPUS_PER_NODE": "1",
        "RAY_PORT": str(free_port()),
        "RAY_DASHBOARD_PORT": str(free_port()),
        "RAY_AGENT_PORT": str(free_port()),
        "RAY_CLIENT_PORT": str(free_port()),
        "RAY_TEMP_DIR": ray_dir,
        "RAY_STOP_TIMEOUT": "10",  # what of the head still runs 10 s after SIGTERM gets SIGKILL
        "MEM_CHUNK_TOKENS": "4000",
        "MEM_MODE": "rememr1",
        "RAY_AUTH_MODE": "disabled",
    }
    started = time.monotonic()
    try:
        result = run_script(TRAIN, env, bin_dirs=[trainer.bin_dir], timeout=110)
    finally:
        seconds = time.monotonic() - started
        shutil.rmtree(ray_dir, ignore_errors=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    seen = json.loads(next(line for line in result.stdout.splitlines() if line.startswith(MARK))[len(MARK) :])
    expected_path = [env["MEGATRON_PATH"], str(checkout), str(SCRIPTS.parent)]
    for side in ("driver", "worker"):
        assert seen[side]["PYTHONPATH"].split(":")[:3] == expected_path, side
        assert {k: v for k, v in seen[side].items() if k.startswith("MEM_")} == {
            "MEM_CHUNK_TOKENS": "4000",
            "MEM_MODE": "rememr1",
        }, side
    assert all(seen["hooks"].values()) and len(seen["hooks"]) == 4
    assert "--n-samples-per-prompt" in seen["argv"] and seen["argv"][0] == "--actor-num-nodes"
    head = seen["worker"].pop("session")
    assert not still_running(head), "the head the script started is gone"
    sessions = subprocess.run(["ps", "-eo", "sid=,stat="], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in sessions.splitlines()]
    left = [row for row in rows if row[0] == str(head) and not row[1].startswith("Z")]
    assert not left, "no process of the head's session (GCS, raylet, dashboard, workers) outlives the launch"
    print(f"real-Ray launch: {seconds:.1f} s")
    assert seconds < 100, f"the launch took {seconds:.1f} s; CI's budget for it is well under 2 minutes"


@pytest.fixture(autouse=True)
def _real_ray_is_installed():
    assert REAL_RAY.is_file(), f"{REAL_RAY} missing: install the test extra (ray[default])"
