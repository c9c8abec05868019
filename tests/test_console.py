"""Console commands show the name the user typed, in usage lines and errors alike."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest
from conftest import PROJECT_ROOT

from mem_agent.common.console import CONSOLE_COMMANDS


def test_the_console_commands_are_those_pyproject_installs():
    scripts = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert {name: target.removesuffix(":main") for name, target in scripts.items()} == CONSOLE_COMMANDS


def _started_as(argv0: str, module: str, *args: str) -> subprocess.CompletedProcess:
    """What a console-script wrapper does: argv[0] is the command's path, then main() is called."""
    code = f"import sys; sys.argv[0] = {argv0!r}; from {module} import main; sys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("command", "module"), sorted(CONSOLE_COMMANDS.items()))
def test_a_console_command_names_itself_in_help_and_errors(command, module):
    shown = _started_as(f"/somewhere/bin/{command}", module, "--help")
    assert shown.returncode == 0 and shown.stdout.startswith(f"usage: {command} "), shown.stdout[:200]
    wrong = _started_as(f"/somewhere/bin/{command}", module, "--no-such-flag")
    assert wrong.returncode == 2 and f"{command}: error: " in wrong.stderr
    assert "python -m" not in shown.stdout + wrong.stderr


@pytest.mark.parametrize("module", sorted(set(CONSOLE_COMMANDS.values())))
def test_started_with_python_m_the_usage_says_so(module):
    result = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith(f"usage: python -m {module} ")
