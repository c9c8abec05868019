"""The names people type for our commands, so that usage lines and errors show the same name.

`pip install` puts five console commands on PATH (pyproject.toml, [project.scripts]; a test keeps
the two lists identical). argparse names a program after `sys.argv[0]`, which for `python -m`
is the module's file path, so every parser passes its name explicitly: the console command when
that is how it was started, `python -m mem_agent.<module>` otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

CONSOLE_COMMANDS = {
    "mem-agent-run-document": "mem_agent.run_document",
    "mem-agent-eval": "mem_agent.eval_ruler_hqa",
    "mem-agent-prepare-data": "mem_agent.prepare_data",
    "mem-agent-build-long-context": "mem_agent.build_long_context",
    "mem-agent-fetch-prompts": "mem_agent.fetch_prompts",
}


def program_name(module: str) -> str:
    """The name the user typed to start `module`: its console command, else `python -m module`."""
    typed = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return typed if CONSOLE_COMMANDS.get(typed) == module else f"python -m {module}"
