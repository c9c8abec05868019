"""The `mem-agent` console command: it lists every command, runs each one's own main, and every
command shows the name the user typed in its usage lines and errors."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib

import pytest
from conftest import PROJECT_ROOT

from mem_agent import cli

PACKAGE = PROJECT_ROOT / "examples" / "mem_agent"


def _started_as(argv0: str, *args: str) -> subprocess.CompletedProcess:
    """What the console-script wrapper pip installs does: argv[0] is its path, then cli.main() runs."""
    code = f"import sys; sys.argv[0] = {argv0!r}; from mem_agent.cli import main; sys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_pyproject_installs_one_console_command_the_dispatcher():
    scripts = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"mem-agent": "mem_agent.cli:main"}


def test_help_lists_every_command_with_its_modules_summary_and_exits_0():
    shown = _started_as("/somewhere/bin/mem-agent", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: mem-agent COMMAND"), shown.stderr
    listed = {line.split()[0]: line.split(maxsplit=1)[1] for line in shown.stdout.splitlines() if line.startswith("  ")}
    assert listed == {name: cli.summary(module) for name, module in cli.COMMANDS.items()}


def test_the_help_imports_no_command_module():
    """`mem-agent --help` stays fast: a command's module (and its imports) loads only when it runs."""
    probe = "import sys; from mem_agent.cli import main; main(['--help']); print(*sorted(sys.modules), file=sys.stderr)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert set(cli.COMMANDS.values()).isdisjoint(loaded.stderr.split())


@pytest.mark.parametrize("module", sorted(cli.COMMANDS.values()))
def test_each_summary_is_the_whole_first_line_of_its_modules_docstring(module):
    source = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py").read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source), clean=False) or ""
    first_paragraph = docstring.split("\n\n")[0]
    assert cli.summary(module) == first_paragraph.strip() and "\n" not in first_paragraph.strip()


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_each_commands_help_exits_0_through_the_dispatcher(name):
    shown = subprocess.run(
        [sys.executable, "-m", "mem_agent", name, "--help"], capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0 and shown.stdout.startswith("usage: "), shown.stderr


NAMED_AS_TYPED = sorted(cli.COMMANDS)


@pytest.mark.parametrize("name", NAMED_AS_TYPED)
def test_a_dispatched_command_names_itself_in_help_and_errors(name):
    shown = _started_as("/somewhere/bin/mem-agent", name, "--help")
    assert shown.returncode == 0 and shown.stdout.startswith(f"usage: mem-agent {name} "), shown.stdout[:200]
    wrong = _started_as("/somewhere/bin/mem-agent", name, "--no-such-flag")
    assert wrong.returncode == 2 and f"mem-agent {name}: error: " in wrong.stderr
    assert "python -m" not in shown.stdout.splitlines()[0] + wrong.stderr


@pytest.mark.parametrize("name", NAMED_AS_TYPED)
def test_started_with_python_m_the_usage_says_so(name):
    module = cli.COMMANDS[name]
    direct = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert direct.returncode == 0 and direct.stdout.startswith(f"usage: python -m {module} ")
    dispatched = subprocess.run(
        [sys.executable, "-m", "mem_agent", name, "--help"], capture_output=True, text=True, timeout=120
    )
    assert dispatched.stdout.startswith(f"usage: python -m mem_agent {name} ")


@pytest.mark.parametrize("argv", [["no-such-command"], [], ["--no-such-flag"]], ids=["unknown", "none", "a-flag"])
def test_a_missing_or_unknown_command_is_one_line_and_exit_2(argv):
    result = _started_as("/somewhere/bin/mem-agent", *argv)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("mem-agent: error: ")
    assert all(name in result.stderr for name in cli.COMMANDS)


def test_the_name_is_the_dispatchers_only_while_it_runs_the_command(capsys):
    """Run in-process (as tests call main), the command is named by the dispatcher, and afterwards
    the module's own `python -m` name is back."""
    from mem_agent.common.console import program_name

    with pytest.raises(SystemExit) as raised:
        cli.main(["synthetic-qa", "--help"])
    assert raised.value.code == 0 and capsys.readouterr().out.startswith("usage: python -m mem_agent synthetic-qa ")
    assert program_name("mem_agent.synthetic_qa") == "python -m mem_agent.synthetic_qa"
