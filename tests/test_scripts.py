"""The shell scripts: shellcheck clean, --help, and the exact commands their dry runs print.

The training launch is checked through its dry run (the trainers need GPUs) and through its live
path with a stand-in `ray` that behaves like a head started with --block, so that the stop policy
(only the session this script started, SIGKILL after a grace period) runs for real.
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
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import PROJECT_ROOT

from mem_agent.config import SETTINGS
from mem_agent.processes import free_port
from mem_agent.prompt_file import Assembly, MemoryText, Thinking, dump_prompt_file

SCRIPTS = PROJECT_ROOT / "examples" / "mem_agent"
ALL_SHELL = sorted([*SCRIPTS.glob("*.sh"), *(PROJECT_ROOT / "scripts").glob("*.sh"), PROJECT_ROOT / ".ci" / "run"])
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
)
# Inherited variables that would change what a script does or prints.
_SCRUBBED = ("WANDB_", "HF_TOKEN", "HF_ENDPOINT", "HOST_TRAINER", "TRAINER_ROOT", "SAVE_PATH", "DRY_RUN", "RAY_")


def _run(
    script: Path, env: dict[str, str], *args: str, cwd: Path = PROJECT_ROOT, timeout: float = 600
) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEM_", *_SCRUBBED))}
    full_env.update({"PYTHON": sys.executable, **env})
    return subprocess.run(
        ["bash", str(script), *args], env=full_env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def _shellcheck() -> str:
    beside = Path(sys.executable).with_name("shellcheck")
    return str(beside) if beside.exists() else "shellcheck"


# ---- every script -------------------------------------------------------------------------------


def test_every_shell_script_is_shellcheck_clean():
    result = subprocess.run(
        [_shellcheck(), "-x", *map(str, ALL_SHELL)], capture_output=True, text=True, cwd=PROJECT_ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("script", [s for s in ALL_SHELL if s.name != "_common.sh"], ids=lambda s: s.name)
def test_every_script_stops_on_errors(script):
    assert "set -euo pipefail" in script.read_text()


@pytest.mark.parametrize("script", sorted(SCRIPTS.glob("*.sh")), ids=lambda s: s.name)
def test_scripts_are_executable_and_the_sourced_common_file_is_not(script):
    assert os.access(script, os.X_OK) == (script.name != "_common.sh")


@pytest.mark.parametrize(
    "script", [s for s in ALL_SHELL if s.suffix == ".sh" and s.name != "_common.sh"], ids=lambda s: s.name
)
def test_every_script_explains_itself(script):
    result = _run(script, {}, "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage:"), result.stderr


@pytest.mark.parametrize(
    "script",
    [s for s in ALL_SHELL if s.suffix == ".sh" and s.name not in ("_common.sh", "test.sh")],  # test.sh: pytest's
    ids=lambda s: s.name,
)
def test_an_unknown_argument_is_a_usage_error_that_starts_nothing(script):
    result = _run(script, {"DRY_RUN": "1"}, "--no-such-flag")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--no-such-flag" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_no_script_stops_processes_by_name_or_hard_codes_root():
    """`pkill`, `killall` and `ray stop` hit other users' processes; /root is one machine's layout."""
    for script in SCRIPTS.glob("*.sh"):
        code = "\n".join(line for line in script.read_text().splitlines() if not line.lstrip().startswith("#"))
        for forbidden in ("pkill", "killall", "ray stop", "/root"):
            assert forbidden not in code, f"{script.name}: {forbidden}"


# ---- run-qwen3-4b-train.sh ------------------------------------------------------------------------


@pytest.fixture
def trainer(tmp_path) -> dict[str, str]:
    """Fake slime and vime checkouts, checkpoints and data, and a `ray` that logs its calls."""
    paths = {}
    for name in ("slime", "vime"):
        root = tmp_path / name / "trainer"
        (root / name).mkdir(parents=True)
        (root / "train.py").write_text("")
        (root / "tools").mkdir()
        (root / "tools" / "convert_torch_dist_to_hf.py").write_text("")
        paths[name] = str(root)
    (tmp_path / "Megatron-LM").mkdir()
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps({"vocab_size": 151936}))
    (tmp_path / "dist").mkdir()
    (tmp_path / "train.jsonl").write_text("{}\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ray").write_text(f'#!/usr/bin/env bash\necho "$*" >> {tmp_path}/ray_calls\nexit 1\n')
    (bin_dir / "ray").chmod(0o755)
    return {
        **paths,
        "MEGATRON_PATH": str(tmp_path / "Megatron-LM"),
        "HF_CKPT": str(tmp_path / "hf"),
        "TORCH_DIST": str(tmp_path / "dist"),
        "TRAIN_DATA": str(tmp_path / "train.jsonl"),
        "SAVE_PATH": str(tmp_path / "save"),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }


def _train(trainer: dict[str, str], host: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in trainer.items() if k not in ("slime", "vime")}
    env.update({"TRAINER_ROOT": trainer[host], "DRY_RUN": "1", "WANDB_API_KEY": SECRET} | extra)
    return _run(SCRIPTS / "run-qwen3-4b-train.sh", env)


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
        f"--hf-checkpoint {trainer['HF_CKPT']} --ref-load {trainer['TORCH_DIST']}",
        f"--load {trainer['SAVE_PATH']} --save {trainer['SAVE_PATH']}",
    ):
        assert expected in flags, expected
    assert other_prefix not in flags, "only the host's own backend flags"
    assert "--untie-embeddings-and-output-weights" not in flags, "Qwen3-4B ties its embeddings"
    assert "--apply-chat-template" not in flags and "--use-wandb" not in flags
    assert argv[argv.index("--") + 2] == f"{trainer[host]}/train.py"
    assert argv[argv.index("--address") + 1] == "http://127.0.0.1:8265"
    assert f"host trainer: {host}" in result.stdout


def test_train_starts_a_loopback_ray_head_in_its_own_session(trainer):
    result = _train(trainer, "slime")
    head = next(shlex.split(line) for line in result.stdout.splitlines() if line.startswith("setsid ray start"))
    assert head[head.index("--dashboard-host") + 1] == "127.0.0.1"
    assert head[head.index("--node-ip-address") + 1] == "127.0.0.1"
    assert head[head.index("--temp-dir") + 1].startswith("/") and "--block" in head
    assert not (Path(trainer["SAVE_PATH"]).parent / "ray_calls").exists(), "a dry run never calls ray"


def test_train_runtime_env_forwards_only_the_mem_settings_the_user_set(trainer):
    result = _train(trainer, "vime", MEM_CHUNK_TOKENS="4000", MEM_MODE="rememr1", MEM_SHARED_DATA="/data")
    env = _runtime_env(_submitted(result.stdout))
    assert {k: v for k, v in env.items() if k.startswith("MEM_")} == {"MEM_CHUNK_TOKENS": "4000", "MEM_MODE": "rememr1"}
    assert env["PYTHONPATH"].split(":") == [trainer["MEGATRON_PATH"], trainer["vime"], str(SCRIPTS.parent)]
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
    env = {k: v for k, v in trainer.items() if k not in ("slime", "vime")}
    env |= {"TRAINER_ROOT": trainer["slime"], "DRY_RUN": "1", "MEM_PROMPTS": "prompts.toml"}
    result = _run(SCRIPTS / "run-qwen3-4b-train.sh", env, cwd=folder)
    assert result.returncode == 0, result.stderr
    assert _runtime_env(_submitted(result.stdout))["MEM_PROMPTS"] == str(folder / "prompts.toml")


def test_train_forwards_every_setting_python_declares():
    """The shell has no list of its own: Python's SETTINGS decide what reaches the workers."""
    values = {s.env: str(s.default if not isinstance(s.default, bool) else int(s.default)) for s in SETTINGS}
    values = {env: value or "/set/by/the/user" for env, value in values.items()}  # an empty value is unset
    script = f"source {shlex.quote(str(SCRIPTS / '_common.sh'))}; mem_env_json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEM_")} | values | {"PYTHON": sys.executable}
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    forwarded = json.loads(out)["env_vars"]
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
    (Path(trainer["slime"]) / "train_async.py").write_text("")
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
    result = _train({**trainer, "slime": str(tmp_path / "other")}, "slime")
    assert result.returncode == 2 and "has neither a slime/ nor a vime/ package folder" in result.stderr


def test_train_makes_relative_paths_absolute(trainer, tmp_path):
    env = {k: v for k, v in trainer.items() if k not in ("slime", "vime")}
    env.update(TRAINER_ROOT=trainer["slime"], DRY_RUN="1", TRAIN_DATA="train.jsonl", SAVE_PATH="save")
    flags = " ".join(_submitted(_run(SCRIPTS / "run-qwen3-4b-train.sh", env, cwd=tmp_path).stdout))
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


_LIVE_RAY = """#!/usr/bin/env bash
# Stand-in for `ray`: `start --head --block` stays in the foreground with a child that ignores
# SIGTERM (like a stuck raylet); `job list` answers once the head is up; `job submit` logs its argv.
state={state}
case "$1 $2" in
  "start --head")
    echo $$ > "$state/head"
    bash -c 'trap "" TERM; exec sleep 600' &
    echo $! > "$state/child"
    touch "$state/up"
    wait
    ;;
  "job list") [[ -e "$state/up" ]] ;;
  "job submit") printf '%s\\n' "$@" > "$state/submitted" ;;
  *) exit 1 ;;
esac
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


@pytest.fixture
def live_trainer(trainer, tmp_path) -> Iterator[dict[str, str]]:
    state = tmp_path / "ray_state"
    state.mkdir()
    ray = Path(trainer["PATH"].split(":")[0]) / "ray"
    ray.write_text(_LIVE_RAY.format(state=shlex.quote(str(state))))
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    ray_dir = tempfile.mkdtemp(prefix="mem_ray_")  # short: Ray's socket paths live under it
    env = {k: v for k, v in trainer.items() if k not in ("slime", "vime")}
    env.update(
        TRAINER_ROOT=trainer["slime"],
        RAY_PORT=str(free_port()),
        RAY_DASHBOARD_PORT=str(free_port()),
        RAY_AGENT_PORT=str(free_port()),
        RAY_CLIENT_PORT=str(free_port()),
        RAY_TEMP_DIR=ray_dir,
        RAY_STOP_TIMEOUT="2",
        STATE=str(state),
        BYSTANDER=str(bystander.pid),
    )
    yield env
    for name in ("head", "child"):
        if (state / name).exists() and _alive(pid := int((state / name).read_text())):
            os.kill(pid, signal.SIGKILL)
    bystander.kill()
    bystander.wait()
    shutil.rmtree(ray_dir)


def test_train_live_run_stops_only_the_ray_head_it_started(live_trainer):
    """Everything in the head's session goes (SIGKILL after the grace period); other processes stay."""
    result = _run(SCRIPTS / "run-qwen3-4b-train.sh", live_trainer, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    state = Path(live_trainer["STATE"])
    submitted = (state / "submitted").read_text().splitlines()
    assert submitted[:2] == ["job", "submit"] and "mem_agent.rollout.generate" in submitted
    head, child = (int((state / name).read_text()) for name in ("head", "child"))
    assert "stopping the Ray head this script started" in result.stdout
    assert not _alive(head) and not _alive(child)
    assert _alive(int(live_trainer["BYSTANDER"])), "a process outside the head's session is untouched"


def test_train_live_run_with_keep_ray_leaves_the_head_running(live_trainer):
    result = _run(SCRIPTS / "run-qwen3-4b-train.sh", {**live_trainer, "KEEP_RAY": "1"}, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    head = int((Path(live_trainer["STATE"]) / "head").read_text())
    assert _alive(head) and f"kill -TERM -- -{head}" in result.stdout


def test_train_live_run_refuses_a_port_that_is_taken(live_trainer):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _run(SCRIPTS / "run-qwen3-4b-train.sh", {**live_trainer, "RAY_PORT": str(port)}, timeout=120)
    assert result.returncode == 2 and f"port {port} (RAY_PORT) is already in use" in result.stderr
    assert not (Path(live_trainer["STATE"]) / "head").exists()


# ---- convert-to-hf.sh -----------------------------------------------------------------------------


@pytest.fixture
def checkpoints(trainer, tmp_path) -> dict[str, str]:
    save = Path(trainer["SAVE_PATH"])
    for iteration in ("iter_0000049", "iter_0000099"):
        (save / iteration).mkdir(parents=True)
    (tmp_path / "hf_out" / "iter_0000049").mkdir(parents=True)
    (tmp_path / "hf_out" / "iter_0000049" / "config.json").write_text("{}")
    env = {k: v for k, v in trainer.items() if k not in ("slime", "vime")}
    return {**env, "TRAINER_ROOT": trainer["slime"], "OUT_ROOT": str(tmp_path / "hf_out"), "DRY_RUN": "1"}


def _conversions(stdout: str) -> list[list[str]]:
    return [shlex.split(line) for line in stdout.splitlines() if "convert_torch_dist_to_hf.py" in line]


def test_convert_skips_what_is_converted_and_converts_the_rest(checkpoints):
    result = _run(SCRIPTS / "convert-to-hf.sh", checkpoints)
    assert result.returncode == 0, result.stderr
    assert "skip iter_0000049" in result.stdout and "would convert 1, skipped 1" in result.stdout
    (argv,) = _conversions(result.stdout)
    flags = " ".join(argv)
    assert argv[:2] == ["env", f"PYTHONPATH={checkpoints['MEGATRON_PATH']}:{checkpoints['TRAINER_ROOT']}"]
    assert f"--input-dir {checkpoints['SAVE_PATH']}/iter_0000099" in flags
    assert f"--output-dir {checkpoints['OUT_ROOT']}/iter_0000099 --origin-hf-dir {checkpoints['HF_CKPT']}" in flags
    assert "--vocab-size 151936" in flags, "Megatron's vocabulary padding is cut back to the model's"
    assert "--force" not in argv


def test_convert_redoes_an_interrupted_conversion_with_force(checkpoints):
    (Path(checkpoints["OUT_ROOT"]) / "iter_0000099").mkdir()
    result = _run(SCRIPTS / "convert-to-hf.sh", checkpoints)
    assert "redo iter_0000099" in result.stdout and _conversions(result.stdout)[0][-1] == "--force"


def test_convert_writes_next_to_the_save_folder_by_default(checkpoints):
    env = {k: v for k, v in checkpoints.items() if k != "OUT_ROOT"}
    (argv,) = _conversions(_run(SCRIPTS / "convert-to-hf.sh", {**env, "SINGLE_ITER": "49"}).stdout)
    assert argv[argv.index("--output-dir") + 1] == f"{checkpoints['SAVE_PATH']}_hf/iter_0000049"


@pytest.mark.parametrize("single", ["99", "iter_0000099", "0099"])
def test_convert_a_single_iteration_by_number_or_name(checkpoints, single):
    result = _run(SCRIPTS / "convert-to-hf.sh", {**checkpoints, "SINGLE_ITER": single})
    assert result.returncode == 0 and "would convert 1, skipped 0" in result.stdout
    (argv,) = _conversions(result.stdout)
    assert argv[argv.index("--input-dir") + 1] == f"{checkpoints['SAVE_PATH']}/iter_0000099"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"SINGLE_ITER": "7", "DRY_RUN": "0"}, "iter_0000007 not found"),
        ({"SINGLE_ITER": "x7"}, "SINGLE_ITER=x7 must be a number like 99 or iter_0000099"),
        ({"HF_CKPT": "/nonexistent", "DRY_RUN": "0"}, "HF_CKPT=/nonexistent: original Hugging Face model not found"),
        ({"VOCAB_SIZE": "big"}, "VOCAB_SIZE=big must be a positive integer"),
    ],
)
def test_convert_input_mistakes_are_clear_errors(checkpoints, change, message):
    result = _run(SCRIPTS / "convert-to-hf.sh", {**checkpoints, **change})
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not _conversions(result.stdout)


def test_convert_without_checkpoints_or_model_lists_both_problems(checkpoints, tmp_path):
    empty = tmp_path / "empty_save"
    empty.mkdir()
    env = {**checkpoints, "SAVE_PATH": str(empty), "HF_CKPT": "/nonexistent", "DRY_RUN": "0"}
    result = _run(SCRIPTS / "convert-to-hf.sh", env)
    assert result.returncode == 2 and "2 problem(s)" in result.stderr
    assert f"SAVE_PATH={empty} has no iter_* checkpoint folders" in result.stderr and "HF_CKPT=" in result.stderr


def test_convert_needs_the_trainers_converter(checkpoints, tmp_path):
    (tmp_path / "bare").mkdir()
    result = _run(SCRIPTS / "convert-to-hf.sh", {**checkpoints, "TRAINER_ROOT": str(tmp_path / "bare"), "DRY_RUN": "0"})
    assert result.returncode == 2 and "tools/convert_torch_dist_to_hf.py not found" in result.stderr


# ---- prepare-eval-data.sh -------------------------------------------------------------------------


def _status_table(stdout: str) -> dict[str, list[str]]:
    """The script's closing table: length -> its cells."""
    lines = stdout.splitlines()
    header = max(i for i, line in enumerate(lines) if line.split("|")[0].strip() == "length")
    return {line.split("|")[0].strip(): [cell.strip() for cell in line.split("|")] for line in lines[header + 1 :]}


def _eval_items(count: int) -> str:
    return json.dumps(
        [{"context": "c", "input": "q", "answers": ["a"], "num_docs": 2, "index": i} for i in range(count)]
    )


def test_prepare_eval_data_reports_present_missing_and_invalid_files(tmp_path):
    root = tmp_path / "ruler"
    root.mkdir()
    (root / "eval_50.json").write_text(_eval_items(3))
    (root / "eval_100.json").write_text('[{"context": "c"}]')
    (root / "eval_400.json").write_text("[]")
    result = _run(SCRIPTS / "prepare-eval-data.sh", {"DATA_ROOT": str(root), "LENGTH": "50 100 200 400"})
    assert result.returncode == 1
    table = _status_table(result.stdout)
    assert table["50"][1:3] == ["present", "3"] and table["50"][3].endswith("B")
    assert table["100"][1] == "invalid" and table["200"][1:4] == ["missing", "-", "-"]
    assert table["400"][1] == "invalid"
    assert "missing field(s) input, answers" in result.stderr and "no items" in result.stderr
    assert "--build-from" in result.stderr and "move it aside" in result.stderr
    assert (root / "eval_100.json").exists(), "an invalid file is never deleted"


def test_prepare_eval_data_succeeds_when_every_length_is_present(tmp_path):
    for n in (50, 100):
        (tmp_path / f"eval_{n}.json").write_text(_eval_items(2))
    result = _run(SCRIPTS / "prepare-eval-data.sh", {"DATA_ROOT": str(tmp_path), "LENGTH": "50 100"})
    assert result.returncode == 0, result.stderr
    assert [row[1] for row in _status_table(result.stdout).values()] == ["present", "present"]


def test_prepare_eval_data_builds_missing_files_from_raw_rows(tmp_path, synthetic_file):
    env = {"DATA_ROOT": str(tmp_path / "ruler"), "LENGTH": "20 40", "NUM_QUESTIONS": "4"}
    result = _run(SCRIPTS / "prepare-eval-data.sh", env, "--build-from", str(synthetic_file))
    assert result.returncode == 0, result.stderr
    table = _status_table(result.stdout)
    assert table["20"][1:3] == ["built", "4"] and table["40"][1:3] == ["built", "4"]


def test_prepare_eval_data_build_dry_run_builds_only_the_missing_lengths(tmp_path):
    (tmp_path / "eval_50.json").write_text(_eval_items(1))
    raw = tmp_path / "raw.json"
    raw.write_text("[]")
    env = {"DATA_ROOT": str(tmp_path), "LENGTH": "50 100 200", "DRY_RUN": "1"}
    result = _run(SCRIPTS / "prepare-eval-data.sh", env, "--build-from", str(raw))
    (line,) = [line for line in result.stdout.splitlines() if "mem_agent.build_long_context" in line]
    assert f"--input {raw} --num-docs 100 200 --num-questions 128 --seed 42 --out-dir {tmp_path}" in line
    assert not (tmp_path / "eval_100.json").exists()


def test_prepare_eval_data_download_dry_run_never_shows_the_token(tmp_path):
    env = {
        "DATA_ROOT": str(tmp_path / "ruler"),
        "LENGTH": "50",
        "DRY_RUN": "1",
        "HF_TOKEN": SECRET,
        "HF_ENDPOINT": "https://mirror.example",
    }
    result = _run(SCRIPTS / "prepare-eval-data.sh", env, "--download")
    (line,) = [shlex.split(line) for line in result.stdout.splitlines() if line.startswith("curl")]
    assert line[-1] == "https://mirror.example/datasets/BytedTsinghua-SIA/hotpotqa/resolve/main/eval_50.json"
    assert line[1:3] == ["--config", "-"] and "HF_TOKEN=<set>" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    assert not (tmp_path / "ruler").exists(), "a dry run writes nothing"


def test_prepare_eval_data_refuses_download_and_build_together(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text("[]")
    result = _run(
        SCRIPTS / "prepare-eval-data.sh", {"DATA_ROOT": str(tmp_path)}, "--download", "--build-from", str(raw)
    )
    assert result.returncode == 2 and "choose one of --download and --build-from" in result.stderr


class _Hub(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    auth: ClassVar[list[str | None]] = []

    def do_GET(self):
        type(self).auth.append(self.headers.get("Authorization"))
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body if body is not None else b"not found")

    def log_message(self, *args):
        pass


@pytest.fixture
def hub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    prefix = "/datasets/BytedTsinghua-SIA/hotpotqa/resolve/main"
    _Hub.files = {f"{prefix}/eval_50.json": _eval_items(5).encode(), f"{prefix}/eval_100.json": b'[{"input": "q"}]'}
    _Hub.auth = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("token", [SECRET, None], ids=["with_token", "without_token"])
def test_prepare_eval_data_downloads_checks_and_keeps_only_good_files(tmp_path, hub, token):
    """A file is renamed into place only after it passed the check; a token arrives as a header."""
    root = tmp_path / "ruler"
    env = {"DATA_ROOT": str(root), "LENGTH": "50 100 200", "HF_ENDPOINT": hub}
    env |= {"HF_TOKEN": token} if token else {}
    env |= {"no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"}
    started = time.monotonic()
    result = _run(SCRIPTS / "prepare-eval-data.sh", env, "--download", timeout=120)
    assert time.monotonic() - started < 60
    table = _status_table(result.stdout)
    assert table["50"][1:3] == ["downloaded", "5"]
    assert table["100"][1] == "download failed" and table["200"][1] == "download failed"
    assert result.returncode == 1 and "not a valid eval file" in result.stderr and "404" in result.stderr
    assert sorted(p.name for p in root.iterdir()) == ["eval_50.json"], "no partial or invalid file is left"
    assert set(_Hub.auth) == {f"Bearer {token}" if token else None}
    assert SECRET not in result.stdout + result.stderr


# ---- run-eval.sh and bootstrap.sh (dry runs over _common.sh) -------------------------------------


def test_run_eval_demo_dry_run_builds_synthetic_data_and_evaluates_inside_the_local_stack(tmp_path):
    result = _run(SCRIPTS / "run-eval.sh", {"DRY_RUN": "1", "OUTPUT_ROOT": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("-m mem_agent.synthetic_qa" in line for line in lines)
    assert any("-m mem_agent.build_long_context" in line and "--num-docs 50 200" in line for line in lines)
    stack = next(line for line in lines if "-m mem_agent.local_stack exec" in line)
    assert "-m mem_agent.eval_ruler_hqa" in stack and "--max-memory 128" in stack and "--lengths 50 200" in stack


def test_run_eval_with_a_model_and_no_gpu_serves_it_on_the_cpu_stack(tmp_path):
    model, data = tmp_path / "model", tmp_path / "data"
    model.mkdir()
    data.mkdir()
    env = {"DRY_RUN": "1", "MODEL_PATH": str(model), "DATA_ROOT": str(data), "LENGTH": "50", "PATH": "/usr/bin:/bin"}
    result = _run(SCRIPTS / "run-eval.sh", env)
    stack = next(line for line in result.stdout.splitlines() if "mem_agent.local_stack exec" in line)
    assert f"--model {model}" in stack and "--lengths 50" in stack


@pytest.mark.server
def test_run_eval_against_a_running_server_writes_results(stack, tmp_path, synthetic_file):
    data = tmp_path / "data"
    from mem_agent import build_long_context

    assert (
        build_long_context.main(
            ["--input", str(synthetic_file), "--num-docs", "8", "--num-questions", "2", "--out-dir", str(data)]
        )
        == 0
    )
    env = {
        "URL": stack.router_url,
        "PROTOCOL": "vllm",
        "DATA_ROOT": str(data),
        "LENGTH": "8",
        "OUTPUT_ROOT": str(tmp_path),
        "SAVE_FILE": "run",
        "MEM_CHUNK_TOKENS": "512",
        "MEM_MAX_MEMORY": "16",
        "MEM_MAX_FINAL": "16",
        "EXTRA_EVAL_ARGS": f"--tokenizer {stack.model_path} --temperature 1.0 --top-p 1.0",
    }
    result = _run(SCRIPTS / "run-eval.sh", env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len((tmp_path / "run" / "results_8.jsonl").read_text().splitlines()) == 2
    assert (tmp_path / "run" / "summary.json").exists() and (tmp_path / "run" / "accuracy_vs_length.png").exists()


def test_run_eval_missing_data_points_to_prepare_eval_data(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    result = _run(
        SCRIPTS / "run-eval.sh", {"MODEL_PATH": str(model), "DATA_ROOT": str(tmp_path / "none"), "LENGTH": "50"}
    )
    assert result.returncode == 2 and "prepare-eval-data.sh --download" in result.stderr


def test_bootstrap_dry_run_installs_torch_first_then_the_package(tmp_path):
    result = _run(PROJECT_ROOT / "scripts" / "bootstrap.sh", {"DRY_RUN": "1", "VENV": str(tmp_path / "venv")})
    lines = [line for line in result.stdout.splitlines() if "pip" in line]
    assert "torch==2.13.0" in lines[1] and "-e" in lines[2] and "uninstall" in lines[3]
