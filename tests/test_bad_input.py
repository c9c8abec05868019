"""User mistakes in every command: a one-line error naming what is wrong, exit status 2, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import PROJECT_ROOT

from support.scripts import run_script

SCRIPTS = PROJECT_ROOT / "examples" / "mem_agent"


def _cli(module: str, *args: str, env: dict[str, str] | None = None, stdin: bytes = b"") -> subprocess.CompletedProcess:
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEM_")} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", f"mem_agent.{module}", *args],
        input=stdin,
        capture_output=True,
        env=full_env,
        timeout=300,
    )


def _assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("eval_ruler_hqa", ["--data", "x.json"]),
        ("run_document", ["--question", "q?", "--url", "http://127.0.0.1:9"]),
    ],
)
def test_bad_mem_settings_are_reported_by_name(module, args):
    result = _cli(module, *args, env={"MEM_CHUNK_TOKENS": "0"}, stdin=b"text")
    _assert_one_line_error(result, "MEM_CHUNK_TOKENS=0 must be a positive integer (default 5000)")


def test_evaluator_names_a_non_utf8_eval_file(tmp_path):
    bad = tmp_path / "eval_3.json"
    bad.write_bytes(b'[{"context": "caf\xe9", "input": "q", "answers": ["a"]}]')
    result = _cli(
        "eval_ruler_hqa", "--data", str(bad), "--url", "http://127.0.0.1:9", "--output-dir", str(tmp_path / "o")
    )
    _assert_one_line_error(result, str(bad), "not UTF-8")


def test_evaluator_names_an_eval_file_that_is_not_an_array(tmp_path):
    bad = tmp_path / "eval_3.json"
    bad.write_text(json.dumps({"context": "c"}))
    result = _cli(
        "eval_ruler_hqa", "--data", str(bad), "--url", "http://127.0.0.1:9", "--output-dir", str(tmp_path / "o")
    )
    _assert_one_line_error(result, str(bad), "expected a JSON array")
    assert not (tmp_path / "o").exists(), "nothing written before the data is known to be readable"


def test_a_folder_given_as_input_file_is_named(tmp_path):
    result = _cli("prepare_data", "--input", str(tmp_path), "--output", str(tmp_path / "out.jsonl"))
    _assert_one_line_error(result, str(tmp_path), "--input")


def test_a_bad_url_is_refused_before_any_work(tmp_path):
    result = _cli("eval_ruler_hqa", "--data", str(tmp_path / "x.json"), "--url", "localhost:8000")
    _assert_one_line_error(result)


def test_synthetic_qa_refuses_a_non_positive_count(tmp_path):
    _assert_one_line_error(
        _cli("synthetic_qa", "--out", str(tmp_path / "q.json"), "--num-questions", "0"), "--num-questions 0"
    )


def test_build_long_context_refuses_non_positive_sizes(tmp_path):
    result = _cli(
        "build_long_context", "--input", str(tmp_path / "x.json"), "--num-docs", "0", "--out-dir", str(tmp_path)
    )
    _assert_one_line_error(result, "--num-docs")


def test_local_stack_refuses_a_folder_that_is_not_a_model(tmp_path):
    _assert_one_line_error(_cli("local_stack", "serve", "--model", str(tmp_path)), "is not a model folder")
    _assert_one_line_error(_cli("local_stack", "exec"), "exec needs a command")


def test_run_document_with_an_unknown_tokenizer_folder(tmp_path):
    result = _cli(
        "run_document", "--question", "q?", "--url", "http://127.0.0.1:9", "--tokenizer", str(tmp_path / "none")
    )
    _assert_one_line_error(result, "is not a folder")


@pytest.mark.parametrize(
    ("script", "env", "fragment"),
    [
        ("prepare-eval-data.sh", {"LENGTH": "50 abc"}, "LENGTH=50 abc "),
        ("prepare-eval-data.sh", {"BUILD_FROM": "/nonexistent.json"}, "/nonexistent.json: file not found"),
        (
            "run-qwen3-4b-train.sh",
            {"HOST_TRAINER": "megatron", "DRY_RUN": "1"},
            "HOST_TRAINER=megatron must be slime or vime",
        ),
        ("run-eval.sh", {"CONVERT": "1"}, "SINGLE_ITER"),
    ],
)
def test_scripts_reject_bad_settings_in_one_line(tmp_path, script, env, fragment):
    result = run_script(SCRIPTS / script, env, cwd=tmp_path, home=tmp_path, timeout=120)
    assert result.returncode == 2 and fragment in result.stderr, result.stderr
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (
            [{"question": "q?", "answer": " ", "context": []}] * 2,
            "no usable rows in the source (2 rows skipped: empty answer)",
        ),
        ([], "no usable rows in the source (the source has no rows)"),
    ],
)
def test_messages_read_as_words_not_raw_dicts(tmp_path, rows, words):
    source = tmp_path / "in.json"
    source.write_text(json.dumps(rows))
    result = _cli("prepare_data", "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    _assert_one_line_error(result, words)
    assert "{" not in result.stderr.decode() and "Counter" not in result.stderr.decode()
