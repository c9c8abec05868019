"""run-qwen3-4b-train.sh: the exact job its dry run prints, what it checks, and how it stops Ray.

The training launch is checked through its dry run (the trainers need GPUs) and through its live
path with a stand-in `ray` that behaves like a head started with --block, so that the stop policy
(only the session this script started, SIGKILL after a grace period) runs for real. Every run
starts from the minimal environment of support/scripts.py, with fake checkouts beside it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mem_agent.serving.processes import free_port
from mem_agent.settings.config import MemAgentConfig
from mem_agent.templates.template_file import Assembly, MemoryText, Thinking, dump_prompt_file
from support.proc_state import still_running
from support.scripts import (
    PROJECT_ROOT,
    SCRIPTS,
    TrainerFiles,
    run_command,
    run_script,
    write_executable,
    write_live_ray,
    write_trainer_files,
)

TRAIN = SCRIPTS / "run-qwen3-4b-train.sh"
SECRET = "wandb-secret-value-0123456789"
QWEN3_4B_MODEL_ARGS = (
    "--swiglu --num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728 --num-attention-heads 32 "
    "--group-query-attention --num-query-groups 8 --kv-channels 128 --use-rotary-position-embeddings "
    "--rotary-base 1000000 --disable-bias-linear --normalization RMSNorm --norm-epsilon 1e-6 "
    "--vocab-size 151936 --qk-layernorm"
)
HOOKS = (
    "--custom-generate-function-path mem_agent.rollout.generate",
    "--custom-rm-path mem_agent.rollout.reward",
    "--custom-reward-post-process-path mem_agent.rollout.reward_post_process",
    "--custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data",
    "--custom-rollout-log-function-path mem_agent.rollout_log.log_rollout",
    "--custom-eval-rollout-log-function-path mem_agent.rollout_log.log_eval_rollout",
)


@pytest.fixture
def trainer(tmp_path) -> TrainerFiles:
    return write_trainer_files(tmp_path)


def _train(trainer: TrainerFiles, host: str, *, cwd: Path = PROJECT_ROOT, **extra: str) -> subprocess.CompletedProcess:
    """A dry run (unless `extra` says DRY_RUN=0) of `host`'s launch, with a W&B key in the environment."""
    env = trainer.env(host) | {"DRY_RUN": "1", "WANDB_API_KEY": SECRET} | extra
    return run_script(TRAIN, env, cwd=cwd, bin_dirs=[trainer.bin_dir])


def _submitted(output: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith("ray job submit"))
    return shlex.split(line)


def _runtime_env(argv: list[str]) -> dict[str, str]:
    return json.loads(argv[argv.index("--runtime-env-json") + 1])["env_vars"]


@pytest.mark.parametrize(
    ("host", "backend", "other_prefix"),
    [
        ("slime", "--sglang-mem-fraction-static 0.7 --sglang-server-concurrency 64", "--vllm-"),
        ("vime", "--vllm-gpu-memory-utilization 0.7 --vllm-server-concurrency 64", "--sglang-"),
    ],
)
def test_train_dry_run_prints_the_memagent_grpo_job_for_each_host(trainer, host, backend, other_prefix):
    result = _train(trainer, host)
    assert result.returncode == 0, result.stderr
    argv = _submitted(result.stdout)
    flags = " ".join(argv)
    for expected in (
        *HOOKS,
        QWEN3_4B_MODEL_ARGS,
        "--input-key prompt --label-key label --metadata-key metadata",
        "--n-samples-per-prompt 16",
        "--num-rollout 100 --rollout-batch-size 128",
        "--rollout-temperature 1.0 --rollout-max-response-len 1024 --global-batch-size 128",
        "--advantage-estimator grpo --use-kl-loss --kl-loss-coef 0.001 --kl-loss-type low_var_kl",
        "--entropy-coef 0 --eps-clip 0.2 --eps-clip-high 0.2",
        "--optimizer adam --lr 1e-6 --lr-warmup-iters 320",
        "--use-dynamic-batch-size --max-tokens-per-gpu 9216",
        "--actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate",
        f"--rollout-num-gpus-per-engine 1 {backend}",
        f"--hf-checkpoint {trainer.env()['HF_CKPT']} --ref-load {trainer.env()['TORCH_DIST']}",
        f"--load {trainer.env()['SAVE_PATH']} --save {trainer.env()['SAVE_PATH']}",
    ):
        assert expected in flags, expected
    assert other_prefix not in flags, "only the host's own backend flags"
    assert "--untie-embeddings-and-output-weights" not in flags, "Qwen3-4B ties its embeddings"
    assert "--apply-chat-template" not in flags and "--use-wandb" not in flags
    assert argv[argv.index("--") + 2] == f"{trainer.checkout(host)}/train.py"
    assert argv[argv.index("--address") + 1] == "http://127.0.0.1:8265"
    assert f"host trainer: {host}" in result.stdout


def test_train_starts_a_loopback_ray_head_in_its_own_session(trainer):
    result = _train(trainer, "slime")
    head = next(shlex.split(line) for line in result.stdout.splitlines() if line.startswith("setsid ray start"))
    assert head[head.index("--dashboard-host") + 1] == "127.0.0.1"
    assert head[head.index("--node-ip-address") + 1] == "127.0.0.1"
    assert head[head.index("--temp-dir") + 1].startswith("/") and "--block" in head
    assert not trainer.ray_calls.exists(), "a dry run never calls ray"


def test_train_runtime_env_forwards_only_the_mem_settings_the_user_set(trainer):
    result = _train(trainer, "vime", MEM_CHUNK_TOKENS="4000", MEM_MODE="rememr1", MEM_SHARED_DATA="/data")
    env = _runtime_env(_submitted(result.stdout))
    assert {k: v for k, v in env.items() if k.startswith("MEM_")} == {"MEM_CHUNK_TOKENS": "4000", "MEM_MODE": "rememr1"}
    assert env["PYTHONPATH"].split(":") == [
        trainer.env()["MEGATRON_PATH"],
        str(trainer.checkout("vime")),
        str(SCRIPTS.parent),
    ]
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"


def test_train_sends_the_template_file_as_an_absolute_path(trainer, tmp_path):
    """The Ray workers run in the trainer's folder: a relative MEM_PROMPTS would name another file."""
    folder = tmp_path / "here"
    folder.mkdir()
    templates = {
        "memory_turn": "Q: {problem}\nM: {memory}\nS: {section}\n",
        "final_turn": "Q: {problem}\nM: {memory}\n",
    }
    text = dump_prompt_file(
        mode="memagent",
        assembly=Assembly.TOKENS,
        thinking=Thinking.TEMPLATE,
        memory=MemoryText.RESPONSE,
        templates=templates | {"no_memory": "none"},
        source={"name": "ours", "commit": "none"},
    )
    (folder / "prompts.toml").write_text(text)
    result = _train(trainer, "slime", cwd=folder, MEM_PROMPTS="prompts.toml")
    assert result.returncode == 0, result.stderr
    assert _runtime_env(_submitted(result.stdout))["MEM_PROMPTS"] == str(folder / "prompts.toml")


def test_train_forwards_every_setting_python_declares():
    """The shell has no list of its own: Python's settings decide what reaches the workers."""
    fields = MemAgentConfig.model_fields.values()
    values = {f.alias: str(f.default if not isinstance(f.default, bool) else int(f.default)) for f in fields}
    values = {env: value or "/set/by/the/user" for env, value in values.items()}  # an empty value is unset
    script = f"source {shlex.quote(str(SCRIPTS / '_common.sh'))}; mem_env_json"
    result = run_command(["bash", "-c", script], values)
    assert result.returncode == 0, result.stderr
    forwarded = json.loads(result.stdout)["env_vars"]
    assert {k: v for k, v in forwarded.items() if k.startswith("MEM_")} == values


def test_train_never_shows_the_wandb_key(trainer):
    result = _train(trainer, "slime", WANDB_PROJECT="memagent", MEM_MAX_MEMORY="512")
    assert result.returncode == 0, result.stderr
    argv = _submitted(result.stdout)
    assert "--use-wandb --wandb-project memagent --wandb-group qwen3-4b-memagent" in " ".join(argv)
    assert "WANDB_API_KEY" not in _runtime_env(argv), "a runtime env is logged by Ray and visible in ps"
    assert SECRET not in result.stdout + result.stderr
    assert "WANDB_API_KEY=<set>" in result.stdout


def test_train_appends_extra_args_as_words_at_the_end(trainer):
    result = _train(trainer, "vime", EXTRA_ARGS="--use-tis --tis-clip 2", EXTRA_BACKEND_ARGS="--vllm-enforce-eager")
    argv = _submitted(result.stdout)
    assert argv[-4:] == ["--vllm-enforce-eager", "--use-tis", "--tis-clip", "2"]


def test_train_host_trainer_overrides_what_the_checkout_holds(trainer):
    flags = " ".join(_submitted(_train(trainer, "slime", HOST_TRAINER="vime").stdout))
    assert "--vllm-gpu-memory-utilization" in flags and "--sglang-" not in flags


def test_train_async_mode_splits_the_gpus_and_does_not_colocate(trainer):
    (trainer.checkout("slime") / "train_async.py").write_text("")
    argv = _submitted(_train(trainer, "slime", ASYNC="1").stdout)
    assert argv[argv.index("--") + 2].endswith("/train_async.py") and "--colocate" not in argv
    assert "--actor-num-gpus-per-node 4 --rollout-num-gpus 4" in " ".join(argv)


def test_train_eval_during_training_only_when_eval_data_is_set(trainer, tmp_path):
    assert "--eval-interval" not in _train(trainer, "slime").stdout
    (tmp_path / "eval.jsonl").write_text("{}\n")
    flags = " ".join(_submitted(_train(trainer, "slime", EVAL_DATA=str(tmp_path / "eval.jsonl")).stdout))
    assert f"--eval-prompt-data hotpotqa {tmp_path}/eval.jsonl" in flags
    assert "--n-samples-per-eval-prompt 1 --eval-temperature 0.7 --eval-top-p 0.95" in flags


def test_train_reports_every_problem_at_once_and_starts_nothing(trainer, tmp_path):
    """A real run (not a dry run) refuses missing paths; both bad MEM_* values are named, not just the first."""
    result = _train(
        trainer,
        "slime",
        DRY_RUN="0",
        HF_CKPT=str(tmp_path / "nope"),
        TRAIN_DATA=str(tmp_path / "none.jsonl"),
        MEM_CHUNK_TOKENS="0",
        MEM_MAX_FINAL="-1",
        NNODES="two",
    )
    assert result.returncode == 2
    assert "cannot start, 5 problem(s)" in result.stderr
    for fragment in (
        f"HF_CKPT={tmp_path}/nope",
        f"TRAIN_DATA={tmp_path}/none.jsonl",
        "MEM_CHUNK_TOKENS=0 must be a positive integer (default 5000)",
        "MEM_MAX_FINAL=-1 must be a positive integer (default 1024)",
        "NNODES=two must be a positive integer",
    ):
        assert fragment in result.stderr, fragment
    assert result.stderr.count("error:") == 1, "one message"
    assert "ray start" not in result.stdout and "ray job submit" not in result.stdout
    assert not (tmp_path / "ray_calls").exists() and not (tmp_path / "save").exists()


def test_train_names_a_checkout_that_is_neither_slime_nor_vime(trainer, tmp_path):
    (tmp_path / "other").mkdir()
    result = _train(trainer, "slime", TRAINER_ROOT=str(tmp_path / "other"))
    assert result.returncode == 2 and "has neither a slime/ nor a vime/ package folder" in result.stderr


def test_train_makes_relative_paths_absolute(trainer, tmp_path):
    flags = " ".join(
        _submitted(_train(trainer, "slime", cwd=tmp_path, TRAIN_DATA="train.jsonl", SAVE_PATH="save").stdout)
    )
    assert f"--prompt-data {tmp_path}/train.jsonl" in flags and f"--save {tmp_path}/save" in flags


def test_train_keeps_rays_socket_paths_short(trainer, tmp_path):
    deep = str(tmp_path / ("x" * 60))
    result = _train(trainer, "slime", SAVE_PATH=deep, TMPDIR="/tmp", RAY_PORT="6390")
    head = next(shlex.split(line) for line in result.stdout.splitlines() if line.startswith("setsid ray start"))
    assert head[head.index("--temp-dir") + 1] == f"/tmp/ray_mem_agent_{os.getuid()}_6390"
    result = _train(trainer, "slime", RAY_TEMP_DIR=deep)
    assert result.returncode == 2 and f"RAY_TEMP_DIR={deep} is longer than 40 characters" in result.stderr


def test_train_multi_node_needs_a_reachable_master_address(trainer):
    result = _train(trainer, "slime", NNODES="2")
    assert result.returncode == 2 and "NNODES=2 needs MASTER_ADDR" in result.stderr
    result = _train(trainer, "slime", NNODES="2", MASTER_ADDR="10.0.0.1")
    assert result.returncode == 0, result.stderr
    assert "MASTER_ADDR=10.0.0.1 RAY_PORT=6379 GPUS_PER_NODE=8 JOIN=1 bash" in result.stdout
    assert "--actor-num-nodes 2" in " ".join(_submitted(result.stdout))


def test_train_on_an_existing_cluster_does_not_start_ray(trainer):
    result = _train(trainer, "vime", USE_EXISTING_RAY="1", RAY_JOB_ADDRESS="http://10.0.0.1:8265")
    assert result.returncode == 0, result.stderr
    assert "ray start" not in result.stdout
    argv = _submitted(result.stdout)
    assert argv[argv.index("--address") + 1] == "http://10.0.0.1:8265"


def test_train_join_mode_joins_the_head_and_needs_its_address(trainer):
    result = _train(trainer, "slime", JOIN="1", MASTER_ADDR="10.0.0.1", GPUS_PER_NODE="4")
    assert result.returncode == 0, result.stderr
    assert "ray start --address 10.0.0.1:6379 --num-gpus 4 --disable-usage-stats --block" in result.stdout
    result = _train(trainer, "slime", JOIN="1")
    assert result.returncode == 2 and "JOIN=1 needs MASTER_ADDR" in result.stderr


# ---- the live path, with a stand-in `ray` --------------------------------------------------------


@dataclass
class LiveRay:
    env: dict[str, str]  # the launch's settings: the fake checkouts, free Ray ports, a short Ray folder
    bin_dir: Path  # holds the stand-in `ray`
    state: Path  # where the stand-in writes the head's and its child's pids and the submitted job
    bystander: int  # a process of another session, which the stop must leave alone


@pytest.fixture
def live_ray(trainer, tmp_path) -> Iterator[LiveRay]:
    state = tmp_path / "ray_state"
    state.mkdir()
    write_live_ray(trainer.bin_dir, state)
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    ray_dir = tempfile.mkdtemp(prefix="mem_ray_")  # short: Ray's socket paths live under it
    env = trainer.env("slime") | {
        "RAY_PORT": str(free_port()),
        "RAY_DASHBOARD_PORT": str(free_port()),
        "RAY_AGENT_PORT": str(free_port()),
        "RAY_CLIENT_PORT": str(free_port()),
        "RAY_TEMP_DIR": ray_dir,
        "RAY_STOP_TIMEOUT": "2",
    }
    yield LiveRay(env, trainer.bin_dir, state, bystander.pid)
    for name in ("head", "child"):
        if (state / name).exists() and still_running(pid := int((state / name).read_text())):
            os.kill(pid, signal.SIGKILL)
    bystander.kill()
    bystander.wait()
    shutil.rmtree(ray_dir)


def _launch(live: LiveRay, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_script(TRAIN, live.env | extra, bin_dirs=[live.bin_dir], timeout=120)


def test_train_live_run_stops_only_the_ray_head_it_started(live_ray):
    """Everything in the head's session goes (SIGKILL after the grace period); other processes stay."""
    result = _launch(live_ray)
    assert result.returncode == 0, result.stdout + result.stderr
    submitted = (live_ray.state / "submitted").read_text().splitlines()
    assert submitted[:2] == ["job", "submit"] and "mem_agent.rollout.generate" in submitted
    head, child = (int((live_ray.state / name).read_text()) for name in ("head", "child"))
    assert "stopping the Ray head this script started" in result.stdout
    assert not still_running(head) and not still_running(child)
    assert still_running(live_ray.bystander), "a process outside the head's session is untouched"


def test_train_live_run_with_keep_ray_leaves_the_head_running(live_ray):
    result = _launch(live_ray, KEEP_RAY="1")
    assert result.returncode == 0, result.stdout + result.stderr
    head = int((live_ray.state / "head").read_text())
    assert still_running(head) and f"kill -TERM -- -{head}" in result.stdout


def test_train_live_run_refuses_a_port_that_is_taken(live_ray):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _launch(live_ray, RAY_PORT=str(port))
    assert result.returncode == 2 and f"port {port} (RAY_PORT) is already in use" in result.stderr
    assert not (live_ray.state / "head").exists()


def test_train_builds_the_runtime_env_before_it_starts_ray(live_ray, tmp_path):
    """A runtime env that cannot be built used to fail after the Ray head had started; now it is a
    problem of the one message, and no head is started."""
    real = shlex.quote(str(Path(sys.executable)))
    python = write_executable(
        tmp_path / "py" / "python",
        f'#!/usr/bin/env bash\n[[ "$*" != *env_vars* ]] || {{ echo "no json here" >&2; exit 1; }}\nexec {real} "$@"\n',
    )
    result = _launch(live_ray, PYTHON=str(python))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot build the job's runtime env (Python 3.11 needed): no json here" in result.stderr
    assert not (live_ray.state / "head").exists() and "starting the Ray head" not in result.stdout
