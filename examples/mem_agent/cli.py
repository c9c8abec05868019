"""`mem-agent <command>`: every command users run, under one console command.

    mem-agent --help                    the commands, one line each
    mem-agent prepare-data --help       one command's flags
    python -m mem_agent eval ...        the same, without the installed script

Each command is a module's `main(argv)`, which `python -m <module>` runs too; COMMANDS is the one
list of them. The launches (run-eval, convert-to-hf, prepare-eval-data, train) live in launch/; the
scripts in examples/mem_agent/ run them, passing their arguments on. A command's module is imported
only when that command runs, so `mem-agent --help` imports none: argparse's subparsers would need
every command's parser, and so every module and its imports, before any command could run
(docs/architecture.md has the figures).
The one-line descriptions are the summary line of each module's docstring, read from its source
without importing it (pydoc's `source_synopsis` rule; pydoc itself costs more to import than the
whole help), so no second copy of them is kept here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import mem_agent
from mem_agent.common.console import dispatched_as

COMMANDS: dict[str, str] = {
    "prepare-data": "mem_agent.prepare_data",
    "check-host": "mem_agent.check_host",
    "eval": "mem_agent.eval_ruler_hqa",
    "run-document": "mem_agent.run_document",
    "build-long-context": "mem_agent.build_long_context",
    "build-ruler": "mem_agent.build_ruler",
    "fetch-prompts": "mem_agent.fetch_prompts",
    "synthetic-qa": "mem_agent.synthetic_qa",
    "local-stack": "mem_agent.local_stack",
    "view": "mem_agent.view",
    "compare": "mem_agent.compare",
    "train-summary": "mem_agent.train_summary",
    "run-eval": "mem_agent.launch.evaluate",
    "convert-to-hf": "mem_agent.launch.convert",
    "prepare-eval-data": "mem_agent.prepare_eval_data",
    "train": "mem_agent.launch.train",
}
NEEDED = ("pydantic", "aiohttp", "orjson", "numpy", "tqdm")  # mem-agent's own packages, named when absent


def summary(module: str) -> str:
    """The first line of the module's docstring: the module must start with it (a test keeps it so)."""
    source = Path(__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    with source.open(encoding="utf-8") as handle:
        first = handle.readline().strip()
    return first.removeprefix('"""').removesuffix('"""')


def help_text(program: str) -> str:
    width = max(map(len, COMMANDS)) + 2
    rows = [f"  {name:<{width}}{summary(module)}" for name, module in COMMANDS.items()]
    return "\n".join(
        [
            f"usage: {program} COMMAND [ARGS ...]",
            "",
            (mem_agent.__doc__ or "").splitlines()[0],
            "",
            "commands:",
            *rows,
            "",
            f"`{program} COMMAND --help` shows a command's flags;",
            "`python -m mem_agent.<module>` runs the same command.",
        ]
    )


def program_name() -> str:
    """`mem-agent` as the console script starts it, else the `python -m mem_agent` that ran it."""
    return "mem-agent" if sys.argv and Path(sys.argv[0]).name == "mem-agent" else "python -m mem_agent"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    program = program_name()
    if args[:1] in (["-h"], ["--help"]):
        print(help_text(program))
        return 0
    if args[:1] == ["--version"]:
        print(f"mem-agent {mem_agent.__version__}")
        return 0
    if not args or args[0] not in COMMANDS:
        given = f"unknown command {args[0]!r}" if args else "no command given"
        print(f"{program}: error: {given}; choose one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    name, module = args[0], COMMANDS[args[0]]
    try:
        command = importlib.import_module(module)
    except ModuleNotFoundError as error:  # a script's PYTHON without mem-agent's packages
        absent = [name for name in NEEDED if importlib.util.find_spec(name) is None] or [str(error.name)]
        print(
            f"{program}: error: {sys.executable} cannot import {', '.join(absent)}: install mem-agent into it"
            " (pip install -e <this repository>), or run bash scripts/bootstrap.sh and use its .venv",
            file=sys.stderr,
        )
        return 2
    with dispatched_as(module, f"{program} {name}"):
        return command.main(args[1:])
