"""One reading of every number and switch a person gives, as a variable or as a flag.

A setting that passes in one spelling and fails in another is a trap: `MEM_CHUNK_TOKENS=1_000` and
`--chunk-tokens 1_000` must both be refused, and `12` both taken. Every argument parser of the
package is made by `common.console.command_parser` (no abbreviations, so a prefix of `--force`
replaces nothing), and every number flag has bounds (common/numbers.py). Values echoed back on the
terminal show their control characters escaped.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from mem_agent import build_long_context, cli
from mem_agent.common.numbers import INT_LIMIT, SEED_LIMIT, NumberError, parse_integer, parse_number
from mem_agent.common.printable import shell_line
from mem_agent.common.usage import Problems, UsageError
from mem_agent.evaluation.hqa_files import PrepareSettings
from mem_agent.evaluation.request import parse_request
from mem_agent.settings.command import read
from mem_agent.settings.config import config_problems
from mem_agent.settings.report import settings_lines
from support.prompt_files import write_template_file
from support.scripts import SCRIPTS, named, refusal, run_script

PACKAGE = PROJECT_ROOT / "examples" / "mem_agent"
FACTORY = PACKAGE / "common" / "console.py"
ESCAPES = "\x1b[2J\x07"  # clear the screen, ring the bell

# ---- one parser for every command line ----------------------------------------------------------------------------


def _parser_misuses(path: Path) -> list[str]:
    """Where `path` makes a parser other than through command_parser, or gives a flag a bare int/float type."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "ArgumentParser":
                found.append(f"{path.name}:{node.lineno}: ArgumentParser(...): use command_parser")
            for keyword in node.keywords:
                bare = isinstance(keyword.value, ast.Name) and keyword.value.id in ("int", "float")
                if name == "add_argument" and keyword.arg == "type" and bare:
                    found.append(f"{path.name}:{node.lineno}: type={keyword.value.id}: use common.numbers' types")
        elif isinstance(node, ast.ClassDef):
            bases = [base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "") for base in node.bases]
            if "ArgumentParser" in bases:
                found.append(f"{path.name}:{node.lineno}: a subclass of ArgumentParser")
    return found


def test_every_parser_is_made_by_the_factory_and_no_flag_reads_a_bare_int_or_float():
    misuses = [misuse for path in sorted(PACKAGE.rglob("*.py")) if path != FACTORY for misuse in _parser_misuses(path)]
    assert misuses == []


def test_the_check_sees_a_parser_made_directly(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--n', type=int)\n")
    assert len(_parser_misuses(probe)) == 2


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_no_command_takes_a_prefix_of_a_flag(name, capsys):
    """`--hel` would be --help (exit 0) where abbreviations are allowed: every command refuses it, exit 2."""
    with pytest.raises(SystemExit) as refused:
        cli.main([name, "--hel"])
    assert refused.value.code == 2 and "usage:" not in capsys.readouterr().out


def test_a_prefix_of_force_replaces_no_file(tmp_path, capsys):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps([{"question": "q?", "answer": "a", "context": [["t", ["s."]]]}]))
    existing = tmp_path / "out" / "eval_1.json"
    existing.parent.mkdir()
    existing.write_text("kept")
    argv = ["--input", str(raw), "--num-docs", "1", "--num-questions", "1", "--out-dir", str(existing.parent)]
    with pytest.raises(SystemExit) as refused:
        build_long_context.main([*argv, "--forc"])
    assert refused.value.code == 2 and "--forc" in capsys.readouterr().err
    assert existing.read_text() == "kept"


# ---- the same value, as a variable and as a flag -----------------------------------------------------------------

REFUSED = ["1_000", "\u0661\u0662", "99999999999", "+5", "5.0", "0x10", "1e3"]  # ١٢: Arabic-Indic digits


def _variable_problems(model: type, variable: str, value: str) -> list[str]:
    problems = Problems()
    read(model, {variable: value}, problems)
    return problems.found


def _evaluator_flag_problems(flag: str, value: str) -> list[str]:
    try:
        parse_request([flag, value], raising=True)
    except UsageError as error:
        return error.problems
    return []


def _builder_seed_problems(value: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    try:
        build_long_context.build_parser().parse_args(
            ["--input", "x", "--num-docs", "1", "--out-dir", "o", "--seed", value]
        )
    except SystemExit:
        return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    return []


KNOBS = {
    "MEM_CHUNK_TOKENS / --chunk-tokens": (
        lambda value, capsys: config_problems({"MEM_CHUNK_TOKENS": value}),
        lambda value, capsys: _evaluator_flag_problems("--chunk-tokens", value),
    ),
    "SEED / build_long_context --seed": (
        lambda value, capsys: _variable_problems(PrepareSettings, "SEED", value),
        _builder_seed_problems,
    ),
}


@pytest.mark.parametrize("knob", sorted(KNOBS))
@pytest.mark.parametrize("value", REFUSED)
def test_a_value_the_variable_refuses_the_flag_refuses_too(knob, value, capsys):
    variable, flag = KNOBS[knob]
    assert variable(value, capsys) and flag(value, capsys), f"{knob} {value!r}: both must refuse it"


@pytest.mark.parametrize("knob", sorted(KNOBS))
def test_a_value_the_variable_takes_the_flag_takes_too(knob, capsys):
    variable, flag = KNOBS[knob]
    assert variable("12", capsys) == [] and flag("12", capsys) == []


EVALUATOR_VARIABLES = {
    "CONCURRENCY": "--concurrency",
    "QUESTIONS_IN_FLIGHT": "--questions-in-flight",
    "LIMIT": "--limit",
}


@pytest.mark.parametrize("first", range(0, len(REFUSED), len(EVALUATOR_VARIABLES)))
def test_run_evals_evaluator_variables_refuse_what_the_evaluators_flags_refuse(tmp_path, first):
    """CONCURRENCY, QUESTIONS_IN_FLIGHT and LIMIT go to the evaluator's flags as written: a value the flag
    refuses, run-eval.sh refuses by the variable's name, before anything starts."""
    given = dict(zip(EVALUATOR_VARIABLES, REFUSED[first:], strict=False))
    assert all(_evaluator_flag_problems(EVALUATOR_VARIABLES[name], value) for name, value in given.items())
    problems = refusal(run_script(SCRIPTS / "run-eval.sh", given | {"DRY_RUN": "1"}, cwd=tmp_path))
    assert sorted(named(problems)) == sorted(given), problems


def test_run_eval_passes_the_value_its_evaluator_flags_take(tmp_path):
    result = run_script(
        SCRIPTS / "run-eval.sh", dict.fromkeys(EVALUATOR_VARIABLES, "12") | {"DRY_RUN": "1"}, cwd=tmp_path
    )
    assert result.returncode == 0 and all(f"{flag} 12" in result.stdout for flag in EVALUATOR_VARIABLES.values())


def test_a_seed_is_0_to_2_to_the_32_minus_1_as_a_variable_and_as_a_flag(capsys):
    for taken in ("0", str(SEED_LIMIT)):
        assert _variable_problems(PrepareSettings, "SEED", taken) == [] and _builder_seed_problems(taken, capsys) == []
    for refused in ("-1", str(SEED_LIMIT + 1)):
        assert _variable_problems(PrepareSettings, "SEED", refused) and _builder_seed_problems(refused, capsys)


def _command(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mem_agent", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _one_line_refusal(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.splitlines()
    return line


def test_a_seed_beyond_64_bits_is_refused_by_the_evaluators_check(tmp_path):
    """It used to pass --check and then fail every item at the server."""
    line = _one_line_refusal(_command("eval", "--check", "--output-dir", str(tmp_path), "--seed", str(2**64)))
    assert line.startswith("error: --seed ") and str(2**64) in line


def test_compare_with_a_negative_seed_is_one_line_not_a_traceback(tmp_path):
    line = _one_line_refusal(_command("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--seed", "-1"))
    assert "--seed -1" in line


def test_every_bad_number_of_a_command_line_is_named_at_once():
    line = _one_line_refusal(_command("view", "x", "--max-items", "1_0", "--max-turns", "0"))
    assert "--max-items 1_0" in line and "--max-turns 0" in line


@pytest.mark.parametrize(
    ("text", "value"), [("0", 0), ("-5", -5), ("007", 7), (str(INT_LIMIT), INT_LIMIT), (str(-INT_LIMIT), -INT_LIMIT)]
)
def test_an_integer_is_ascii_digits_with_an_optional_minus(text, value):
    assert parse_integer(text) == value


@pytest.mark.parametrize(
    "text", [*REFUSED, "", " 5", "5 ", "1 000", "-", "--5", "\uff15", str(INT_LIMIT + 1), "9" * 5000]
)
def test_anything_else_is_not_an_integer(text):
    with pytest.raises(NumberError):
        parse_integer(text)


@pytest.mark.parametrize(("text", "value"), [("2.5", 2.5), (".5", 0.5), ("5.", 5.0), ("-1e-3", -0.001), ("7", 7.0)])
def test_a_number_is_an_ascii_decimal_with_an_optional_exponent(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["nan", "inf", "-Infinity", "1e999", "1_0.5", "\u0663.\u0665", "0x1p3", "1e10", ""])
def test_a_number_is_finite_and_within_the_limit(text):
    with pytest.raises(NumberError):
        parse_number(text)


# ---- values echoed back ---------------------------------------------------------------------------------------------


def test_a_variable_with_terminal_escapes_reaches_the_dry_run_print_escaped(tmp_path):
    result = run_script(SCRIPTS / "run-eval.sh", {"DRY_RUN": "1", "SAVE_FILE": f"demo{ESCAPES}"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = result.stdout + result.stderr
    assert "\x1b" not in shown and "\x07" not in shown
    assert "demo\\x1b[2J\\x07" in result.stdout  # shown, within bash's $'...' quoting


def test_a_refusal_naming_a_value_shows_its_escapes(tmp_path):
    result = run_script(SCRIPTS / "run-eval.sh", {"DATA_ROOT": f"/nowhere{ESCAPES}", "URL": "http://127.0.0.1:9"})
    assert result.returncode == 2 and "\x1b" not in result.stderr and "/nowhere\\x1b[2J\\x07" in result.stderr


def test_the_settings_report_shows_a_value_with_its_escapes(tmp_path):
    prompts = tmp_path / f"prompts{ESCAPES}.toml"
    write_template_file(prompts)
    lines = settings_lines({"MEM_PROMPTS": str(prompts)})
    assert not any("\x1b" in line for line in lines)
    assert f"MEM_PROMPTS={tmp_path}/prompts\\x1b[2J\\x07.toml (set)" in lines


def test_a_dry_run_command_line_pastes_back_as_the_same_words():
    words = ["echo", f"a{ESCAPES}b", "it's", "plain", "\u00e9t\u00e9 \u65e5\u672c"]
    line = shell_line(words)
    assert "\x1b" not in line and "\u00e9t\u00e9" in line
    pasted = subprocess.run(["bash", "-c", f"printf '%s\\n' {line}"], capture_output=True, text=True, check=True)
    assert pasted.stdout.splitlines() == words
