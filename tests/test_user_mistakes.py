"""Mistakes a user makes, each reproduced: a one-line error and exit 2 before anything is started or
written, or (for the reruns) the right behaviour. The scripts run from the minimal environment of
support/scripts.py (no GPU unless a test asks for some); the Python commands run as users run
them, `python -m mem_agent.<command>`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web

from mem_agent import build_long_context, eval_ruler_hqa, synthetic_qa
from mem_agent.evaluation.suites.ruler_hqa import RULER_HQA
from support.background_app import BackgroundApp
from support.scripts import PROJECT_ROOT, SCRIPTS, named, refusal, run_script, unused, write_eval_file

RUN_EVAL = SCRIPTS / "run-eval.sh"
DEMO = PROJECT_ROOT / "scripts" / "demo.sh"
PREPARE_EVAL = SCRIPTS / "prepare-eval-data.sh"
TRAIN = SCRIPTS / "run-qwen3-4b-train.sh"
FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm"]


def _command(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m mem_agent.<module> args` with the caller's MEM_* settings left out."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith("MEM_")}
    return subprocess.run(
        [sys.executable, "-m", f"mem_agent.{module}", *args],
        env=clean | (env or {}),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The command's one `error:` line, once it is known to be a usage error (exit 2, no traceback)."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def _model_folder(root: Path) -> Path:
    model = root / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    return model


# ---- row 1, 2: SAVE_FILE is a name, OUTPUT_ROOT the place -----------------------------------------


@pytest.mark.parametrize(
    ("script", "save_file"),
    [(DEMO, "../../etc"), (RUN_EVAL, "/abs/path"), (RUN_EVAL, ".."), (RUN_EVAL, ".hidden")],
    ids=["row1-demo-dotdot", "row2-absolute", "dotdot", "leading-dot"],
)
def test_save_file_that_leaves_the_output_root_is_refused_before_anything_is_written(tmp_path, script, save_file):
    """Nothing of a run may land outside OUTPUT_ROOT/SAVE_FILE: a SAVE_FILE that is a path is a
    problem named by its variable, and the working folder stays empty."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    # VENV with no interpreter: were the check to pass, demo.sh would build its environment there.
    env = {"SAVE_FILE": save_file, "VENV": str(tmp_path / "venv")}
    problems = refusal(run_script(script, env, cwd=work))
    assert any(problem.startswith(f"SAVE_FILE={save_file} ") for problem in problems), problems
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["a", "a/b"]


def test_the_evaluator_refuses_a_results_file_that_leads_out_of_its_folder(tmp_path, make_eval_files):
    """Every writer resolves its path: a results file that is a symbolic link elsewhere is refused
    (exit 2) and what it points at is left untouched."""
    data, run_dir, elsewhere = make_eval_files(6, questions=1), tmp_path / "run", tmp_path / "elsewhere.txt"
    run_dir.mkdir()
    elsewhere.write_text("keep me")
    (run_dir / "results_6.jsonl").symlink_to(elsewhere)
    server = _RefusingServer().start()  # listening, so that the run gets as far as its files
    try:
        argv = ["--data-root", str(data), "--lengths", "6", "--output-dir", str(run_dir), "--url", server.url]
        line = _one_line_error(_command("eval_ruler_hqa", *argv, *FAST))
    finally:
        server.stop()
    assert line.startswith("error: ") and "results_6.jsonl" in line and "symbolic link" in line
    assert elsewhere.read_text() == "keep me"


# ---- rows 3, 4, 5, 14: eval data checked in full, by one checker, before any server --------------

BAD_EVAL_FILES = {
    "cut-off": (b'[{"context": "c", "input": "q", "answers": ["a"]}, {"context": "c", "inp', "is cut off"),
    "no-answers": (b'[{"context": "c", "input": "q", "answers": ["a"]}, {"context": "c", "input": "q"}]', "answers"),
    "not-utf8": (b'[{"context": "caf\xe9", "input": "q", "answers": ["a"]}]', "not UTF-8 at byte 17"),
    "zero-bytes": (b"", "is empty (0 bytes)"),
    "empty-array": (b"[]", "holds no items"),
}


@pytest.mark.parametrize("case", list(BAD_EVAL_FILES), ids=[f"row3-4-{case}" for case in BAD_EVAL_FILES])
def test_bad_eval_data_stops_run_eval_before_any_server_starts(tmp_path, case):
    """run-eval.sh serving a model (here on the CPU stack) reads every eval file in full through the
    evaluator's --check first: a bad one is a problem naming the file, and no server, no result,
    no run folder exists after it."""
    content, message = BAD_EVAL_FILES[case]
    data = tmp_path / "data"
    data.mkdir()
    write_eval_file(data / "eval_50.json", 2)
    (data / "eval_100.json").write_bytes(content)
    env = {
        "MODEL_PATH": str(_model_folder(tmp_path)),
        "DATA_ROOT": str(data),
        "LENGTH": "50 100",
        "OUTPUT_ROOT": str(tmp_path / "runs"),
    }
    begun = time.monotonic()
    problems = refusal(run_script(RUN_EVAL, env))
    assert time.monotonic() - begun < 30, "no server start was waited for"
    assert any(str(data / "eval_100.json") in p and message in p for p in problems), problems
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("case", list(BAD_EVAL_FILES), ids=[f"row5-{case}" for case in BAD_EVAL_FILES])
def test_the_evaluators_check_and_prepare_eval_datas_checker_refuse_the_same_file_alike(tmp_path, case):
    """One checker: `eval_ruler_hqa --check` reads the data, and prepare-eval-data.sh's checker
    (`python -m mem_agent.evaluation.files --check FILE`) gives the very same reason."""
    content, message = BAD_EVAL_FILES[case]
    bad = tmp_path / "eval_100.json"
    bad.write_bytes(content)
    by_evaluator = _one_line_error(_command("eval_ruler_hqa", "--check", "--data", str(bad)))
    by_checker = _one_line_error(_command("evaluation.files", "--check", str(bad)))
    assert by_evaluator == by_checker and message in by_checker and str(bad) in by_checker
    table = run_script(PREPARE_EVAL, {"DATA_ROOT": str(tmp_path), "LENGTH": "100"})
    assert table.returncode == 1 and f"eval_100.json: {by_checker.removeprefix('error: ')}" in table.stderr


def test_the_eval_check_streams_a_large_file_at_a_measured_rate(tmp_path, synthetic_file, capsys):
    """A valid file passes and the check is streamed: its speed is printed (MB/s) for the record."""
    argv = ["--input", str(synthetic_file), "--num-docs", "400", "--num-questions", "8", "--out-dir", str(tmp_path)]
    assert build_long_context.main(argv) == 0
    path = tmp_path / "eval_400.json"
    begun = time.monotonic()
    result = _command("evaluation.files", "--check", str(path))
    seconds = time.monotonic() - begun
    assert result.returncode == 0 and result.stdout.strip() == "8", result.stderr
    with capsys.disabled():
        print(f"\neval-file check: {path.stat().st_size / 1e6:.1f} MB in {seconds:.2f} s (process start included)")


# ---- row 6: a URL is reached before the run; failures say why ----------------------------------


def test_a_url_where_nothing_listens_is_one_line_before_anything_is_written(tmp_path):
    data = tmp_path / "data"
    write_eval_file(data / "eval_50.json", 2)
    env = {"URL": "http://127.0.0.1:1", "DATA_ROOT": str(data), "LENGTH": "50", "OUTPUT_ROOT": str(tmp_path / "r")}
    (problem,) = refusal(run_script(RUN_EVAL, env))
    assert problem.startswith("URL=http://127.0.0.1:1") and "127.0.0.1:1" in problem.removeprefix("URL=")
    assert not (tmp_path / "r").exists()
    # The evaluator run alone checks the same before it writes anything.
    argv = ["--data-root", str(data), "--lengths", "50", "--output-dir", str(tmp_path / "r"), "--url", env["URL"]]
    line = _one_line_error(_command("eval_ruler_hqa", *argv))
    assert line.startswith("error: --url http://127.0.0.1:1: ") and "Connection refused" in line
    assert not (tmp_path / "r").exists()


class _RefusingServer(BackgroundApp):
    """Answers every completion with HTTP 400, as a server does for a model name it does not serve."""

    def make_app(self) -> web.Application:
        async def refuse(request: web.Request) -> web.Response:
            return web.json_response({"error": "The model `nope` does not exist."}, status=400)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", refuse)
        return app


def test_failed_items_are_explained_on_the_console_with_counts_and_where_the_details_are(make_eval_files, tmp_path):
    server = _RefusingServer().start()
    try:
        data = make_eval_files(6, questions=3)
        argv = ["--data-root", str(data), "--lengths", "6", "--output-dir", str(tmp_path), "--url", server.url]
        result = _command("eval_ruler_hqa", *argv, *FAST, "--no-plot")
    finally:
        server.stop()
    assert result.returncode == 1, result.stderr
    assert "3 x " in result.stderr and "HTTP 400" in result.stderr and "does not exist" in result.stderr
    assert str(tmp_path / "results_6.jsonl") in result.stderr


# ---- row 7: MEM_* variables that are not settings ------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "suggested"),
    [("MEM_FOO", None), ("MEM_CHUNK_SIZE", "MEM_CHUNK_TOKENS")],
    ids=["row7-unknown", "row7-memagent-spelling"],
)
def test_a_mem_variable_that_is_not_a_setting_is_refused_by_scripts_and_commands(tmp_path, variable, suggested):
    """The scripts ask the evaluator's own check (one rule); the commands refuse it too, in the same
    words; MEM_CHUNK_SIZE (MemAgent's name) is pointed at MEM_CHUNK_TOKENS; MEM_ALLOW_UNKNOWN lets a
    site's own MEM_* variable through."""
    env = {variable: "100", "DRY_RUN": "1", "OUTPUT_ROOT": str(tmp_path)}
    (problem,) = refusal(run_script(RUN_EVAL, env))
    assert named([problem]) == [variable] and (suggested is None or suggested in problem)
    assert _one_line_error(_command("eval_ruler_hqa", "--check", env={variable: "100"})) == f"error: {problem}"
    allowed = run_script(RUN_EVAL, env | {"MEM_ALLOW_UNKNOWN": f"OTHER,{variable}"})
    assert allowed.returncode == 0, allowed.stderr


# ---- row 8: DATA_ROOT a file with --download -------------------------------------------------------


def test_a_data_root_that_is_a_file_is_a_problem_before_any_download(tmp_path):
    data_root = tmp_path / "afile"
    data_root.write_text("not a folder")
    result = run_script(PREPARE_EVAL, {"DATA_ROOT": str(data_root), "LENGTH": "50"}, "--download")
    assert refusal(result) == [f"DATA_ROOT={data_root}: {data_root} is a file, not a folder"]
    assert data_root.read_text() == "not a folder" and sorted(tmp_path.iterdir()) == [data_root]


# ---- row 9: DRY_RUN=1 previews any GPU layout on any machine ----------------------------------------


def test_a_dry_run_previews_an_eight_gpu_launch_on_a_machine_without_gpus(tmp_path):
    data = tmp_path / "data"
    write_eval_file(data / "eval_50.json", 2)
    env = {"DRY_RUN": "1", "MODEL_PATH": str(_model_folder(tmp_path)), "DP": "8", "DATA_ROOT": str(data)}
    env |= {"LENGTH": "50", "OUTPUT_ROOT": str(tmp_path / "runs")}
    result = run_script(RUN_EVAL, env)  # the stand-in nvidia-smi lists no GPU
    assert result.returncode == 0, result.stderr
    (server,) = _servers(result.stdout)
    assert (
        server[1] == "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" and server[server.index("--data-parallel-size") + 1] == "8"
    )
    router = run_script(RUN_EVAL, env | {"NUM_GPUS": "16", "DP_MODE": "router", "TP": "2", "PORT": "9000"})
    assert router.returncode == 0, router.stderr
    last = _servers(router.stdout)[-1]
    assert last[1] == "CUDA_VISIBLE_DEVICES=14,15" and last[last.index("--port") + 1] == "9008"
    (too_few,) = refusal(run_script(RUN_EVAL, env | {"NUM_GPUS": "4"}))
    assert too_few.startswith("DP=8 x TP=1 ") and "NUM_GPUS=4" in too_few
    assert named(refusal(run_script(RUN_EVAL, env | {"PORT": "70000"}))) == ["PORT"]
    real_run = run_script(RUN_EVAL, {k: v for k, v in env.items() if k != "DRY_RUN"} | {"NUM_GPUS": "8"})
    assert "NUM_GPUS" in unused(refusal(real_run))
    assert not (tmp_path / "runs").exists()


def _servers(stdout: str) -> list[list[str]]:
    """The vLLM servers a dry run prints, as words (`env CUDA_VISIBLE_DEVICES=... python -m vllm...`)."""
    return [shlex.split(line) for line in stdout.splitlines() if "vllm.entrypoints.openai.api_server" in line]


# ---- rows 10 to 15: the Python commands, the train script ---------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "args", "fragments"),
    [
        (
            "eval_ruler_hqa",
            ["--check", "--concurrency", "0", "--max-final", "0", "--top-p", "2"],
            ["--concurrency 0", "--max-final 0", "--top-p 2 "],
        ),
        (
            "run_document",
            ["--question", "q", "--url", "http://127.0.0.1:1", "--chunk-tokens", "0", "--temperature", "-1"],
            ["--chunk-tokens 0", "--temperature -1 "],
        ),
        ("prepare_data", ["--input", "x.json", "--output", "o.jsonl", "--num-docs", "-1", "--pool-size", "0"], None),
    ],
    ids=["row10-eval_ruler_hqa", "row10-run_document", "row10-prepare_data"],
)
def test_the_python_commands_report_every_bad_flag_at_once(tmp_path, module, args, fragments):
    line = _one_line_error(_command(module, *args))
    for fragment in fragments or ["--num-docs -1", "--pool-size 0"]:
        assert fragment in line, line


@pytest.mark.parametrize("module", ["prepare_data", "run_document"], ids=["row11-prepare_data", "run_document-json"])
def test_a_command_never_makes_the_folders_of_its_output(tmp_path, module):
    """A mistyped output path is an error naming the folder that is not there, never made."""
    source = tmp_path / "in.json"
    source.write_text(json.dumps([{"question": "q?", "answer": "a", "context": [["t", ["s."]]]}]))
    output = tmp_path / "missing" / "dir" / "x.jsonl"
    args = {
        "prepare_data": ["--input", str(source), "--output", str(output)],
        "run_document": [
            "--question",
            "q",
            "--url",
            "http://127.0.0.1:1",
            "--document",
            str(source),
            "--json",
            str(output),
        ],
    }[module]
    line = _one_line_error(_command(module, *args))
    assert f"folder {output.parent} does not exist" in line
    assert not (tmp_path / "missing").exists()


def test_a_bad_flag_is_named_as_typed_not_as_the_setting_it_overrides():
    line = _one_line_error(_command("run_document", "--question", "q", "--url", "http://x", "--chunk-tokens", "0"))
    assert line == "error: --chunk-tokens 0 must be a positive integer"
    from_env = _command("run_document", "--question", "q", "--url", "http://x", env={"MEM_CHUNK_TOKENS": "0"})
    assert "MEM_CHUNK_TOKENS=0" in _one_line_error(from_env)


def test_updates_per_rollout_that_does_not_divide_reports_no_made_up_global_batch_size():
    result = run_script(TRAIN, {"DRY_RUN": "1", "UPDATES_PER_ROLLOUT": "7"})
    (problem,) = refusal(result)
    assert named([problem]) == ["UPDATES_PER_ROLLOUT"] and "GLOBAL_BATCH_SIZE=" not in result.stderr


def test_a_non_utf8_eval_file_is_reported_at_its_byte_offset(tmp_path):
    """The bad byte is at offset 131 (after multi-byte characters, so a char count would differ)."""
    head = '[{"context": "' + "é" * 52 + '", "input": "'
    raw = head.encode() + b"\xff" + b'", "answers": ["a"]}]'
    assert len(head.encode()) == 131
    bad = tmp_path / "eval_1.json"
    bad.write_bytes(raw)
    line = _one_line_error(_command("evaluation.files", "--check", str(bad)))
    assert line == f"error: {bad}: not UTF-8 at byte 131 (invalid start byte)"


@pytest.mark.parametrize("module", ["prepare_data", "run_document"], ids=["row15-prepare_data", "row15-run_document"])
def test_an_empty_tokenizer_folder_gets_a_whole_message(tmp_path, module):
    (tmp_path / "empty").mkdir()
    (tmp_path / "in.json").write_text(json.dumps([{"question": "q?", "answer": "a", "context": [["t", ["s."]]]}]))
    args = {
        "prepare_data": ["--input", str(tmp_path / "in.json"), "--output", str(tmp_path / "o.jsonl")],
        "run_document": ["--question", "q", "--url", "http://127.0.0.1:1", "--document", str(tmp_path / "in.json")],
    }[module]
    line = _one_line_error(_command(module, *args, "--tokenizer", str(tmp_path / "empty")))
    assert line.endswith(": give a Hugging Face model folder"), line
    assert f"{tmp_path / 'empty'} holds no tokenizer (tokenizer.json, tokenizer_config.json" in line


# ---- rows 16, 17: reruns -----------------------------------------------------------------------------


def test_a_demo_rerun_with_nothing_left_starts_no_server(tmp_path, instant_server):
    """What a finished demo leaves (its data, every result, summary.json) is made here with the
    demo's own commands and settings; the rerun then finds nothing to do and starts nothing."""
    run_dir, questions = tmp_path / "demo", 2
    data = run_dir / "data"
    assert synthetic_qa.main(["--out", str(data / "synthetic_qa.json"), "--num-questions", str(4 * questions)]) == 0
    built = ["--input", str(data / "synthetic_qa.json"), "--num-docs", "6", "12", "--num-questions", str(questions)]
    assert build_long_context.main([*built, "--out-dir", str(data)]) == 0
    first = ["--data-root", str(data), "--lengths", "6", "12", "--output-dir", str(run_dir), "--protocol", "vllm"]
    first += ["--max-memory", "128", "--max-final", "64", "--url", instant_server, "--no-plot"]
    assert eval_ruler_hqa.main(first) == 0
    env = {"OUTPUT_ROOT": str(tmp_path), "LENGTH": "6 12", "DEMO_QUESTIONS": str(questions)}
    env |= {"EXTRA_EVAL_ARGS": "--no-plot"}
    results = {path.name: path.read_bytes() for path in run_dir.glob("results_*.jsonl")}
    begun = time.monotonic()
    result = run_script(RUN_EVAL, env)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - begun < 30 and not (run_dir / "servers").exists(), "no server was started"
    assert {path.name: path.read_bytes() for path in run_dir.glob("results_*.jsonl")} == results
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [entry["completed"] for entry in summary["results"]] == [2, 2] and summary["run"]["items_run"] == 4


def test_a_rerun_with_other_lengths_keeps_the_earlier_lengths_in_the_summary_and_the_plot(
    make_eval_files, tmp_path, instant_server, monkeypatch
):
    data = make_eval_files(6, 12, questions=2)
    plotted: list[list[str]] = []
    real_plot = RULER_HQA.plot

    def plot(cells, path, paper=()):  # the real plot, and the lengths it drew
        plotted.append([cell["label"] for cell in cells])
        real_plot(cells, path, paper)

    monkeypatch.setattr(RULER_HQA, "plot", plot)
    argv = ["--data-root", str(data), "--output-dir", str(tmp_path), "--url", instant_server, *FAST]
    assert eval_ruler_hqa.main([*argv, "--lengths", "12"]) == 0
    assert eval_ruler_hqa.main([*argv, "--lengths", "6"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [entry["label"] for entry in summary["results"]] == ["6", "12"]
    assert all(entry["completed"] == 2 for entry in summary["results"])
    assert plotted == [["12"], ["6", "12"]] and (tmp_path / "accuracy_vs_length.png").stat().st_size > 0
    assert summary["earlier_runs"] and summary["earlier_runs"][0]["data"] == {"12": 2}
