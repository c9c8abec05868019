"""The shell scripts check every setting before anything starts, and run anywhere they can.

- Every problem in one message that names the user's variable, before a server starts or a file
  is written; a setting the chosen mode would ignore is one of them.
- Run alone, a script finds the project's .venv, or says exactly what to set.
- A dry run previews a launch on a machine that lacks the trainers and tools (warnings, exit 0);
  a real run refuses the same.
- Data-parallel evaluation builds the serving commands a GPU node needs (a stand-in `nvidia-smi`
  lists the GPUs; nothing is started).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from support.scripts import PROJECT_ROOT, SCRIPTS, path_without, run_script, write_eval_file, write_executable

RUN_EVAL = SCRIPTS / "run-eval.sh"
TRAIN = SCRIPTS / "run-qwen3-4b-train.sh"


def _script(
    script: Path, env: dict[str, str | None], *args: str, cwd: Path, **options
) -> subprocess.CompletedProcess[str]:
    """The script in the folder `cwd` (also its HOME), with only the variables the test gives."""
    return run_script(script, env, *args, cwd=cwd, home=cwd, **options)


def _problems(result: subprocess.CompletedProcess) -> str:
    """The one error message (asserted to be the only one), with its list of problems."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr


def _lines(stdout: str, marker: str) -> list[list[str]]:
    return [shlex.split(line) for line in stdout.splitlines() if marker in line]


def _python_wrapper(path: Path, *flags: str) -> Path:
    """An interpreter at `path` that runs this test's Python (with `flags`, e.g. -S: no site packages)."""
    return write_executable(path, f'#!/usr/bin/env bash\nexec {shlex.quote(sys.executable)} {" ".join(flags)} "$@"\n')


# ---- run-eval.sh: every setting before anything starts ------------------------------------------


def test_run_eval_reports_every_bad_setting_in_one_message_and_writes_nothing(tmp_path):
    """The reported failure: MEM_CHUNK_TOKENS=-5 was rejected only after vLLM and the router had
    started (42-72 s) and the previous run's server logs were overwritten."""
    env = {"MEM_CHUNK_TOKENS": "-5", "MEM_MAX_FINAL": "0", "LENGTH": "50 abc 50", "TEMPERATURE": "-1"}
    err = _problems(_script(RUN_EVAL, env, cwd=tmp_path))
    for fragment in (
        "cannot start, 5 problem(s)",
        "MEM_CHUNK_TOKENS=-5 must be a positive integer (default 5000)",
        "MEM_MAX_FINAL=0 must be a positive integer (default 1024)",
        "LENGTH has 'abc'",
        "LENGTH lists 50 twice",
        "TEMPERATURE=-1 must be a number >= 0",
    ):
        assert fragment in err, fragment
    assert list(tmp_path.iterdir()) == [], "no data, no run folder, no server log"


def test_run_eval_names_length_itself_instead_of_an_internal_tools_usage(tmp_path):
    """LENGTH=abc used to print build_long_context's argparse usage about --num-docs and leave a
    synthetic_qa.json behind."""
    result = _script(RUN_EVAL, {"LENGTH": "abc"}, cwd=tmp_path)
    err = _problems(result)
    assert "LENGTH has 'abc': document counts are positive integers" in err
    assert "--num-docs" not in err and "usage:" not in err
    assert not list(tmp_path.rglob("synthetic_qa.json"))
    assert "is empty" in _problems(_script(RUN_EVAL, {"LENGTH": "  "}, cwd=tmp_path))


@pytest.mark.parametrize(
    ("env", "fragments"),
    [
        ({"DATA_ROOT": "/missing"}, ["DATA_ROOT is set but not used: the demo makes its own synthetic data"]),
        ({"TP": "2", "PORT": "9000"}, ["TP is set but not used: the demo serves", "PORT is set but not used"]),
        (
            {"URL": "http://127.0.0.1:9", "TP": "2", "DEMO_QUESTIONS": "4", "SERVE_TIMEOUT": "60"},
            [
                "TP is set but not used: URL names a running server",
                "DEMO_QUESTIONS is set but not used",
                "SERVE_TIMEOUT",
            ],
        ),
        (
            {"MODEL_PATH": "/m", "TP": "2", "DP": "2"},
            ["TP is set but not used: no GPU found", "DP is set but not used"],
        ),
        ({"SINGLE_ITER": "99"}, ["SINGLE_ITER is set but not used: they choose the checkpoint CONVERT=1 converts"]),
        ({"DEMO_MAX_MEMORY": "64", "MEM_MAX_MEMORY": "256"}, ["MEM_MAX_MEMORY is set but not used"]),
        ({"URL": "http://127.0.0.1:9", "CONVERT": "1", "SINGLE_ITER": "9"}, ["CONVERT=1 and URL together"]),
        ({"URL": "localhost:8000"}, ["URL=localhost:8000 must start with http:// or https://"]),
        ({"PROTOCOL": "grpc", "DRY_RUN": "yes"}, ["PROTOCOL=grpc must be one of openai,vllm,sglang", "DRY_RUN=yes"]),
    ],
)
def test_run_eval_refuses_settings_the_chosen_mode_would_ignore(tmp_path, env, fragments):
    """DATA_ROOT=/missing in the demo used to be ignored silently, and the run exited 0."""
    err = _problems(_script(RUN_EVAL, env, cwd=tmp_path))
    for fragment in fragments:
        assert fragment in err, fragment
    assert list(tmp_path.iterdir()) == []


def test_run_eval_adopts_the_converters_problems_into_its_one_message(tmp_path):
    env = {"CONVERT": "1", "SINGLE_ITER": "x7", "HF_CKPT": str(tmp_path / "none"), "LENGTH": "0"}
    err = _problems(_script(RUN_EVAL, env, cwd=tmp_path))
    assert "CONVERT=1, convert-to-hf.sh: SINGLE_ITER=x7 must be a number like 99 or iter_0000099" in err
    assert f"CONVERT=1, convert-to-hf.sh: HF_CKPT={tmp_path}/none: original Hugging Face model not found" in err
    assert "LENGTH has '0'" in err


def test_run_eval_lets_the_evaluator_check_its_arguments_before_anything_starts(tmp_path):
    result = _script(RUN_EVAL, {"EXTRA_EVAL_ARGS": "--no-such-flag"}, cwd=tmp_path)
    err = _problems(result)
    assert "the evaluator refuses its arguments" in err and "unrecognized arguments: --no-such-flag" in err
    assert list(tmp_path.iterdir()) == []


def test_run_eval_refuses_earlier_results_made_with_other_settings_before_serving(tmp_path):
    """A rerun into a folder whose results were made with other MEM_* values stops at the check,
    not after the CPU stack has started."""
    run_dir = tmp_path / "runs" / "demo"
    run_dir.mkdir(parents=True)
    (run_dir / "results_50.jsonl").write_text('{"id": "0", "status": "completed"}\n')
    (run_dir / "summary.json").write_text(json.dumps({"run": {"config": {"chunk_tokens": 5000}}}))
    err = _problems(_script(RUN_EVAL, {"MEM_CHUNK_TOKENS": "4000"}, cwd=tmp_path))
    assert "holds results made with other settings (config.chunk_tokens 5000 -> 4000)" in err
    assert not (run_dir / "servers").exists() and not (run_dir / "data").exists()


def test_a_demo_rerun_refuses_earlier_data_with_another_question_count(tmp_path):
    write_eval_file(tmp_path / "runs" / "demo" / "data" / "eval_50.json", 8)
    err = _problems(_script(RUN_EVAL, {"DEMO_QUESTIONS": "4", "DRY_RUN": "1"}, cwd=tmp_path))
    assert "eval_50.json (from an earlier demo) holds 8 questions, DEMO_QUESTIONS=4" in err


def test_a_demo_rerun_says_which_data_it_reuses(tmp_path):
    data = tmp_path / "runs" / "demo" / "data"
    write_eval_file(data / "eval_50.json", 8)
    write_eval_file(data / "synthetic_qa.json", 32)
    result = _script(RUN_EVAL, {"DRY_RUN": "1"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"demo: reusing {Path('runs/demo/data/synthetic_qa.json')} (made by an earlier run)" in result.stdout
    assert "demo: reusing eval_50.json in runs/demo/data (made by an earlier run)" in result.stdout
    (build,) = _lines(result.stdout, "mem_agent.build_long_context")
    assert build[build.index("--num-docs") + 1 : build.index("--num-questions")] == ["200"]


# ---- scripts run alone ----------------------------------------------------------------------------


def test_run_eval_alone_finds_the_projects_virtual_environment(tmp_path):
    """PYTHON unset: VENV/bin/python (VENV defaults to <repo>/.venv, as scripts/bootstrap.sh makes it)."""
    venv_python = _python_wrapper(tmp_path / "venv" / "bin" / "python")
    result = _script(RUN_EVAL, {"PYTHON": None, "VENV": str(tmp_path / "venv"), "DRY_RUN": "1"}, cwd=tmp_path)
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    (stack,) = _lines(result.stdout, "mem_agent.local_stack")
    assert stack[0] == str(venv_python) and stack[stack.index("--") + 1] == str(venv_python)


def test_run_eval_alone_without_a_usable_python_says_what_to_run_or_set(tmp_path):
    """The reported failure: `No module named 'mem_agent'` from python3 after the servers started."""
    bare = _python_wrapper(tmp_path / "bin" / "python3", "-S")  # a python3 without the project's packages
    env = {"PYTHON": None, "VENV": str(tmp_path / "no_venv")}
    err = _problems(_script(RUN_EVAL, env, cwd=tmp_path, bin_dirs=[bare.parent]))
    assert f"PYTHON (unset, and there is no {tmp_path}/no_venv/bin/python, so python3) cannot import aiohttp" in err
    assert "scripts/bootstrap.sh" in err and "set PYTHON to an interpreter with mem-agent installed" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "bin"]


@pytest.fixture
def checkout_copy(tmp_path) -> Path:
    """A checkout of its own for the scripts (examples/ links to this one's): its .venv is the test's to make."""
    root = tmp_path / "checkout"
    root.mkdir()
    (root / "examples").symlink_to(PROJECT_ROOT / "examples", target_is_directory=True)
    return root


def test_run_eval_defaults_to_the_checkouts_own_virtual_environment(tmp_path, checkout_copy):
    """With PYTHON and VENV unset, <checkout>/.venv/bin/python runs every command; without it, python3."""
    script = checkout_copy / "examples" / "mem_agent" / "run-eval.sh"
    env = {"PYTHON": None, "DRY_RUN": "1"}
    default = checkout_copy / ".venv" / "bin" / "python"
    without = _script(script, env, cwd=tmp_path, bin_dirs=[_python_wrapper(tmp_path / "bin" / "python3").parent])
    assert without.returncode == 0, without.stderr
    assert "warning" not in without.stderr, "the python3 on PATH has every package"
    assert _lines(without.stdout, "mem_agent.local_stack")[0][0] == "python3"
    _python_wrapper(default)
    result = _script(script, env, cwd=tmp_path)
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr
    (stack,) = _lines(result.stdout, "mem_agent.local_stack")
    assert stack[0] == str(default) and stack[stack.index("--") + 1] == str(default)


# ---- the train script's dry run anywhere --------------------------------------------------------


def test_train_dry_run_previews_the_launch_on_a_machine_without_ray_or_checkouts(tmp_path):
    env = {"DRY_RUN": "1", "TRAINER_ROOT": str(tmp_path / "slime")}
    result = _script(TRAIN, env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (head,) = _lines(result.stdout, "setsid ray start --head")
    assert head[-1] == "--block" and head[head.index("--dashboard-host") + 1] == "127.0.0.1"
    (job,) = _lines(result.stdout, "ray job submit")
    assert job[job.index("--") + 1 :][:2] == [sys.executable, f"{tmp_path}/slime/train.py"]
    assert "mem_agent.rollout.generate" in job and "--sglang-mem-fraction-static" in job
    warnings = result.stderr
    assert "warning: dry run on a machine that lacks what a real run needs" in warnings
    for fragment in (
        "command 'ray' not found",
        f"TRAINER_ROOT={tmp_path}/slime: slime or vime checkout not found",
        "MEGATRON_PATH=",
        f"HF_CKPT={tmp_path}/models/Qwen3-4B",
        "TORCH_DIST=",
        "TRAIN_DATA=",
        "HOST_TRAINER is unknown without the checkout: the commands below assume slime",
    ):
        assert fragment in warnings, fragment
    assert "error:" not in warnings and not (tmp_path / "mem_agent_runs").exists()
    real = _script(TRAIN, env | {"DRY_RUN": "0"}, cwd=tmp_path)
    assert "cannot start" in _problems(real) and real.stdout == ""


def test_train_dry_run_still_refuses_values_that_cannot_work(tmp_path):
    env = {"DRY_RUN": "1", "MEM_CHUNK_TOKENS": "0", "LR": "fast"}
    err = _problems(_script(TRAIN, env, cwd=tmp_path))
    assert "MEM_CHUNK_TOKENS=0 must be a positive integer" in err and "LR=fast must be a number > 0" in err


def test_train_refuses_settings_its_mode_would_ignore(tmp_path):
    env = {
        "DRY_RUN": "1",
        "HOST_TRAINER": "vime",
        "EVAL_INTERVAL": "10",
        "SGLANG_MEM_FRACTION": "0.5",
        "ACTOR_GPUS_PER_NODE": "4",
        "WANDB_GROUP": "g",
        "USE_EXISTING_RAY": "1",
        "RAY_PORT": "6390",
    }
    err = _problems(_script(TRAIN, env, cwd=tmp_path))
    for fragment in (
        "EVAL_INTERVAL is set but not used: evaluation during training is off without EVAL_DATA",
        "SGLANG_MEM_FRACTION is set but not used: vime's rollout engines are vLLM",
        "ACTOR_GPUS_PER_NODE is set but not used: they split the GPUs for ASYNC=1 only",
        "WANDB_GROUP is set but not used",
        "RAY_PORT is set but not used: USE_EXISTING_RAY=1 starts no Ray head",
    ):
        assert fragment in err, fragment


def test_train_switches_must_be_0_or_1(tmp_path):
    err = _problems(_script(TRAIN, {"DRY_RUN": "yes", "KEEP_RAY": "true"}, cwd=tmp_path))
    assert "DRY_RUN=yes must be 0 or 1" in err and "KEEP_RAY=true must be 0 or 1" in err


# ---- prepare-eval-data.sh, convert-to-hf.sh, demo.sh -------------------------------------------


def test_prepare_eval_data_refuses_settings_nothing_would_read(tmp_path):
    env = {"DATA_ROOT": str(tmp_path), "LENGTH": "50 200", "LENGTHS": "50", "NUM_QUESTIONS": "4", "HF_REPO": "me/data"}
    err = _problems(_script(SCRIPTS / "prepare-eval-data.sh", env, cwd=tmp_path))
    assert "LENGTH='50 200' and LENGTHS='50' differ: set one of them" in err
    assert "NUM_QUESTIONS is set but not used: they shape what --build-from builds" in err
    assert "HF_REPO is set but not used: they choose what --download fetches" in err


@pytest.mark.parametrize("knobs", [{"LENGTHS": "50 200 800"}, {"LENGTHS": "50 200 800", "LENGTH": "50  200 800"}])
def test_prepare_eval_data_takes_lengths_as_another_spelling_of_length(tmp_path, knobs):
    """The vime example's README spells it LENGTHS: its command runs as written."""
    env = {"DATA_ROOT": str(tmp_path), "DRY_RUN": "1", **knobs}
    result = _script(SCRIPTS / "prepare-eval-data.sh", env, "--download", cwd=tmp_path)
    assert "error:" not in result.stderr, result.stderr
    for n in (50, 200, 800):
        assert f"eval_{n}.json: downloading from https://huggingface.co (BytedTsinghua-SIA/hotpotqa)" in result.stdout
    assert "eval_100.json" not in result.stdout


def test_demo_checks_the_evaluators_arguments_before_installing_where_the_interpreter_can(tmp_path):
    """With an interpreter that has the packages (an earlier demo's .venv, or PYTHON) the evaluator
    itself checks its arguments before bootstrap.sh runs; nothing is installed or written."""
    env = {"VENV": str(tmp_path / "venv"), "EXTRA_EVAL_ARGS": "--no-such-flag"}
    result = _script(PROJECT_ROOT / "scripts" / "demo.sh", env, cwd=tmp_path)
    err = _problems(result)
    assert "the evaluator refuses its arguments" in err and "unrecognized arguments: --no-such-flag" in err
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_demo_checks_every_setting_before_it_installs_anything(tmp_path):
    """demo.sh runs bootstrap.sh (it writes .venv) only once run-eval.sh's settings are known to be good."""
    env = {"VENV": str(tmp_path / "venv"), "LENGTH": "abc", "DATA_ROOT": "/missing", "MEM_MAX_MEMORY": "-1"}
    result = _script(PROJECT_ROOT / "scripts" / "demo.sh", env, cwd=tmp_path)
    err = _problems(result)
    for fragment in ("LENGTH has 'abc'", "DATA_ROOT is set but not used", "MEM_MAX_MEMORY=-1 must be a positive"):
        assert fragment in err, fragment
    assert result.stdout == "" and list(tmp_path.iterdir()) == [], "no environment, no data"


# ---- data-parallel evaluation on a GPU node ------------------------------------------------------


@pytest.fixture
def gpu_node(tmp_path) -> dict[str, str]:
    """A model folder and eval files; `_on_gpus` runs with an `nvidia-smi` that lists 8 GPUs, as on an 8-GPU node."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    write_eval_file(tmp_path / "data" / "eval_50.json", 2)
    return {"MODEL_PATH": str(tmp_path / "model"), "DATA_ROOT": str(tmp_path / "data"), "LENGTH": "50", "DRY_RUN": "1"}


def _on_gpus(env: dict[str, str | None], cwd: Path, **options) -> subprocess.CompletedProcess[str]:
    return _script(RUN_EVAL, env, cwd=cwd, gpus=8, **options)


def _server(argv: list[str]) -> tuple[str, int, list[str]]:
    """(CUDA_VISIBLE_DEVICES, port, the rest) of a printed `env CUDA_VISIBLE_DEVICES=... python -m vllm...`."""
    assert argv[0] == "env" and argv[1].startswith("CUDA_VISIBLE_DEVICES=")
    return argv[1].split("=", 1)[1], int(argv[argv.index("--port") + 1]), argv[2:]


def test_dp_through_vllms_own_data_parallel_serving(tmp_path, gpu_node):
    result = _on_gpus(gpu_node | {"DP": "8"}, tmp_path)
    assert result.returncode == 0, result.stderr
    (server,) = _lines(result.stdout, "vllm.entrypoints.openai.api_server")
    devices, port, rest = _server(server)
    assert devices == "0,1,2,3,4,5,6,7" and port == 8000
    assert rest[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert rest[rest.index("--data-parallel-size") + 1] == "8" and rest[rest.index("--tensor-parallel-size") + 1] == "1"
    assert rest[rest.index("--host") + 1] == "127.0.0.1"
    (evaluate,) = _lines(result.stdout, "mem_agent.eval_ruler_hqa")
    assert evaluate[evaluate.index("--url") + 1] == "http://127.0.0.1:8000"
    assert evaluate[evaluate.index("--protocol") + 1] == "openai"
    assert not _lines(result.stdout, "vllm-router")


def test_dp_through_one_server_per_gpu_group_behind_vllm_router(tmp_path, gpu_node):
    result = _on_gpus(gpu_node | {"DP": "4", "TP": "2", "DP_MODE": "router", "PORT": "9000"}, tmp_path)
    assert result.returncode == 0, result.stderr
    servers = [_server(argv) for argv in _lines(result.stdout, "vllm.entrypoints.openai.api_server")]
    assert [(devices, port) for devices, port, _ in servers] == [
        ("0,1", 9001),
        ("2,3", 9002),
        ("4,5", 9003),
        ("6,7", 9004),
    ]
    assert all("--data-parallel-size" not in rest and "--tensor-parallel-size" in rest for _, _, rest in servers)
    (router,) = _lines(result.stdout, "vllm-router")
    assert Path(router[0]).name == "vllm-router" and router[router.index("--port") + 1] == "9000"
    workers = router[router.index("--worker-urls") + 1 : router.index("--policy")]
    assert workers == [f"http://127.0.0.1:{port}" for port in range(9001, 9005)]
    assert router[router.index("--prometheus-port") + 1] == "9005"
    (evaluate,) = _lines(result.stdout, "mem_agent.eval_ruler_hqa")
    assert evaluate[evaluate.index("--url") + 1] == "http://127.0.0.1:9000"


def test_dp_uses_only_the_visible_gpus_and_needs_enough_of_them(tmp_path, gpu_node):
    env = gpu_node | {"CUDA_VISIBLE_DEVICES": "4,5,6,7", "DP": "4", "DP_MODE": "router"}
    result = _on_gpus(env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert [_server(argv)[0] for argv in _lines(result.stdout, "api_server")] == ["4", "5", "6", "7"]
    err = _problems(_on_gpus(env | {"DP": "4", "TP": "2", "DRY_RUN": "0"}, tmp_path))
    assert "DP=4 x TP=2 needs 8 GPUs; this node has 4 (4 5 6 7)" in err


def test_serving_on_gpus_needs_curl_and_setsid(tmp_path, gpu_node):
    """The health wait uses curl and each server its own session (setsid): without them a real run
    used to start the servers and wait SERVE_TIMEOUT (30 minutes) for a health check that never came."""
    system = path_without(tmp_path / "system", "curl", "setsid")
    dry = _on_gpus(gpu_node, tmp_path, system_path=[system])
    assert (
        dry.returncode == 0 and "command 'curl' not found" in dry.stderr and "command 'setsid' not found" in dry.stderr
    )
    err = _problems(_on_gpus(gpu_node | {"DRY_RUN": "0", "PORT": "1"}, tmp_path, system_path=[system]))
    assert "command 'curl' not found: it asks the servers for /health" in err
    assert "command 'setsid' not found: util-linux" in err
    assert not (tmp_path / "runs").exists(), "no server log: nothing was started"


@pytest.mark.parametrize("knob", ["HEALTH_INTERVAL", "SERVE_STOP_TIMEOUT"])
def test_the_serving_waits_are_checked_and_belong_to_gpu_serving(tmp_path, gpu_node, knob):
    assert f"{knob}=0 must be a positive integer" in _problems(_on_gpus(gpu_node | {knob: "0"}, tmp_path))
    real_run = {name: value for name, value in gpu_node.items() if name != "DRY_RUN"}
    err = _problems(_script(RUN_EVAL, real_run | {knob: "5"}, cwd=tmp_path))  # no GPU: the CPU stack
    assert f"{knob} is set but not used: no GPU found" in err
    preview = _script(RUN_EVAL, gpu_node | {knob: "5"}, cwd=tmp_path)  # a dry run previews the GPU launch
    assert preview.returncode == 0 and "previewing the launch on 1 GPU(s)" in preview.stderr, preview.stderr


def test_dp_mode_needs_dp(tmp_path, gpu_node):
    err = _problems(_on_gpus(gpu_node | {"DP_MODE": "router"}, tmp_path))
    assert "DP_MODE is set but not used: it chooses how DP > 1 replicas are served" in err
    err = _problems(_on_gpus(gpu_node | {"DP": "2", "DP_MODE": "ray"}, tmp_path))
    assert "DP_MODE=ray must be one of vllm,router" in err
