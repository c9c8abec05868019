"""run-eval.sh and prepare-eval-data.sh with DRY_RUN=1 print the launch they would run: for the
same settings, the same commands as recorded in tests/data/dry_runs/<case>.txt.

The recorded commands are the scripts' output with paths normalised (<ROOT> the case's folder, <PY>
the interpreter, <REPO> the checkout). Commands are compared as words (shell quoting may differ);
within a command, the flags of the evaluator may come in another order (their groups are built by
concern), each with the same values. Lines meant for a person are not compared.
"""

from __future__ import annotations

import importlib
import json
import shlex
import sys
from pathlib import Path

import pytest

from mem_agent import cli
from mem_agent.settings.command import flag_of
from mem_agent.settings.declared import env_name
from support.scripts import (
    PROJECT_ROOT,
    SCRIPTS,
    named,
    refusal,
    run_command,
    run_script,
    write_eval_file,
    write_trainer_files,
)

RECORDED = Path(__file__).parent / "data" / "dry_runs"
COMMANDS = ("<PY> ", "env ", "<REPO>/", "GET ")


def _cases(root: Path) -> dict[str, tuple[Path, dict[str, str], list[str]]]:
    files = write_trainer_files(root / "t")
    (root / "t" / "save" / "iter_0000099").mkdir(parents=True)
    data, model = root / "data", root / "model"
    for n in (50, 200):
        write_eval_file(data / f"eval_{n}.json", 3)
    model.mkdir()
    (model / "config.json").write_text("{}")
    ruler = root / "ruler"
    ruler.mkdir()
    for split in ("vt", "qa_2"):
        item = {"index": 0, "input": "Which variables hold 5?", "context": "Variable AB holds 5.", "outputs": ["AB"]}
        (ruler / f"eval_{split}_8192.json").write_text(json.dumps([item]))
    suite = {"SUITE": "hqa ruler", "RULER_ROOT": str(ruler), "RULER_SPLITS": "vt qa_2", "RULER_LENGTHS": "8192"}
    served = {"DRY_RUN": "1", "MODEL_PATH": str(model), "DATA_ROOT": str(data)}
    run_eval = SCRIPTS / "run-eval.sh"
    return {
        "eval_demo": (run_eval, {"DRY_RUN": "1"}, []),
        "eval_gpu_dp_vllm": (run_eval, served | {"LENGTH": "50 200", "NUM_GPUS": "8", "DP": "8"}, []),
        "eval_gpu_dp_router": (
            run_eval,
            served
            | {"LENGTH": "50", "NUM_GPUS": "8", "DP": "4", "TP": "2", "DP_MODE": "router"}
            | {"CONCURRENCY": "64", "EVAL_TEMPERATURE": "0.5"},
            [],
        ),
        "eval_cpu_model": (run_eval, served | {"LENGTH": "50", "EXTRA_EVAL_ARGS": "--save-trajectories"}, []),
        "eval_suite_all": (run_eval, served | {"LENGTH": "50"} | suite, []),
        "eval_convert": (
            run_eval,
            files.env("slime")
            | {"DRY_RUN": "1", "CONVERT": "1", "SINGLE_ITER": "99", "DATA_ROOT": str(data), "LENGTH": "50"}
            | {"NUM_GPUS": "1"},
            [],
        ),
        "prep_download": (
            SCRIPTS / "prepare-eval-data.sh",
            {"DRY_RUN": "1", "DATA_ROOT": str(root / "dl"), "LENGTH": "50 200"},
            ["--download"],
        ),
    }


def _words(command: str) -> list[str]:
    """A command's words; each segment's flags (a `--flag` and the values after it) in sorted order."""
    words, segments, current = shlex.split(command), [], []
    for word in words:
        if word == "--":
            segments.append(current)
            current = []
        else:
            current.append(word)
    segments.append(current)
    normal = []
    for segment in segments:
        first = next((i for i, word in enumerate(segment) if word.startswith("--")), len(segment))
        flags, group = [], []
        for word in segment[first:]:
            if word.startswith("--") and group:
                flags.append(group)
                group = []
            group.append(word)
        flags += [group] if group else []
        normal.append(segment[:first] + [word for flag in sorted(flags) for word in flag])
    return [word for segment in normal for word in [*segment, "--"]][:-1]


def _commands(stdout: str, root: Path) -> list[list[str]]:
    text = stdout.replace(str(root), "<ROOT>").replace(sys.executable, "<PY>").replace(str(PROJECT_ROOT), "<REPO>")
    return [_words(line.strip()) for line in text.splitlines() if line.strip().startswith(COMMANDS)]


CASES = [
    "eval_demo",
    "eval_gpu_dp_vllm",
    "eval_gpu_dp_router",
    "eval_cpu_model",
    "eval_suite_all",
    "eval_convert",
    "prep_download",
]


@pytest.mark.parametrize("case", CASES)
def test_a_dry_run_prints_the_recorded_commands(tmp_path, case):
    script, env, args = _cases(tmp_path)[case]
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = run_script(script, env, *args, cwd=cwd)
    assert result.returncode == (1 if case == "prep_download" else 0), result.stderr
    recorded = (RECORDED / f"{case}.txt").read_text().splitlines()
    assert _commands(result.stdout, tmp_path) == [_words(line) for line in recorded]
    assert not (cwd / "runs").exists() and not (tmp_path / "dl").exists(), "a dry run writes nothing"


def test_the_comparison_sees_a_changed_value_and_a_missing_flag():
    recorded = "<PY> -m mem_agent.eval_ruler_hqa --lengths 50 200 --protocol vllm"
    assert _words(recorded) == _words("<PY> -m mem_agent.eval_ruler_hqa --protocol vllm --lengths 50 200")
    assert _words(recorded) != _words("<PY> -m mem_agent.eval_ruler_hqa --lengths 50 --protocol vllm")
    assert _words(recorded) != _words("<PY> -m mem_agent.eval_ruler_hqa --lengths 50 200")


def _as_flags(command: str, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """(the flags of `command`'s settings that `env` sets, the rest of `env`): SAVE_FILE=x as
    --save-file=x (the form a value starting with `-` needs), DRY_RUN=1 as --dry-run."""
    fields = {
        env_name(info): info
        for info in importlib.import_module(cli.COMMANDS[command]).COMMAND.model.model_fields.values()
    }
    flags = []
    for name, value in env.items():
        if name in fields:
            switch = fields[name].annotation is bool
            flags += [flag_of(fields[name])] if switch else [f"{flag_of(fields[name])}={value}"]
    return flags, {name: value for name, value in env.items() if name not in fields}


@pytest.mark.parametrize("case", CASES)
def test_the_command_given_flags_prints_what_the_script_given_variables_does(tmp_path, case):
    """`mem-agent <command> --length 50` runs as `LENGTH=50 bash <command>.sh`: the same commands."""
    script, env, args = _cases(tmp_path)[case]
    command = script.stem
    flags, rest = _as_flags(command, env)
    assert flags and "--dry-run" in flags
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = run_command([sys.executable, "-m", "mem_agent", command, *flags, *args], rest, cwd=cwd)
    assert result.returncode == (1 if case == "prep_download" else 0), result.stderr
    recorded = (RECORDED / f"{case}.txt").read_text().splitlines()
    assert _commands(result.stdout, tmp_path) == [_words(line) for line in recorded]


def test_a_flag_given_to_the_script_wins_over_its_variable(tmp_path):
    """The scripts pass their arguments on: `LENGTH="50 200" bash run-eval.sh --length 50` runs 50 alone."""
    result = run_script(SCRIPTS / "run-eval.sh", {"DRY_RUN": "1", "LENGTH": "50 200"}, "--length", "50", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (evaluate,) = [shlex.split(line) for line in result.stdout.splitlines() if "mem_agent.eval_ruler_hqa" in line]
    after = evaluate[evaluate.index("--lengths") + 1 :]
    assert after[: next(i for i, word in enumerate(after) if word.startswith("--"))] == ["50"]


@pytest.mark.parametrize(
    ("command", "argv", "variable"),
    [
        ("run-eval", ["--dry-run", "--length", "abc"], "LENGTH"),
        ("prepare-eval-data", ["--length", "0"], "LENGTH"),
        ("convert-to-hf", ["--dry-run", "--vocab-size", "big"], "VOCAB_SIZE"),
        ("train", ["--dry-run", "--lr", "0"], "LR"),
    ],
)
def test_a_bad_flag_value_is_the_one_problem_naming_its_setting(tmp_path, command, argv, variable):
    """A flag's value passes the variable's checks: refused in the one message (exit 2), nothing started."""
    result = run_command([sys.executable, "-m", "mem_agent", command, *argv], {}, cwd=tmp_path)
    problems = refusal(result)
    assert variable in named(problems), problems
    assert list(tmp_path.iterdir()) == [], "nothing written"
