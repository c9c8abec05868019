"""`python -m mem_agent.launch <script> [-h | --help]`: what a shell script calls to check its settings.

Run by the scripts in examples/mem_agent/, not by hand. Prints shell assignments on stdout (see
launch/shell.py) or every problem on stderr (exit 2).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

# script name -> module of this room with `main(argv, environ) -> int`
SCRIPTS = {
    "convert": "mem_agent.launch.convert",
}
NEEDED = ("pydantic", "aiohttp", "orjson")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    absent = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if absent:
        print(
            f"error: PYTHON={sys.executable} cannot import {', '.join(absent)}: install mem-agent into it"
            " (pip install -e <this repository>), or run bash scripts/bootstrap.sh and use its .venv",
            file=sys.stderr,
        )
        return 2
    if not argv or argv[0] not in SCRIPTS:
        print(f"error: name a script: {', '.join(SCRIPTS)}", file=sys.stderr)
        return 2
    return importlib.import_module(SCRIPTS[argv[0]]).main(argv[1:], os.environ)


if __name__ == "__main__":
    raise SystemExit(main())
