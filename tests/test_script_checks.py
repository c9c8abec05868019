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
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from support.scripts import (
    PROJECT_ROOT,
    SCRIPTS,
    named,
    refusal,
    run_script,
    unused,
    write_eval_file,
    write_executable,
    write_trainer_files,
)
from support.train_launch import about, listed, problems

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
    started (42-72 s) and the previous run's server logs were overwritten. The evaluator's own flags
    (EVAL_TEMPERATURE) are checked by the evaluator, in the same message."""
    env = {"MEM_CHUNK_TOKENS": "-5", "MEM_MAX_FINAL": "0", "LENGTH": "50 abc 50", "EVAL_TEMPERATURE": "-1"}
    problems = refusal(_script(RUN_EVAL, env, cwd=tmp_path))
    assert sorted(named(problems)) == ["EVAL_TEMPERATURE", "LENGTH", "MEM_CHUNK_TOKENS", "MEM_MAX_FINAL"], problems
    assert list(tmp_path.iterdir()) == [], "no data, no run folder, no server log"


@pytest.mark.parametrize("length", ["abc", "0", "50 50", "2.5"])
def test_run_eval_names_length_itself_instead_of_an_internal_tools_usage(tmp_path, length):
    """A bad LENGTH is named as the user typed it, not as the flag of a tool the script runs, and
    nothing is written."""
    result = _script(RUN_EVAL, {"LENGTH": length}, cwd=tmp_path)
    (problem,) = refusal(result)
    assert problem.startswith(f"LENGTH={length} ")
    assert "--num-docs" not in result.stderr and "usage:" not in result.stderr
    assert not list(tmp_path.rglob("synthetic_qa.json"))


@pytest.mark.parametrize(
    ("env", "not_used", "refused"),
    [
        ({"DATA_ROOT": "/missing"}, ["DATA_ROOT"], []),
        ({"TP": "2", "PORT": "9000"}, ["TP", "PORT"], []),
        (
            {"URL": "http://127.0.0.1:9", "TP": "2", "DEMO_QUESTIONS": "4", "SERVE_TIMEOUT": "60"},
            ["TP", "SERVE_TIMEOUT", "DEMO_QUESTIONS"],
            ["DATA_ROOT", "URL"],  # no eval files; nothing listens there
        ),
        ({"MODEL_PATH": "/m", "TP": "2", "DP": "2"}, ["TP", "DP"], ["DATA_ROOT", "MODEL_PATH"]),
        ({"SINGLE_ITER": "99"}, ["SINGLE_ITER"], []),
        ({"DEMO_MAX_MEMORY": "64", "MEM_MAX_MEMORY": "256"}, ["MEM_MAX_MEMORY"], []),
        ({"URL": "http://127.0.0.1:9", "CONVERT": "1", "SINGLE_ITER": "9"}, [], ["CONVERT", "DATA_ROOT", "URL"]),
        ({"URL": "localhost:8000"}, [], ["URL"]),
        ({"PROTOCOL": "grpc", "DRY_RUN": "maybe"}, [], ["DRY_RUN", "PROTOCOL"]),
        ({"OUTPUT_ROOT": "/tmp/x\ny"}, [], ["OUTPUT_ROOT"]),
        (
            {"EXTRA_EVAL_ARGS": "--a\n--b", "LENGTH": "50\n200", "EVAL_TOP_P": "nan"},
            [],
            ["EXTRA_EVAL_ARGS", "LENGTH", "EVAL_TOP_P"],
        ),
    ],
)
def test_run_eval_refuses_settings_the_chosen_mode_would_ignore_or_cannot_use(tmp_path, env, not_used, refused):
    """A setting the chosen mode would ignore (DATA_ROOT in the demo) is refused, not dropped; a value
    with a line break, or a number that is not finite, is refused by name."""
    problems = refusal(_script(RUN_EVAL, env, cwd=tmp_path))
    assert sorted(unused(problems)) == sorted(not_used), problems
    assert sorted(set(named(problems)) - set(unused(problems))) == sorted(refused), problems
    assert list(tmp_path.iterdir()) == []


def test_run_eval_adopts_the_converters_problems_into_its_one_message(tmp_path):
    """CONVERT=1 runs convert-to-hf.sh's own checks (launch/convert.py) in-process, before anything."""
    env = {"CONVERT": "1", "SINGLE_ITER": "x7", "HF_CKPT": str(tmp_path / "none"), "LENGTH": "0"}
    problems = refusal(_script(RUN_EVAL, env, cwd=tmp_path))
    assert any("SINGLE_ITER=x7" in problem for problem in problems), problems
    assert any(f"HF_CKPT={tmp_path}/none" in problem for problem in problems), problems
    assert "LENGTH" in named(problems) and list(tmp_path.iterdir()) == []


def test_run_eval_converts_nothing_before_every_setting_is_known_to_be_good(tmp_path):
    """A conversion is never started by a check: with a problem left, no converter runs."""
    files = write_trainer_files(tmp_path / "t")
    (tmp_path / "t" / "save" / "iter_0000099").mkdir(parents=True)
    converter = files.checkout("slime") / "tools" / "convert_torch_dist_to_hf.py"
    converter.write_text(f"open({str(tmp_path / 'converted')!r}, 'w')\n")
    write_eval_file(tmp_path / "data" / "eval_50.json", 2)
    env = files.env("slime") | {"CONVERT": "1", "SINGLE_ITER": "99", "DATA_ROOT": str(tmp_path / "data")}
    env |= {"LENGTH": "50", "EVAL_TEMPERATURE": "-1"}
    assert named(refusal(_script(RUN_EVAL, env, cwd=tmp_path))) == ["EVAL_TEMPERATURE"]
    assert not (tmp_path / "converted").exists() and not (tmp_path / "t" / "save_hf").exists()


def test_run_eval_refuses_the_training_scripts_sampling_names(tmp_path):
    """TEMPERATURE and TOP_P are run-qwen3-4b-train.sh's rollout sampling; an evaluation's is EVAL_* in
    both scripts, so the training names set for run-eval.sh are refused rather than ignored."""
    result = _script(RUN_EVAL, {"TEMPERATURE": "0.5", "TOP_P": "0.9", "DRY_RUN": "1"}, cwd=tmp_path)
    assert sorted(named(refusal(result))) == ["TEMPERATURE", "TOP_P"]


@pytest.mark.parametrize("given", ["--no-such-flag", "--paper memagent-v9"])
def test_run_eval_lets_the_evaluator_check_its_arguments_before_anything_starts(tmp_path, given):
    result = _script(RUN_EVAL, {"EXTRA_EVAL_ARGS": given}, cwd=tmp_path)
    (problem,) = refusal(result)
    assert named([problem]) == ["EXTRA_EVAL_ARGS"] and given.split()[-1] in problem
    assert list(tmp_path.iterdir()) == []


def test_run_eval_refuses_earlier_results_made_with_other_settings_before_serving(tmp_path):
    """A rerun into a folder whose results were made with other MEM_* values stops at the check,
    not after the CPU stack has started."""
    run_dir = tmp_path / "runs" / "demo"
    run_dir.mkdir(parents=True)
    (run_dir / "results_50.jsonl").write_text('{"id": "0", "status": "completed"}\n')
    (run_dir / "summary.json").write_text(
        json.dumps({"results": [{"label": "50"}], "run": {"config": {"chunk_tokens": 5000}}})
    )
    (problem,) = refusal(_script(RUN_EVAL, {"MEM_CHUNK_TOKENS": "4000"}, cwd=tmp_path))
    assert str(run_dir.relative_to(tmp_path)) in problem and "config.chunk_tokens 5000 -> 4000" in problem
    assert not (run_dir / "servers").exists() and not (run_dir / "data").exists()


def test_a_demo_rerun_refuses_earlier_data_with_another_question_count(tmp_path):
    write_eval_file(tmp_path / "runs" / "demo" / "data" / "eval_50.json", 8)
    (problem,) = refusal(_script(RUN_EVAL, {"DEMO_QUESTIONS": "4", "DRY_RUN": "1"}, cwd=tmp_path))
    assert problem.startswith("runs/demo/data/eval_50.json ") and "DEMO_QUESTIONS=4" in problem


def test_a_demo_rerun_reuses_the_data_it_finds_and_builds_only_the_rest(tmp_path):
    data = tmp_path / "runs" / "demo" / "data"
    write_eval_file(data / "eval_50.json", 8)
    write_eval_file(data / "synthetic_qa.json", 32)
    result = _script(RUN_EVAL, {"DRY_RUN": "1"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not _lines(result.stdout, "-m mem_agent.synthetic_qa"), "synthetic_qa.json is reused"
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
    result = _script(RUN_EVAL, env, cwd=tmp_path, bin_dirs=[bare.parent])
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "aiohttp" in result.stderr and "pydantic" in result.stderr and "scripts/bootstrap.sh" in result.stderr
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
    (head,) = _lines(result.stdout, "ray start --head")
    assert head[-1] == "--block" and head[head.index("--dashboard-host") + 1] == "127.0.0.1"
    (job,) = _lines(result.stdout, "ray job submit")
    assert job[job.index("--") + 1 :][:2] == [sys.executable, f"{tmp_path}/slime/train.py"]
    assert "mem_agent.rollout.generate" in job and "--sglang-mem-fraction-static" in job
    warnings = listed(result.stderr)
    for prefix in (
        "command 'ray' ",
        f"TRAINER_ROOT={tmp_path}/slime:",
        "MEGATRON_PATH=",
        f"HF_CKPT={tmp_path}/models/Qwen3-4B:",
        "TORCH_DIST=",
        "TRAIN_DATA=",
        "HOST_TRAINER ",
    ):
        assert [line for line in warnings if line.startswith(prefix)], prefix
    assert "error:" not in result.stderr and not (tmp_path / "mem_agent_runs").exists()
    real = _script(TRAIN, env | {"DRY_RUN": "0"}, cwd=tmp_path)
    assert problems(real) and real.stdout == ""


def test_train_dry_run_still_refuses_values_that_cannot_work(tmp_path):
    env = {"DRY_RUN": "1", "MEM_CHUNK_TOKENS": "0", "LR": "fast"}
    lines = problems(_script(TRAIN, env, cwd=tmp_path))
    assert about(lines, "MEM_CHUNK_TOKENS") and about(lines, "LR") and len(lines) == 2, lines


def test_train_refuses_settings_its_mode_would_ignore(tmp_path):
    """Each setting the chosen mode ignores is named, once, judged on what the user set."""
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
    lines = problems(_script(TRAIN, env, cwd=tmp_path))
    ignored = ("EVAL_INTERVAL", "SGLANG_MEM_FRACTION", "ACTOR_GPUS_PER_NODE", "WANDB_GROUP", "RAY_PORT")
    assert sorted(line.split()[0] for line in lines) == sorted(ignored), lines


def test_train_switches_must_be_0_or_1(tmp_path):
    lines = problems(_script(TRAIN, {"DRY_RUN": "yes", "KEEP_RAY": "true"}, cwd=tmp_path))
    assert about(lines, "DRY_RUN")[0].startswith("DRY_RUN=yes ") and about(lines, "KEEP_RAY"), lines


# ---- prepare-eval-data.sh, demo.sh -----------------------------------------------------------------


def test_prepare_eval_data_refuses_settings_nothing_would_read(tmp_path):
    env = {"DATA_ROOT": str(tmp_path), "LENGTH": "50 200", "LENGTHS": "50", "NUM_QUESTIONS": "4", "HF_REPO": "me/data"}
    problems = refusal(_script(SCRIPTS / "prepare-eval-data.sh", env, cwd=tmp_path))
    assert sorted(unused(problems)) == ["HF_REPO", "NUM_QUESTIONS"]
    (lengths,) = [problem for problem in problems if problem not in unused(problems) and "LENGTHS" in problem]
    assert named([lengths]) == ["LENGTH"]


@pytest.mark.parametrize("knobs", [{"LENGTHS": "50 200 800"}, {"LENGTHS": "50 200 800", "LENGTH": "50  200 800"}])
def test_prepare_eval_data_takes_lengths_as_another_spelling_of_length(tmp_path, knobs):
    """The vime example's README spells it LENGTHS: its command runs as written."""
    env = {"DATA_ROOT": str(tmp_path), "DRY_RUN": "1", **knobs}
    result = _script(SCRIPTS / "prepare-eval-data.sh", env, "--download", cwd=tmp_path)
    assert result.returncode == 1 and "error:" not in result.stderr, result.stderr
    fetched = [line[1].rsplit("/", 1)[1] for line in _lines(result.stdout, "GET ")]
    assert fetched == ["eval_50.json", "eval_200.json", "eval_800.json"]


def test_demo_checks_the_evaluators_arguments_before_installing_where_the_interpreter_can(tmp_path):
    """With an interpreter that has the packages (an earlier demo's .venv, or PYTHON) the evaluator
    itself checks its arguments before bootstrap.sh runs; nothing is installed or written."""
    env = {"VENV": str(tmp_path / "venv"), "EXTRA_EVAL_ARGS": "--no-such-flag"}
    result = _script(PROJECT_ROOT / "scripts" / "demo.sh", env, cwd=tmp_path)
    (problem,) = refusal(result)
    assert named([problem]) == ["EXTRA_EVAL_ARGS"] and "--no-such-flag" in problem
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_demo_checks_every_setting_before_it_installs_anything(tmp_path):
    """demo.sh runs bootstrap.sh (it writes .venv) only once run-eval.sh's settings are known to be good."""
    env = {"VENV": str(tmp_path / "venv"), "LENGTH": "abc", "DATA_ROOT": "/missing", "MEM_MAX_MEMORY": "-1"}
    result = _script(PROJECT_ROOT / "scripts" / "demo.sh", env, cwd=tmp_path)
    problems = refusal(result)
    assert sorted(named(problems)) == ["DATA_ROOT", "LENGTH", "MEM_MAX_MEMORY"] and unused(problems) == ["DATA_ROOT"]
    assert result.stdout == "" and list(tmp_path.iterdir()) == [], "no environment, no data"


def test_demo_installs_first_where_no_interpreter_at_hand_can_check(tmp_path):
    """A python3 without mem-agent's packages cannot check: bootstrap.sh comes first (here in its dry
    run, which prints its commands and installs nothing), then run-eval.sh, which checks."""
    bare = _python_wrapper(tmp_path / "bin" / "python3", "-S")
    env = {"PYTHON": None, "VENV": str(tmp_path / "venv"), "DRY_RUN": "1", "LENGTH": "abc"}
    result = _script(PROJECT_ROOT / "scripts" / "demo.sh", env, cwd=tmp_path, bin_dirs=[bare.parent])
    assert result.returncode != 0 and "-m venv" in result.stdout, result.stdout + result.stderr
    assert not (tmp_path / "venv").exists()


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
    (problem,) = refusal(_on_gpus(env | {"DP": "4", "TP": "2", "DRY_RUN": "0"}, tmp_path))
    assert problem.startswith("DP=4 x TP=2 ") and "4 5 6 7" in problem
    assert not (tmp_path / "runs").exists()


def test_a_port_in_use_on_the_node_is_refused_before_any_server_starts(tmp_path, gpu_node):
    """A server that cannot bind its port would fail only after the others loaded their weights."""
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = gpu_node | {"PORT": str(port), "DRY_RUN": "0"}
        (problem,) = refusal(_on_gpus(env, tmp_path))
    assert str(port) in problem and "PORT" in problem
    assert not (tmp_path / "runs").exists(), "no server log: nothing was started"


@pytest.mark.parametrize("knob", ["HEALTH_INTERVAL", "SERVE_STOP_TIMEOUT"])
def test_the_serving_waits_are_checked_and_belong_to_gpu_serving(tmp_path, gpu_node, knob):
    assert named(refusal(_on_gpus(gpu_node | {knob: "0"}, tmp_path))) == [knob]
    real_run = {name: value for name, value in gpu_node.items() if name != "DRY_RUN"}
    problems = refusal(_script(RUN_EVAL, real_run | {knob: "5"}, cwd=tmp_path))  # no GPU: the CPU stack
    assert unused(problems) == [knob]
    preview = _script(RUN_EVAL, gpu_node | {knob: "5"}, cwd=tmp_path)  # a dry run previews the GPU launch
    assert preview.returncode == 0, preview.stderr
    assert [_server(argv)[0] for argv in _lines(preview.stdout, "api_server")] == ["0"]


def test_dp_mode_needs_dp(tmp_path, gpu_node):
    assert unused(refusal(_on_gpus(gpu_node | {"DP_MODE": "router"}, tmp_path))) == ["DP_MODE"]
    problems = refusal(_on_gpus(gpu_node | {"DP": "2", "DP_MODE": "ray"}, tmp_path))
    assert named(problems) == ["DP_MODE"] and unused(problems) == []
