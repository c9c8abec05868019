"""Reading what run-qwen3-4b-train.sh prints: its commands (stdout, shell-quoted), the job's flags, and
the lines of its one problem message or its warnings (stderr), as data a test asserts on."""

from __future__ import annotations

import itertools
import json
import shlex
import subprocess

from mem_agent.common.usage import Problems
from mem_agent.launch.recipe import Group, recipe
from mem_agent.launch.train import plan_training
from support.scripts import SCRIPTS, refusal

TRAIN = SCRIPTS / "run-qwen3-4b-train.sh"


def default_recipe() -> tuple[Group, ...]:
    """The recipe's groups with every setting at its default (what this machine has unchecked)."""
    return recipe(plan_training({}, Problems(), machine=False))


def hook_paths() -> dict[str, str]:
    """flag -> dotted path, for every `--...-path mem_agent.x.y` the launch hands the trainer."""
    words = [word for group in default_recipe() for word in group.words]
    pairs = itertools.pairwise(words)
    return {flag: path for flag, path in pairs if flag.endswith("-path") and path.startswith("mem_agent.")}


def command(stdout: str, start: str) -> list[str]:
    """The one printed command whose line starts with `start` (e.g. `ray job submit`), as words."""
    (line,) = [line for line in stdout.splitlines() if line.startswith(start)]
    return shlex.split(line)


def submitted(stdout: str) -> list[str]:
    return command(stdout, "ray job submit")


def trainer_argv(job: list[str]) -> list[str]:
    """The trainer's flags: the words after `-- PYTHON ENTRY`."""
    return job[job.index("--") + 3 :]


def options(words: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """`--flag value...` pairs in order (a switch has no value; --eval-prompt-data has two)."""
    pairs: list[tuple[str, tuple[str, ...]]] = []
    for word in words:
        if word.startswith("--"):
            pairs.append((word, ()))
        else:
            flag, values = pairs[-1]
            pairs[-1] = (flag, (*values, word))
    return pairs


def flags(job: list[str]) -> dict[str, tuple[str, ...]]:
    """The trainer's flags of a `ray job submit` command, each once: flag -> its values."""
    found = options(trainer_argv(job))
    by_flag = dict(found)
    assert len(by_flag) == len(found), "a flag passed twice"
    return by_flag


def runtime_env(job: list[str]) -> dict[str, str]:
    return json.loads(job[job.index("--runtime-env-json") + 1])["env_vars"]


def listed(stderr: str) -> list[str]:
    """The items of the message's lists (`  - item`): warnings, then the problems if any."""
    return [line[4:] for line in stderr.splitlines() if line.startswith("  - ")]


def problems(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The problems of the training launch's one refusal, and nothing started or printed as started."""
    assert "ray " not in result.stdout, "nothing was started or printed as started"
    return refusal(result)


def about(lines: list[str], name: str) -> list[str]:
    """The lines about setting `name` (they start with `NAME=` or `NAME `)."""
    return [line for line in lines if line.startswith((f"{name}=", f"{name} "))]
