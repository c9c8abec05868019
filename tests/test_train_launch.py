"""run-qwen3-4b-train.sh: the exact job its dry run prints, what it checks, and how it stops Ray.

The training launch is checked through its dry run (the trainers need GPUs) and through its live
path with a stand-in `ray` that behaves like a head started with --block, so that the stop policy
(only the session the launch started, SIGKILL after a grace period, also when the script itself is
killed) runs for real. Every run starts from the minimal environment of support/scripts.py, with
fake checkouts beside it. Assertions are on exit codes, commands, flags, the variable a problem
names and the files written.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mem_agent.launch.recipe import recipe
from mem_agent.launch.train import checked_plan, runtime_env_json
from mem_agent.launch.train_settings import TrainSettings
from mem_agent.serving.processes import answers, free_port
from mem_agent.settings.config import MemAgentConfig
from mem_agent.templates.template_file import Assembly, MemoryText, Thinking, dump_prompt_file
from support.proc_state import still_running
from support.scripts import (
    PROJECT_ROOT,
    SCRIPTS,
    TrainerFiles,
    run_script,
    script_env,
    write_live_ray,
    write_trainer_files,
)
from support.train_launch import TRAIN, about, command, flags, problems, runtime_env, submitted, trainer_argv

SECRET = "wandb-secret-value-0123456789"
QWEN3_4B_MODEL_ARGS = (
    "--swiglu --num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728 --num-attention-heads 32 "
    "--group-query-attention --num-query-groups 8 --kv-channels 128 --use-rotary-position-embeddings "
    "--rotary-base 1000000 --disable-bias-linear --normalization RMSNorm --norm-epsilon 1e-6 "
    "--vocab-size 151936 --qk-layernorm"
)
HOOKS = {
    "--custom-generate-function-path": "mem_agent.rollout.generate",
    "--custom-rm-path": "mem_agent.rollout.reward",
    "--custom-reward-post-process-path": "mem_agent.rollout.reward_post_process",
    "--custom-convert-samples-to-train-data-path": "mem_agent.custom_convert.convert_samples_to_train_data",
    "--custom-rollout-log-function-path": "mem_agent.rollout_log.log_rollout",
    "--custom-eval-rollout-log-function-path": "mem_agent.rollout_log.log_eval_rollout",
}


@pytest.fixture
def trainer(tmp_path) -> TrainerFiles:
    return write_trainer_files(tmp_path)


def _train(trainer: TrainerFiles, host: str, *, cwd: Path = PROJECT_ROOT, **extra: str) -> subprocess.CompletedProcess:
    """A dry run (unless `extra` says DRY_RUN=0) of `host`'s launch, with a W&B key in the environment."""
    env = trainer.env(host) | {"DRY_RUN": "1", "WANDB_API_KEY": SECRET} | extra
    return run_script(TRAIN, env, cwd=cwd, bin_dirs=[trainer.bin_dir])


@pytest.mark.parametrize(
    ("host", "engine", "other"), [("slime", "--sglang-", "--vllm-"), ("vime", "--vllm-", "--sglang-")]
)
def test_train_dry_run_prints_the_memagent_grpo_job_for_each_host(trainer, host, engine, other):
    result = _train(trainer, host)
    assert result.returncode == 0, result.stderr
    job = submitted(result.stdout)
    found = flags(job)
    paths = trainer.env()
    expected = {
        **{flag: (path,) for flag, path in HOOKS.items()},
        "--input-key": ("prompt",),
        "--label-key": ("label",),
        "--metadata-key": ("metadata",),
        "--n-samples-per-prompt": ("16",),
        "--num-rollout": ("100",),
        "--rollout-batch-size": ("128",),
        "--rollout-temperature": ("1.0",),
        "--rollout-max-response-len": ("1024",),
        "--global-batch-size": ("128",),
        "--advantage-estimator": ("grpo",),
        "--use-kl-loss": (),
        "--kl-loss-coef": ("0.001",),
        "--kl-loss-type": ("low_var_kl",),
        "--entropy-coef": ("0",),
        "--eps-clip": ("0.2",),
        "--eps-clip-high": ("0.2",),
        "--lr": ("1e-6",),
        "--lr-warmup-iters": ("320",),
        "--use-dynamic-batch-size": (),
        "--max-tokens-per-gpu": ("9216",),
        "--actor-num-nodes": ("1",),
        "--actor-num-gpus-per-node": ("8",),
        "--colocate": (),
        "--rollout-num-gpus-per-engine": ("1",),
        f"{engine}server-concurrency": ("64",),
        "--hf-checkpoint": (paths["HF_CKPT"],),
        "--ref-load": (paths["TORCH_DIST"],),
        "--load": (paths["SAVE_PATH"],),
        "--save": (paths["SAVE_PATH"],),
    }
    assert {flag: found.get(flag) for flag in expected} == expected
    assert QWEN3_4B_MODEL_ARGS in " ".join(job)
    assert not [flag for flag in found if flag.startswith(other)], "only the host's own engine flags"
    assert "--untie-embeddings-and-output-weights" not in found, "Qwen3-4B ties its embeddings"
    assert "--apply-chat-template" not in found and "--use-wandb" not in found
    assert job[job.index("--") + 2] == f"{trainer.checkout(host)}/train.py"
    assert job[job.index("--address") + 1] == "http://127.0.0.1:8265"


def test_train_starts_a_loopback_ray_head(trainer):
    head = command(_train(trainer, "slime").stdout, "ray start --head")
    assert head[head.index("--dashboard-host") + 1] == "127.0.0.1"
    assert head[head.index("--node-ip-address") + 1] == "127.0.0.1"
    assert head[head.index("--temp-dir") + 1].startswith("/") and head[-1] == "--block"
    assert not trainer.ray_calls.exists(), "a dry run never calls ray"


def test_train_runtime_env_forwards_only_the_mem_settings_the_user_set(trainer):
    result = _train(trainer, "vime", MEM_CHUNK_TOKENS="4000", MEM_MODE="rememr1", MEM_SHARED_DATA="/data")
    env = runtime_env(submitted(result.stdout))
    assert {k: v for k, v in env.items() if k.startswith("MEM_")} == {"MEM_CHUNK_TOKENS": "4000", "MEM_MODE": "rememr1"}
    assert env["PYTHONPATH"].split(":") == [
        trainer.env()["MEGATRON_PATH"],
        str(trainer.checkout("vime")),
        str(SCRIPTS.parent),
    ]
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1" and env["PYTHONUNBUFFERED"] == "1"


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
    assert runtime_env(submitted(result.stdout))["MEM_PROMPTS"] == str(folder / "prompts.toml")


def test_train_forwards_every_setting_python_declares():
    """The script has no list of its own: Python's settings decide what reaches the workers."""
    fields = MemAgentConfig.model_fields.values()
    values = {f.alias: str(f.default if not isinstance(f.default, bool) else int(f.default)) for f in fields}
    values = {env: value or "/set/by/the/user" for env, value in values.items()}  # an empty value is unset
    forwarded = runtime_env_json(TrainSettings(), values | {"WANDB_API_KEY": SECRET, "MEM_SHARED_DATA": "/d"})
    env = json.loads(forwarded)["env_vars"]
    assert {k: v for k, v in env.items() if k.startswith("MEM_")} == values
    assert SECRET not in forwarded


def test_train_never_shows_the_wandb_key(trainer):
    result = _train(trainer, "slime", WANDB_PROJECT="memagent", MEM_MAX_MEMORY="512")
    assert result.returncode == 0, result.stderr
    job = submitted(result.stdout)
    found = flags(job)
    assert found["--use-wandb"] == () and found["--wandb-project"] == ("memagent",)
    assert found["--wandb-group"] == ("qwen3-4b-memagent",)
    assert "WANDB_API_KEY" not in runtime_env(job), "a runtime env is logged by Ray and visible in ps"
    assert SECRET not in result.stdout + result.stderr


def test_train_appends_extra_args_as_words_at_the_end(trainer):
    result = _train(trainer, "vime", EXTRA_ARGS="--use-tis  --tis-clip\t2", EXTRA_BACKEND_ARGS="--vllm-enforce-eager")
    assert submitted(result.stdout)[-4:] == ["--vllm-enforce-eager", "--use-tis", "--tis-clip", "2"]


def test_a_setting_that_holds_shell_syntax_reaches_the_job_as_words_and_runs_nothing(trainer, tmp_path):
    marker = tmp_path / "ran"
    hostile = f"$(touch {marker}) `touch {marker}` ;touch {marker}"
    result = _train(trainer, "slime", EXTRA_ARGS=hostile)
    assert result.returncode == 0, result.stderr
    words = hostile.split()
    assert submitted(result.stdout)[-len(words) :] == words and not marker.exists()


@pytest.mark.parametrize(
    ("name", "value"),
    [("EXTRA_ARGS", "--use-tis\n--tis-clip 2"), ("EXTRA_BACKEND_ARGS", "--a\r--b"), ("TEMPERATURE", "1e999")],
    ids=["newline", "carriage-return", "infinite"],
)
def test_train_refuses_a_value_that_would_be_cut_or_is_not_finite(trainer, name, value):
    """A line break would silently drop what follows it from the job; 1e999 is infinity."""
    lines = problems(_train(trainer, "slime", **{name: value}))
    assert len(about(lines, name)) == 1, lines


def test_train_host_trainer_overrides_what_the_checkout_holds(trainer):
    found = flags(submitted(_train(trainer, "slime", HOST_TRAINER="vime").stdout))
    assert "--vllm-gpu-memory-utilization" in found and not [f for f in found if f.startswith("--sglang-")]


def test_train_async_mode_splits_the_gpus_and_does_not_colocate(trainer):
    (trainer.checkout("slime") / "train_async.py").write_text("")
    job = submitted(_train(trainer, "slime", ASYNC="1").stdout)
    found = flags(job)
    assert job[job.index("--") + 2].endswith("/train_async.py") and "--colocate" not in found
    assert found["--actor-num-gpus-per-node"] == ("4",) and found["--rollout-num-gpus"] == ("4",)


def test_train_eval_during_training_only_when_eval_data_is_set(trainer, tmp_path):
    assert "--eval-interval" not in flags(submitted(_train(trainer, "slime").stdout))
    (tmp_path / "eval.jsonl").write_text("{}\n")
    found = flags(submitted(_train(trainer, "slime", EVAL_DATA=str(tmp_path / "eval.jsonl")).stdout))
    assert found["--eval-prompt-data"] == ("hotpotqa", f"{tmp_path}/eval.jsonl")
    assert found["--eval-interval"] == ("20",) and found["--n-samples-per-eval-prompt"] == ("1",)
    assert found["--eval-temperature"] == ("0.7",) and found["--eval-top-p"] == ("0.95",)


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
    lines = problems(result)
    assert len(lines) == 5, lines
    for prefix in (
        f"HF_CKPT={tmp_path}/nope",
        f"TRAIN_DATA={tmp_path}/none.jsonl",
        "MEM_CHUNK_TOKENS=0",
        "MEM_MAX_FINAL=-1",
        "NNODES=two",
    ):
        assert [line for line in lines if line.startswith(prefix)], prefix
    assert not (tmp_path / "ray_calls").exists() and not (tmp_path / "save").exists()


def test_train_names_a_checkout_that_is_neither_slime_nor_vime(trainer, tmp_path):
    (tmp_path / "other").mkdir()
    lines = problems(_train(trainer, "slime", TRAINER_ROOT=str(tmp_path / "other")))
    assert about(lines, "TRAINER_ROOT") and about(lines, "TRAINER_ROOT")[0].startswith(f"TRAINER_ROOT={tmp_path}/other")


def test_train_makes_relative_paths_absolute(trainer, tmp_path):
    found = flags(submitted(_train(trainer, "slime", cwd=tmp_path, TRAIN_DATA="train.jsonl", SAVE_PATH="save").stdout))
    assert found["--prompt-data"] == (f"{tmp_path}/train.jsonl",) and found["--save"] == (f"{tmp_path}/save",)


def test_train_keeps_rays_socket_paths_short(trainer, tmp_path):
    deep = str(tmp_path / ("x" * 60))
    head = command(_train(trainer, "slime", SAVE_PATH=deep, TMPDIR="/tmp", RAY_PORT="6390").stdout, "ray start --head")
    assert head[head.index("--temp-dir") + 1] == f"/tmp/ray_mem_agent_{os.getuid()}_6390"
    lines = problems(_train(trainer, "slime", RAY_TEMP_DIR=deep))
    assert [line for line in lines if line.startswith(f"RAY_TEMP_DIR={deep} ")], lines


def test_train_multi_node_needs_a_reachable_master_address(trainer):
    lines = problems(_train(trainer, "slime", NNODES="2"))
    assert len(lines) == 1 and "NNODES=2" in lines[0] and "MASTER_ADDR" in lines[0]
    result = _train(trainer, "slime", NNODES="2", MASTER_ADDR="10.0.0.1")
    assert result.returncode == 0, result.stderr
    join = f"MASTER_ADDR=10.0.0.1 RAY_PORT=6379 GPUS_PER_NODE=8 JOIN=1 bash {TRAIN}"
    assert join in result.stderr, "the command to run on the other node"
    assert flags(submitted(result.stdout))["--actor-num-nodes"] == ("2",)
    head = command(result.stdout, "ray start --head")
    assert head[head.index("--node-ip-address") + 1] == "10.0.0.1"


def test_train_on_an_existing_cluster_does_not_start_ray(trainer):
    result = _train(trainer, "vime", USE_EXISTING_RAY="1", RAY_JOB_ADDRESS="http://10.0.0.1:8265")
    assert result.returncode == 0, result.stderr
    assert "ray start" not in result.stdout
    job = submitted(result.stdout)
    assert job[job.index("--address") + 1] == "http://10.0.0.1:8265"


def test_train_join_mode_joins_the_head_and_needs_its_address(trainer):
    result = _train(trainer, "slime", JOIN="1", MASTER_ADDR="10.0.0.1", GPUS_PER_NODE="4")
    assert result.returncode == 0, result.stderr
    assert command(result.stdout, "ray start") == [
        *"ray start --address 10.0.0.1:6379 --num-gpus 4 --disable-usage-stats --block".split()
    ]
    assert "ray job submit" not in result.stdout
    lines = problems(_train(trainer, "slime", JOIN="1"))
    assert len(lines) == 1 and "MASTER_ADDR" in lines[0]


def test_the_recipes_groups_are_the_job_word_for_word_each_group_of_one_owner(trainer):
    """The groups the preflight parses (launch/recipe.py, in-process) are the job's flags in its
    order, each group's flags of one parser; the user's words are the `user` groups', as given."""
    extra = {"EXTRA_ARGS": "--use-tis --tis-clip 2", "EXTRA_BACKEND_ARGS": "--vllm-enforce-eager"}
    dry = _train(trainer, "vime", **extra)
    assert dry.returncode == 0, dry.stderr
    plan = checked_plan(trainer.env("vime") | {"DRY_RUN": "1"} | extra, out=io.StringIO())
    groups = recipe(plan)
    assert plan.entry == trainer.checkout("vime") / "train.py"
    assert {group.owner for group in groups} == {"megatron", "host", "user"}
    assert [word for group in groups for word in group.words] == trainer_argv(submitted(dry.stdout))
    owners = {flag: group.owner for group in groups for flag in group.flags()}
    assert owners["--load"] == owners["--save"] == owners["--save-interval"] == "megatron"
    assert owners["--hf-checkpoint"] == owners["--ref-load"] == "host"
    assert owners["--use-tis"] == owners["--vllm-enforce-eager"] == "user"
    assert owners["--vllm-gpu-memory-utilization"] == "host" and owners["--tensor-model-parallel-size"] == "megatron"
    assert [list(group.words) for group in groups if group.owner == "user"] == [
        ["--vllm-enforce-eager"],
        ["--use-tis", "--tis-clip", "2"],
    ]


# ---- the live path, with a stand-in `ray` --------------------------------------------------------


@dataclass
class LiveRay:
    env: dict[str, str]  # the launch's settings: the fake checkouts, free Ray ports, a short Ray folder
    bin_dir: Path  # holds the stand-in `ray`
    state: Path  # where the stand-in writes the head's and its child's pids and the submitted job
    bystander: int  # a process of another session, which the stop must leave alone

    def pid(self, name: str) -> int:
        return int((self.state / name).read_text().split()[0])


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
    for name in ("head", "child", "submissions"):
        if (state / name).exists() and still_running(pid := int((state / name).read_text().split()[0])):
            if os.getpgid(pid) == pid:  # a head left running (KEEP_RAY=1): its group holds the job API's server
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    bystander.kill()
    bystander.wait()
    shutil.rmtree(ray_dir)


def _launch(live: LiveRay, **extra: str) -> subprocess.CompletedProcess[str]:
    return run_script(TRAIN, live.env | extra, bin_dirs=[live.bin_dir], timeout=120)


def _wait_for(path: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _wait_for_url(url: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not answers(url):
        assert time.monotonic() < deadline, f"{url} never answered"
        time.sleep(0.05)


def _gone_within(pids: list[int], timeout_s: float) -> float:
    started = time.monotonic()
    while any(still_running(pid) for pid in pids):
        assert time.monotonic() - started < timeout_s, [pid for pid in pids if still_running(pid)]
        time.sleep(0.05)
    return time.monotonic() - started


def test_train_live_run_stops_only_the_ray_head_it_started(live_ray):
    """Everything in the head's session goes (SIGKILL after the grace period); other processes stay."""
    result = _launch(live_ray)
    assert result.returncode == 0, result.stdout + result.stderr
    job = (live_ray.state / "submitted").read_text().splitlines()
    assert job[:2] == ["job", "submit"] and "mem_agent.rollout.generate" in job
    assert not still_running(live_ray.pid("head")) and not still_running(live_ray.pid("child"))
    assert still_running(live_ray.bystander), "a process outside the head's session is untouched"
    assert (Path(live_ray.env["SAVE_PATH"]) / "ray_head.log").is_file()


def test_train_live_run_with_keep_ray_leaves_the_head_running(live_ray):
    result = _launch(live_ray, KEEP_RAY="1")
    assert result.returncode == 0, result.stdout + result.stderr
    head = live_ray.pid("head")
    assert still_running(head) and f"kill -TERM -- -{head}" in result.stderr


def test_train_live_run_refuses_a_port_that_is_taken(live_ray):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        lines = problems(_launch(live_ray, RAY_PORT=str(port)))
    assert [line for line in lines if str(port) in line and "RAY_PORT" in line], lines
    assert not (live_ray.state / "head").exists()


def test_train_decides_everything_before_it_starts_ray(live_ray):
    """A bad agent setting is a problem of the one message: no head is started, nothing submitted."""
    lines = problems(_launch(live_ray, MEM_CHUNK_TOKENS="0"))
    assert about(lines, "MEM_CHUNK_TOKENS") and not list(live_ray.state.iterdir())


def test_train_on_an_existing_cluster_needs_its_job_api_and_starts_no_head(live_ray):
    env = {name: value for name, value in live_ray.env.items() if not name.startswith("RAY_")}
    address = f"http://127.0.0.1:{free_port()}"
    absent = run_script(TRAIN, env | {"USE_EXISTING_RAY": "1", "RAY_JOB_ADDRESS": address}, bin_dirs=[live_ray.bin_dir])
    assert [line for line in problems(absent) if f"RAY_JOB_ADDRESS={address}" in line]
    api = live_ray.state.parent / "cluster_api"
    (api / "api").mkdir(parents=True)
    (api / "api" / "version").write_text('{"ray_version": "stand-in"}')
    port = address.rsplit(":", 1)[1]
    cluster = subprocess.Popen(  # a running cluster's job API: GET /api/version answers
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(api), port],
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_url(f"{address}/api/version")
        result = run_script(
            TRAIN, env | {"USE_EXISTING_RAY": "1", "RAY_JOB_ADDRESS": address}, bin_dirs=[live_ray.bin_dir]
        )
    finally:
        cluster.kill()
        cluster.wait()
    assert result.returncode == 0, result.stderr
    assert (live_ray.state / "submitted").is_file() and not (live_ray.state / "head").exists()


@pytest.mark.parametrize("fault", ["head_fails", "no_api", "linked_log"])
def test_a_head_that_cannot_serve_jobs_fails_the_launch_and_leaves_nothing(live_ray, fault, tmp_path):
    """A head that exits at once, or whose job API never answers (RAY_START_TIMEOUT=1), is exit 1; a
    head log that is a link is refused (exit 2) before anything starts; nothing is submitted, and
    nothing of the head's session (its child ignores SIGTERM) outlives the launch."""
    log = Path(live_ray.env["SAVE_PATH"]) / "ray_head.log"
    if fault == "linked_log":
        log.parent.mkdir(parents=True)
        log.symlink_to(tmp_path / "elsewhere.log")
    else:
        (live_ray.state / fault).touch()
    result = _launch(live_ray, RAY_START_TIMEOUT="1")
    assert result.returncode == (2 if fault == "linked_log" else 1), result.stderr
    assert not (live_ray.state / "submitted").exists() and not (tmp_path / "elsewhere.log").exists()
    if fault != "linked_log":
        assert str(log) in result.stderr
        assert not still_running(live_ray.pid("head")) and not still_running(live_ray.pid("child"))


def test_train_submits_again_only_while_the_job_was_never_created(live_ray):
    """A fresh head's "No available agent" is retried; a job that ran and failed is not."""
    (live_ray.state / "no_agent").touch()
    retried = _launch(live_ray)
    assert retried.returncode == 0, retried.stderr
    assert len((live_ray.state / "submissions").read_text().split()) == 2
    (live_ray.state / "submissions").unlink()
    (live_ray.state / "job_fails").touch()
    failed = _launch(live_ray)
    assert failed.returncode == 1 and failed.stderr.count("error:") == 1, failed.stderr
    assert len((live_ray.state / "submissions").read_text().split()) == 1
    assert f"ray job logs --address http://127.0.0.1:{live_ray.env['RAY_DASHBOARD_PORT']}" in failed.stderr
    assert not still_running(live_ray.pid("head")) and not still_running(live_ray.pid("child"))


@pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["kill-9", "sigterm", "ctrl-c"])
def test_killing_the_script_stops_the_head_it_started(live_ray, number, measured):
    """SIGKILL cannot be trapped: the head's tether sees the script go and stops the head's session
    (its child ignores SIGTERM, so it gets SIGKILL after RAY_STOP_TIMEOUT=2 s); the job's client's
    tether stops it too."""
    (live_ray.state / "hold").touch()
    env = script_env(live_ray.env, bin_dirs=[live_ray.bin_dir])
    script = subprocess.Popen(
        ["bash", str(TRAIN)],
        env=env,
        cwd=PROJECT_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(live_ray.state / "submissions")
    watched = [live_ray.pid("head"), live_ray.pid("child"), live_ray.pid("submissions")]
    os.kill(script.pid, number)
    status = script.wait(timeout=30)
    seconds = _gone_within(watched, 30)
    assert still_running(live_ray.bystander)
    assert status == -number or status == 128 + number, status
    measured(f"train launch: head gone {seconds:.1f} s after the script's {signal.Signals(number).name}")
    assert seconds < 2 + 10, "within the grace period plus the tether's poll and SIGKILL's wait"


def test_train_help_lists_every_setting():
    result = run_script(TRAIN, {}, "--help", timeout=60)
    assert result.returncode == 0, result.stderr
    rows = [line.replace(",", "").split() for line in result.stdout.splitlines() if line.startswith("  --")]
    listed = {row[1].removesuffix("=1") for row in rows}  # `--flag VARIABLE`, a switch's `--flag, VARIABLE=1`
    assert {info.alias for info in TrainSettings.model_fields.values()} <= listed


def test_train_takes_each_setting_as_a_flag_too(trainer):
    """`bash run-qwen3-4b-train.sh --dry-run` is DRY_RUN=1: the same job, printed."""
    env = trainer.env("slime") | {"WANDB_API_KEY": SECRET, "SUBMISSION_ID": "one"}
    flagged = run_script(TRAIN, env, "--dry-run", bin_dirs=[trainer.bin_dir])
    assert flagged.returncode == 0, flagged.stderr
    assert submitted(flagged.stdout) == submitted(_train(trainer, "slime", SUBMISSION_ID="one").stdout)


def test_train_refuses_a_mem_variable_that_is_not_a_setting(trainer):
    assert about(problems(_train(trainer, "slime", MEM_CHUNK_SIZE="4000")), "MEM_CHUNK_SIZE")
