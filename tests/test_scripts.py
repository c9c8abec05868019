"""The shell scripts: shellcheck clean, --help, and the exact commands their dry runs print.

Every run starts from the minimal environment of support/scripts.py (nothing of the caller's shell
leaks in; a stand-in `nvidia-smi` lists no GPU). The training launch has its own module,
test_train_launch.py; the up-front checks of every script are in test_script_checks.py.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from dataclasses import fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from mem_agent.common.console import flag_name
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.evaluation.files import check_eval_file
from mem_agent.evaluation.request import EvalRequest
from support.hub_standin import HubStandin, hub_standin
from support.scripts import (
    PROJECT_ROOT,
    SCRIPTS,
    eval_items,
    refusal,
    run_script,
    write_trainer_files,
)

CONVERT = SCRIPTS / "convert-to-hf.sh"
PREPARE = SCRIPTS / "prepare-eval-data.sh"
RUN_EVAL = SCRIPTS / "run-eval.sh"
ALL_SHELL = sorted([*SCRIPTS.glob("*.sh"), *(PROJECT_ROOT / "scripts").glob("*.sh"), PROJECT_ROOT / ".ci" / "run"])
SECRET = "wandb-secret-value-0123456789"


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
    result = run_script(script, {}, "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage:"), result.stderr


def test_run_eval_help_lists_each_evaluator_flag_that_names_a_variable_with_the_launchs_default():
    """run-eval.sh's knobs of the evaluator's flags are made from the flags' fields (evaluation/request.py):
    a field that names a variable is a setting, shown with its flag and run-eval.sh's default."""
    text = " ".join(run_script(RUN_EVAL, {}, "--help").stdout.split())
    for field in fields(EvalRequest):
        if field.metadata["env"]:
            launch_default = field.metadata["launch_default"]
            default = field.default if launch_default is None else launch_default
            shown = "none" if default is None else default
            assert f"{field.metadata['env']} {flag_name(field)}: " in text, field.name
            assert f"default: {shown})" in text, field.name


@pytest.mark.parametrize(
    "script",
    [s for s in ALL_SHELL if s.suffix == ".sh" and s.name not in ("_common.sh", "test.sh")],  # test.sh: pytest's
    ids=lambda s: s.name,
)
def test_an_unknown_argument_is_a_usage_error_that_starts_nothing(script):
    result = run_script(script, {"DRY_RUN": "1"}, "--no-such-flag")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--no-such-flag" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_no_script_stops_processes_by_name_or_hard_codes_root():
    """`pkill`, `killall` and `ray stop` hit other users' processes; /root is one machine's layout."""
    for script in SCRIPTS.glob("*.sh"):
        code = "\n".join(line for line in script.read_text().splitlines() if not line.lstrip().startswith("#"))
        for forbidden in ("pkill", "killall", "ray stop", "/root"):
            assert forbidden not in code, f"{script.name}: {forbidden}"


# ---- convert-to-hf.sh -----------------------------------------------------------------------------


@pytest.fixture
def checkpoints(tmp_path) -> dict[str, str]:
    """A slime checkout with its converter, two saved iterations (49 already converted), the HF model."""
    env = write_trainer_files(tmp_path).env("slime")
    for iteration in ("iter_0000049", "iter_0000099"):
        (Path(env["SAVE_PATH"]) / iteration).mkdir(parents=True)
    (tmp_path / "hf_out" / "iter_0000049").mkdir(parents=True)
    (tmp_path / "hf_out" / "iter_0000049" / "config.json").write_text("{}")
    return env | {"OUT_ROOT": str(tmp_path / "hf_out"), "DRY_RUN": "1"}


def _problem_lines(stderr: str) -> list[str]:
    """The problems of a refusal, one per `  - ` line."""
    return [line[4:] for line in stderr.splitlines() if line.startswith("  - ")]


def _conversions(stdout: str) -> list[list[str]]:
    return [shlex.split(line) for line in stdout.splitlines() if "convert_torch_dist_to_hf.py" in line]


def test_convert_skips_what_is_converted_and_converts_the_rest(checkpoints):
    result = run_script(CONVERT, checkpoints)
    assert result.returncode == 0, result.stderr
    (argv,) = _conversions(result.stdout)  # iter_0000049 has config.json: not converted again
    flags = " ".join(argv)
    assert argv[:2] == ["env", f"PYTHONPATH={checkpoints['MEGATRON_PATH']}:{checkpoints['TRAINER_ROOT']}"]
    assert f"--input-dir {checkpoints['SAVE_PATH']}/iter_0000099" in flags
    assert f"--output-dir {checkpoints['OUT_ROOT']}/iter_0000099 --origin-hf-dir {checkpoints['HF_CKPT']}" in flags
    assert "--vocab-size 151936" in flags, "Megatron's vocabulary padding is cut back to the model's"
    assert "--force" not in argv


def test_convert_redoes_an_interrupted_conversion_with_force(checkpoints):
    (Path(checkpoints["OUT_ROOT"]) / "iter_0000099").mkdir()
    result = run_script(CONVERT, checkpoints)
    (argv,) = _conversions(result.stdout)
    assert argv[argv.index("--output-dir") + 1].endswith("iter_0000099") and argv[-1] == "--force"


def test_convert_writes_next_to_the_save_folder_by_default(checkpoints):
    env = {k: v for k, v in checkpoints.items() if k != "OUT_ROOT"}
    (argv,) = _conversions(run_script(CONVERT, {**env, "SINGLE_ITER": "49"}).stdout)
    assert argv[argv.index("--output-dir") + 1] == f"{checkpoints['SAVE_PATH']}_hf/iter_0000049"


@pytest.mark.parametrize("single", ["99", "iter_0000099", "0099"])
def test_convert_a_single_iteration_by_number_or_name(checkpoints, single):
    result = run_script(CONVERT, {**checkpoints, "SINGLE_ITER": single})
    assert result.returncode == 0
    (argv,) = _conversions(result.stdout)
    assert argv[argv.index("--input-dir") + 1] == f"{checkpoints['SAVE_PATH']}/iter_0000099"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"SINGLE_ITER": "7", "DRY_RUN": "0"}, "iter_0000007"),
        ({"SINGLE_ITER": "x7"}, "SINGLE_ITER=x7"),
        ({"HF_CKPT": "/nonexistent", "DRY_RUN": "0"}, "HF_CKPT=/nonexistent"),
        ({"VOCAB_SIZE": "big"}, "VOCAB_SIZE=big"),
        ({"DRY_RUN": "maybe"}, "DRY_RUN=maybe"),
        ({"OUT_ROOT": "/tmp/a\nb"}, "OUT_ROOT"),
    ],
)
def test_convert_input_mistakes_are_one_problem_naming_the_setting(checkpoints, change, named):
    result = run_script(CONVERT, {**checkpoints, **change})
    assert result.returncode == 2, result.stderr
    assert len(_problem_lines(result.stderr)) == 1 and named in _problem_lines(result.stderr)[0]
    assert not _conversions(result.stdout) and "Traceback" not in result.stderr


def test_convert_without_checkpoints_or_model_lists_both_problems(checkpoints, tmp_path):
    empty = tmp_path / "empty_save"
    empty.mkdir()
    env = {**checkpoints, "SAVE_PATH": str(empty), "HF_CKPT": "/nonexistent", "DRY_RUN": "0"}
    result = run_script(CONVERT, env)
    assert result.returncode == 2
    problems = _problem_lines(result.stderr)
    assert sorted(problem.split()[0].rstrip(":") for problem in problems) == [
        "HF_CKPT=/nonexistent",
        f"SAVE_PATH={empty}",
    ]


def test_convert_needs_the_trainers_converter(checkpoints, tmp_path):
    (tmp_path / "bare").mkdir()
    result = run_script(CONVERT, {**checkpoints, "TRAINER_ROOT": str(tmp_path / "bare"), "DRY_RUN": "0"})
    assert result.returncode == 2
    assert _problem_lines(result.stderr)[0].startswith(str(tmp_path / "bare" / "tools/convert_torch_dist_to_hf.py"))


def test_convert_needs_megatron_and_a_dry_run_says_it_is_missing(checkpoints, tmp_path):
    env = {**checkpoints, "MEGATRON_PATH": str(tmp_path / "no_megatron")}
    result = run_script(CONVERT, env | {"DRY_RUN": "0"})
    assert result.returncode == 2
    assert [line.split(":")[0] for line in _problem_lines(result.stderr)] == [f"MEGATRON_PATH={tmp_path}/no_megatron"]
    dry = run_script(CONVERT, env)
    assert dry.returncode == 0 and f"MEGATRON_PATH={tmp_path}/no_megatron" in dry.stderr and _conversions(dry.stdout)


@pytest.mark.parametrize(
    "config",
    ["{not json", "[151936]", '{"hidden_size": 2560}', '{"text_config": [151936]}'],
    ids=["malformed", "not_an_object", "no_vocab_size", "text_config_not_an_object"],
)
def test_a_config_json_that_cannot_give_the_vocabulary_is_one_problem_before_anything_runs(checkpoints, config):
    (Path(checkpoints["HF_CKPT"]) / "config.json").write_text(config)
    result = run_script(CONVERT, checkpoints)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (problem,) = _problem_lines(result.stderr)
    assert problem.startswith(f"HF_CKPT={checkpoints['HF_CKPT']}: {checkpoints['HF_CKPT']}/config.json")
    assert not _conversions(result.stdout)
    assert run_script(CONVERT, checkpoints | {"VOCAB_SIZE": "151936"}).returncode == 0, "VOCAB_SIZE set: not read"


def test_convert_reads_a_vlms_vocabulary_from_its_text_config(checkpoints):
    (Path(checkpoints["HF_CKPT"]) / "config.json").write_text(json.dumps({"text_config": {"vocab_size": 1000}}))
    (argv,) = _conversions(run_script(CONVERT, checkpoints).stdout)
    assert argv[argv.index("--vocab-size") + 1] == "1000"


# ---- prepare-eval-data.sh -------------------------------------------------------------------------


def _status_table(stdout: str) -> dict[str, list[str]]:
    """The script's closing table: length -> its cells."""
    lines = stdout.splitlines()
    header = max(i for i, line in enumerate(lines) if line.split("|")[0].strip() == "length")
    return {line.split("|")[0].strip(): [cell.strip() for cell in line.split("|")] for line in lines[header + 1 :]}


def test_prepare_eval_data_reports_present_missing_and_invalid_files(tmp_path):
    root = tmp_path / "ruler"
    root.mkdir()
    (root / "eval_50.json").write_text(eval_items(3))
    (root / "eval_100.json").write_text('[{"context": "c"}]')
    (root / "eval_400.json").write_text("[]")
    result = run_script(PREPARE, {"DATA_ROOT": str(root), "LENGTH": "50 100 200 400"})
    assert result.returncode == 1
    table = _status_table(result.stdout)
    assert table["50"][1:3] == ["present", "3"] and table["50"][3].endswith("B")
    assert table["100"][1] == "invalid" and table["200"][1:4] == ["missing", "-", "-"]
    assert table["400"][1] == "invalid"
    for n in (100, 400):  # each invalid file's reason: the evaluator's checker's own
        assert f"eval_{n}.json: {_checker_says(root / f'eval_{n}.json')}\n" in result.stderr
    assert (root / "eval_100.json").exists(), "an invalid file is never deleted"


def _checker_says(path: Path) -> str:
    """What the one eval-file checker (evaluation/files.check_eval_file) says of a bad file."""
    with pytest.raises(DataFormatError) as refused:
        check_eval_file(path)
    return str(refused.value)


def test_prepare_eval_data_succeeds_when_every_length_is_present(tmp_path):
    for n in (50, 100):
        (tmp_path / f"eval_{n}.json").write_text(eval_items(2))
    result = run_script(PREPARE, {"DATA_ROOT": str(tmp_path), "LENGTH": "50 100"})
    assert result.returncode == 0, result.stderr
    assert [row[1] for row in _status_table(result.stdout).values()] == ["present", "present"]


def test_prepare_eval_data_builds_missing_files_from_raw_rows(tmp_path, synthetic_file):
    env = {"DATA_ROOT": str(tmp_path / "ruler"), "LENGTH": "20 40", "NUM_QUESTIONS": "4"}
    result = run_script(PREPARE, env, "--build-from", str(synthetic_file))
    assert result.returncode == 0, result.stderr
    table = _status_table(result.stdout)
    assert table["20"][1:3] == ["built", "4"] and table["40"][1:3] == ["built", "4"]


def test_prepare_eval_data_a_build_that_fails_marks_its_lengths_and_writes_nothing(tmp_path):
    """The builder runs in-process: its refusal of the raw file is one line naming it, exit 1."""
    raw = tmp_path / "raw.json"
    raw.write_text("[]")
    result = run_script(PREPARE, {"DATA_ROOT": str(tmp_path / "ruler"), "LENGTH": "20 40"}, "--build-from", str(raw))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert [row[1] for row in _status_table(result.stdout).values()] == ["build failed", "build failed"]
    assert any(line.startswith("error: ") and str(raw) in line for line in result.stderr.splitlines())
    assert not list((tmp_path / "ruler").glob("eval_*"))


def test_prepare_eval_data_build_dry_run_builds_only_the_missing_lengths(tmp_path):
    (tmp_path / "eval_50.json").write_text(eval_items(1))
    raw = tmp_path / "raw.json"
    raw.write_text("[]")
    env = {"DATA_ROOT": str(tmp_path), "LENGTH": "50 100 200", "DRY_RUN": "1"}
    result = run_script(PREPARE, env, "--build-from", str(raw))
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
    result = run_script(PREPARE, env, "--download")
    (line,) = [shlex.split(line) for line in result.stdout.splitlines() if line.strip().startswith("GET ")]
    assert line[1] == "https://mirror.example/datasets/BytedTsinghua-SIA/hotpotqa/resolve/main/eval_50.json"
    assert line[3] == str(tmp_path / "ruler" / "eval_50.json")
    assert SECRET not in result.stdout + result.stderr
    assert not (tmp_path / "ruler").exists(), "a dry run writes nothing"


def test_prepare_eval_data_refuses_download_and_build_together(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text("[]")
    result = run_script(PREPARE, {"DATA_ROOT": str(tmp_path)}, "--download", "--build-from", str(raw))
    (problem,) = refusal(result)
    assert "--download" in problem and "--build-from" in problem and result.stdout == ""


def _hub_env(hub_url: str, root: Path, lengths: str, token: str | None) -> dict[str, str]:
    env = {"DATA_ROOT": str(root), "LENGTH": lengths, "HF_ENDPOINT": hub_url, "HF_HOME": str(root.parent / "hf")}
    return env | ({"HF_TOKEN": token} if token else {})


@pytest.mark.parametrize("token", [SECRET, None], ids=["with_token", "without_token"])
def test_prepare_eval_data_downloads_checks_and_keeps_only_good_files(tmp_path, token):
    """A file is given its name only after it passed the check; a token arrives as a header; a
    file that was there (even one named like a temporary file) is left as it was."""
    root = tmp_path / "ruler"
    root.mkdir()
    theirs = root / "eval_100.json.partial"
    theirs.write_text("not ours")
    (tmp_path / "eval_50.json").write_text(eval_items(5))
    (tmp_path / "eval_100.json").write_text('[{"input": "q"}]')
    served = {name: tmp_path / name for name in ("eval_50.json", "eval_100.json")}
    with hub_standin("BytedTsinghua-SIA/hotpotqa", served) as hub:
        result = run_script(PREPARE, _hub_env(hub.url, root, "50 100 200", token), "--download", timeout=120)
    table = _status_table(result.stdout)
    assert table["50"][1:3] == ["downloaded", "5"]
    assert table["100"][1] == "download failed" and table["200"][1] == "download failed"
    reasons = {line.split(":")[0]: line for line in result.stderr.splitlines() if line.startswith("eval_")}
    assert result.returncode == 1 and _checker_says_of(b'[{"input": "q"}]', tmp_path) in reasons["eval_100.json"]
    assert "404" in reasons["eval_200.json"]
    assert sorted(p.name for p in root.iterdir()) == ["eval_100.json.partial", "eval_50.json"], "nothing of ours left"
    assert theirs.read_text() == "not ours" and (root / "eval_50.json").read_text() == eval_items(5)
    assert _sent_to_the_dataset(hub) == {f"Bearer {token}" if token else None}
    assert SECRET not in result.stdout + result.stderr


def _sent_to_the_dataset(hub: HubStandin) -> set[str | None]:
    """The Authorization headers of the requests for the dataset's files (huggingface_hub asks the
    endpoint for other things of its own, without a token)."""
    return {auth for request, auth in zip(hub.requests, hub.authorization, strict=True) if "/datasets/" in request}


def _checker_says_of(content: bytes, folder: Path) -> str:
    """The checker's reason for a file of this content, without its path (a download's temporary name)."""
    probe = folder / "probe" / "eval_1.json"
    probe.parent.mkdir(exist_ok=True)
    probe.write_bytes(content)
    return _checker_says(probe).removeprefix(f"{probe}: ")


class _Storage(BaseHTTPRequestHandler):
    """The storage host the hub redirects a large file to: records the Authorization header it got."""

    served: ClassVar[dict[str, bytes]] = {}
    seen: ClassVar[list[str | None]] = []

    def do_GET(self):
        type(self).seen.append(self.headers.get("Authorization"))
        body = self.served[self.path.lstrip("/")]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_token_never_reaches_the_storage_host_the_hub_redirects_to(tmp_path):
    """The hub answers a large file with a redirect to another host (127.0.0.2 here): the token is
    sent to the hub, never to that host."""
    (tmp_path / "eval_50.json").write_text(eval_items(3))
    _Storage.served, _Storage.seen = {"eval_50.json": (tmp_path / "eval_50.json").read_bytes()}, []
    storage = ThreadingHTTPServer(("127.0.0.2", 0), _Storage)
    threading.Thread(target=storage.serve_forever, daemon=True).start()
    root = tmp_path / "ruler"
    try:
        files = {"eval_50.json": tmp_path / "eval_50.json"}
        with hub_standin("BytedTsinghua-SIA/hotpotqa", files, f"http://127.0.0.2:{storage.server_address[1]}") as hub:
            result = run_script(PREPARE, _hub_env(hub.url, root, "50", SECRET), "--download", timeout=120)
    finally:
        storage.shutdown()
        storage.server_close()
    assert result.returncode == 0, result.stderr
    assert (root / "eval_50.json").read_text() == eval_items(3)
    assert _sent_to_the_dataset(hub) == {f"Bearer {SECRET}"} and _Storage.seen == [None]


def test_a_hub_that_accepts_and_never_answers_fails_the_download_after_hub_timeout(tmp_path):
    """The connection is accepted (the listening socket's backlog) and no byte ever comes back."""
    root = tmp_path / "ruler"
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        result = run_script(PREPARE, _hub_env(endpoint, root, "50", None) | {"HUB_TIMEOUT": "1"}, "--download")
    assert time.monotonic() - started < 30
    assert result.returncode == 1 and _status_table(result.stdout)["50"][1] == "download failed"
    (reason,) = [line for line in result.stderr.splitlines() if line.startswith("eval_50.json:")]
    assert endpoint in reason and "HUB_TIMEOUT" in reason
    assert list(root.iterdir()) == [], "nothing of ours left"


# ---- run-eval.sh and bootstrap.sh (dry runs) ------------------------------------------------------


def test_run_eval_demo_dry_run_builds_synthetic_data_and_evaluates_inside_the_local_stack(tmp_path):
    result = run_script(RUN_EVAL, {"DRY_RUN": "1", "OUTPUT_ROOT": str(tmp_path)})
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
    env = {"DRY_RUN": "1", "MODEL_PATH": str(model), "DATA_ROOT": str(data), "LENGTH": "50"}
    result = run_script(RUN_EVAL, env)  # the stand-in nvidia-smi lists no GPU
    assert result.returncode == 0, result.stderr
    stack = next(line for line in result.stdout.splitlines() if "mem_agent.local_stack exec" in line)
    assert f"--model {model}" in stack and "--lengths 50" in stack


@pytest.mark.server
def test_run_eval_against_a_running_server_writes_results(stack, tmp_path, make_eval_files):
    data = make_eval_files(8, questions=2, out=tmp_path / "data")
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
    result = run_script(RUN_EVAL, env, home=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len((tmp_path / "run" / "results_8.jsonl").read_text().splitlines()) == 2
    assert (tmp_path / "run" / "summary.json").exists() and (tmp_path / "run" / "accuracy_vs_length.png").exists()


def test_run_eval_missing_data_points_to_prepare_eval_data(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    result = run_script(RUN_EVAL, {"MODEL_PATH": str(model), "DATA_ROOT": str(tmp_path / "none"), "LENGTH": "50"})
    assert result.returncode == 2 and "prepare-eval-data.sh --download" in result.stderr


def test_bootstrap_dry_run_installs_torch_first_then_the_package(tmp_path):
    result = run_script(PROJECT_ROOT / "scripts" / "bootstrap.sh", {"DRY_RUN": "1", "VENV": str(tmp_path / "venv")})
    lines = [line for line in result.stdout.splitlines() if "pip" in line]
    assert "torch==2.13.0" in lines[1] and "-e" in lines[2] and "uninstall" in lines[3]


def test_test_sh_refuses_a_skip_lint_other_than_0_or_1_before_it_sets_anything_up(tmp_path):
    """SKIP_LINT takes 0 or 1; anything else is refused before bootstrap.sh sets anything up."""
    env = {"SKIP_LINT": "yes", "VENV": str(tmp_path / "venv"), "PYTHON": str(tmp_path / "no_python")}
    result = run_script(PROJECT_ROOT / "scripts" / "test.sh", env, timeout=60)
    assert result.returncode == 2 and "SKIP_LINT=yes" in result.stderr
    assert result.stdout == "" and not (tmp_path / "venv").exists()
