"""The shell scripts: shellcheck clean, --help, and the exact commands their dry runs print."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HOTPOT_SAMPLE, PROJECT_ROOT

SCRIPTS = PROJECT_ROOT / "examples" / "mem_agent"
ALL_SHELL = sorted([*SCRIPTS.glob("*.sh"), *(PROJECT_ROOT / "scripts").glob("*.sh"), PROJECT_ROOT / ".ci" / "run"])
SECRET = "wandb-secret-value-0123456789"


def _run(script: Path, env: dict[str, str], *args: str, cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEM_")}
    full_env.update({"PYTHON": sys.executable, **env})
    return subprocess.run(
        ["bash", str(script), *args], env=full_env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def _shellcheck() -> str:
    beside = Path(sys.executable).with_name("shellcheck")
    return str(beside) if beside.exists() else "shellcheck"


def test_every_shell_script_is_shellcheck_clean():
    result = subprocess.run(
        [_shellcheck(), "-x", *map(str, ALL_SHELL)], capture_output=True, text=True, cwd=PROJECT_ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("script", [s for s in ALL_SHELL if s.name != "_common.sh"], ids=lambda s: s.name)
def test_every_script_stops_on_errors(script):
    assert "set -euo pipefail" in script.read_text()


@pytest.mark.parametrize(
    "script", [s for s in ALL_SHELL if s.suffix == ".sh" and s.name != "_common.sh"], ids=lambda s: s.name
)
def test_every_script_explains_itself(script):
    result = _run(script, {}, "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage:"), result.stderr


@pytest.fixture
def trainer(tmp_path) -> dict[str, str]:
    """Fake slime/vime checkouts, checkpoints and data, and a `ray` that only answers `status`."""
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
    (tmp_path / "hf" / "config.json").write_text("{}")
    (tmp_path / "dist").mkdir()
    (tmp_path / "train.jsonl").write_text("{}\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ray").write_text("#!/usr/bin/env bash\nexit 0\n")
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


def _train_dry_run(trainer, host: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in trainer.items() if k not in ("slime", "vime")}
    env.update(TRAINER_ROOT=trainer[host], DRY_RUN="1", WANDB_API_KEY=SECRET, **extra)
    return _run(SCRIPTS / "run-qwen3-4b-train.sh", env)


def _submitted(output: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith("ray job submit"))
    return shlex.split(line)


@pytest.mark.parametrize(
    ("host", "backend_flag"), [("slime", "--sglang-mem-fraction-static"), ("vime", "--vllm-gpu-memory-utilization")]
)
def test_train_dry_run_prints_the_memagent_grpo_job_for_each_host(trainer, host, backend_flag):
    result = _train_dry_run(trainer, host, MEM_CHUNK_TOKENS="4000", WANDB_PROJECT="memagent")
    assert result.returncode == 0, result.stderr
    argv = _submitted(result.stdout)
    flags = " ".join(argv)
    for expected in (
        "--custom-generate-function-path mem_agent.rollout.generate",
        "--custom-rm-path mem_agent.rollout.reward",
        "--custom-reward-post-process-path mem_agent.rollout.reward_post_process",
        "--custom-convert-samples-to-train-data-path mem_agent.custom_convert.convert_samples_to_train_data",
        "--n-samples-per-prompt 16",
        "--num-rollout 100",
        "--lr 1e-6",
        "--lr-warmup-iters 20",
        "--kl-loss-coef 0.001 --kl-loss-type low_var_kl",
        "--eps-clip 0.2 --eps-clip-high 0.2",
        "--num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728",
        "--num-query-groups 8 --kv-channels 128",
        "--rotary-base 1000000",
        "--vocab-size 151936 --qk-layernorm",
        "--metadata-key metadata",
        "--colocate",
        "--use-wandb --wandb-project memagent",
        backend_flag,
    ):
        assert expected in flags, expected
    assert argv[argv.index("--") + 2] == "train.py"
    runtime_env = json.loads(argv[argv.index("--runtime-env-json") + 1])["env_vars"]
    assert runtime_env["MEM_CHUNK_TOKENS"] == "4000" and "MEM_MAX_MEMORY" not in runtime_env, "only what was set"
    assert str(SCRIPTS.parent) in runtime_env["PYTHONPATH"].split(":")
    assert "ray start --head" in result.stdout and "--dashboard-host 127.0.0.1" in result.stdout
    assert SECRET not in result.stdout + result.stderr, "secrets never reach a command line or a log"


def test_train_async_mode_does_not_colocate(trainer):
    (Path(trainer["slime"]) / "train_async.py").write_text("")
    argv = _submitted(_train_dry_run(trainer, "slime", ASYNC="1").stdout)
    assert "train_async.py" in argv and "--colocate" not in argv


def test_train_reports_every_missing_path_at_once_and_starts_nothing(trainer, tmp_path):
    result = _train_dry_run(trainer, "slime", HF_CKPT=str(tmp_path / "nope"), TRAIN_DATA=str(tmp_path / "none.jsonl"))
    assert result.returncode == 2
    assert "2 problem(s)" in result.stderr and "HF_CKPT=" in result.stderr and "TRAIN_DATA=" in result.stderr
    assert "ray start" not in result.stdout


def test_train_on_an_existing_cluster_does_not_start_ray(trainer):
    result = _train_dry_run(trainer, "vime", USE_EXISTING_RAY="1", NNODES="2")
    assert "ray start" not in result.stdout and "JOIN=1" in result.stdout
    assert "ray job submit" in result.stdout


@pytest.fixture
def checkpoints(trainer, tmp_path) -> dict[str, str]:
    save = Path(trainer["SAVE_PATH"])
    for iteration in ("iter_0000049", "iter_0000099"):
        (save / iteration).mkdir(parents=True)
    (tmp_path / "hf_out" / "iter_0000049").mkdir(parents=True)
    (tmp_path / "hf_out" / "iter_0000049" / "config.json").write_text("{}")
    return {**trainer, "TRAINER_ROOT": trainer["slime"], "OUT_ROOT": str(tmp_path / "hf_out"), "DRY_RUN": "1"}


def test_convert_skips_what_is_converted_and_converts_the_rest(checkpoints):
    env = {k: v for k, v in checkpoints.items() if k not in ("slime", "vime")}
    result = _run(SCRIPTS / "convert-to-hf.sh", env)
    assert result.returncode == 0, result.stderr
    assert "skip iter_0000049" in result.stdout and "converted 1, skipped 1" in result.stdout
    command = next(line for line in result.stdout.splitlines() if "convert_torch_dist_to_hf.py" in line)
    assert f"--input-dir {checkpoints['SAVE_PATH']}/iter_0000099" in command
    assert f"--output-dir {checkpoints['OUT_ROOT']}/iter_0000099" in command and "--origin-hf-dir" in command


@pytest.mark.parametrize("single", ["99", "iter_0000099", "0099"])
def test_convert_a_single_iteration_by_number_or_name(checkpoints, single):
    env = {k: v for k, v in checkpoints.items() if k not in ("slime", "vime")}
    result = _run(SCRIPTS / "convert-to-hf.sh", {**env, "SINGLE_ITER": single})
    assert result.returncode == 0 and "converted 1, skipped 0" in result.stdout


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"SINGLE_ITER": "7"}, "iter_0000007 not found"),
        ({"SINGLE_ITER": "x7"}, "must be a number"),
        ({"HF_CKPT": "/nonexistent"}, "HF_CKPT=/nonexistent"),
    ],
)
def test_convert_input_mistakes_are_clear_errors(checkpoints, change, message):
    env = {k: v for k, v in checkpoints.items() if k not in ("slime", "vime")}
    result = _run(SCRIPTS / "convert-to-hf.sh", {**env, **change})
    assert result.returncode == 2 and message in result.stderr


def _status_table(stdout: str) -> dict[str, list[str]]:
    """The script's closing table: length -> its cells."""
    lines = stdout.splitlines()
    header = max(i for i, line in enumerate(lines) if line.split("|")[0].strip() == "length")
    return {line.split("|")[0].strip(): [cell.strip() for cell in line.split("|")] for line in lines[header + 1 :]}


def test_prepare_eval_data_reports_present_missing_and_invalid_files(tmp_path):
    root = tmp_path / "ruler"
    root.mkdir()
    (root / "eval_50.json").write_text(json.dumps([{"context": "c", "input": "q", "answers": ["a"]}] * 3))
    (root / "eval_100.json").write_text('[{"context": "c"}]')
    result = _run(SCRIPTS / "prepare-eval-data.sh", {"DATA_ROOT": str(root), "LENGTHS": "50 100 200"})
    assert result.returncode == 1
    rows = {
        line.split("|")[0].strip(): [cell.strip() for cell in line.split("|")]
        for line in result.stdout.splitlines()[1:]
    }
    assert rows["50"][1:3] == ["present", "3"] and rows["100"][1] == "invalid" and rows["200"][1] == "missing"
    assert "missing field(s) input, answers" in result.stderr and "--build-from" in result.stderr


def test_prepare_eval_data_builds_missing_files_from_raw_rows(tmp_path, hotpot_rows):
    env = {"DATA_ROOT": str(tmp_path / "ruler"), "LENGTHS": "20 40", "NUM_QUESTIONS": "4"}
    result = _run(SCRIPTS / "prepare-eval-data.sh", env, "--build-from", str(HOTPOT_SAMPLE))
    assert result.returncode == 0, result.stderr
    table = _status_table(result.stdout)
    assert table["20"][1:3] == ["built", "4"] and table["40"][1:3] == ["built", "4"]


def test_prepare_eval_data_download_dry_run_never_shows_the_token(tmp_path):
    env = {
        "DATA_ROOT": str(tmp_path),
        "LENGTHS": "50",
        "DRY_RUN": "1",
        "HF_TOKEN": SECRET,
        "HF_ENDPOINT": "https://mirror.example",
    }
    result = _run(SCRIPTS / "prepare-eval-data.sh", env, "--download")
    assert (
        "curl" in result.stdout
        and "https://mirror.example/datasets/BytedTsinghua-SIA/hotpotqa/resolve/main/eval_50.json" in result.stdout
    )
    assert SECRET not in result.stdout + result.stderr


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
def test_run_eval_against_a_running_server_writes_results(stack, tmp_path, hotpot_rows):
    data = tmp_path / "data"
    from mem_agent import build_long_context

    assert (
        build_long_context.main(
            ["--input", str(HOTPOT_SAMPLE), "--num-docs", "8", "--num-questions", "2", "--out-dir", str(data)]
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
