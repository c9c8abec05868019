"""The names hosts and users type keep working whatever the rooms behind them become.

Two kinds of name: the hook paths the launch hands the trainer (its recipe) (loaded the way slime and
vime load them, by splitting at the last dot: slime/utils/misc.py load_function), and the
top-level modules, which are entry points and nothing else: hooks, the commands of `mem-agent`
(each also `python -m mem_agent.<command>`), the dispatcher itself and the client facade. The
`python -m mem_agent.<command>` lines the docs show are tested in test_docs.py, the dispatcher in
test_console.py.
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from support.train_launch import hook_paths

PACKAGE = PROJECT_ROOT / "examples" / "mem_agent"


def load_function(path: str):
    """What the hosts do with a hook path: import the module before the last dot, take the attribute."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_launch_script_passes_the_hooks_it_always_has():
    """These paths are in users' own launch scripts and job configs: they may never move."""
    paths = hook_paths()
    assert paths["--custom-generate-function-path"] == "mem_agent.rollout.generate"
    assert paths["--custom-rm-path"] == "mem_agent.rollout.reward"
    assert paths["--custom-reward-post-process-path"] == "mem_agent.rollout.reward_post_process"
    assert paths["--custom-convert-samples-to-train-data-path"] == (
        "mem_agent.custom_convert.convert_samples_to_train_data"
    )


@pytest.mark.parametrize(("flag", "path"), sorted(hook_paths().items()))
def test_every_hook_path_loads_as_the_host_loads_it(flag: str, path: str):
    function = load_function(path)
    assert callable(function), f"{flag} {path} is not callable"
    if flag == "--custom-generate-function-path":
        assert inspect.iscoroutinefunction(function)
        assert list(inspect.signature(function).parameters)[:3] == ["args", "sample", "sampling_params"]


def test_the_documented_filter_hook_loads():
    """The dynamic-sampling filter is optional, so the launch does not pass it; users do."""
    assert callable(load_function("mem_agent.dynamic_filter.keep_groups_with_reward_contrast"))


def test_top_level_modules_are_entry_points():
    """Each top-level module is a hook module, a command (it has main) or the client facade."""
    hooks = {path.rpartition(".")[0] for path in hook_paths().values()} | {"mem_agent.dynamic_filter"}
    for source in sorted(PACKAGE.glob("*.py")):
        name = f"mem_agent.{source.stem}"
        if source.stem in {"__init__", "rollout_client"} or name in hooks:
            continue
        module = importlib.import_module(name)
        assert callable(getattr(module, "main", None)), f"{source.name} is neither a hook module nor a command"


def test_the_top_level_commands_are_the_ones_mem_agent_lists():
    """A command users run is a `mem-agent` command; a helper the scripts run lives in its room
    (`python -m mem_agent.serving.tether`), so it is never presented as a user command. The launches
    the scripts run (launch/) are commands too: each script is one `mem-agent` command."""
    from mem_agent import cli

    commands = {
        f"mem_agent.{path.stem}" for path in PACKAGE.glob("*.py") if re.search(r"^def main\(", path.read_text(), re.M)
    }
    top_level = {module for module in cli.COMMANDS.values() if module.count(".") == 1}
    assert commands - {"mem_agent.cli"} == top_level
    for name, script_name in (
        ("run-eval", "run-eval"),
        ("convert-to-hf", "convert-to-hf"),
        ("prepare-eval-data", "prepare-eval-data"),
        ("train", "run-qwen3-4b-train"),
    ):
        script = (PACKAGE / f"{script_name}.sh").read_text()
        assert name in cli.COMMANDS and script.count('"${PYTHON}"') == 1, "one crossing into Python"
        assert script.rstrip().endswith(f'exec "${{PYTHON}}" -m mem_agent {name} "$@"')


def test_the_client_facade_names_the_inference_client():
    from mem_agent import rollout_client
    from mem_agent.inference import client

    assert rollout_client.RolloutClient is client.RolloutClient
    assert set(rollout_client.__all__) <= set(dir(client))


def test_a_hook_module_runs_from_a_folder_outside_the_checkout(tmp_path: Path):
    """Ray workers start in the trainer's folder, not ours: the hooks import from anywhere."""
    code = "import mem_agent.rollout as r, mem_agent.custom_convert as c; print(r.generate.__name__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "generate", result.stderr[-500:]
