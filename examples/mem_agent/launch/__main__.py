"""`python -m mem_agent.launch <name> [args]`: what a shell script calls to check its settings.

Run by the scripts in examples/mem_agent/, not by hand. Prints shell assignments on stdout (see
launch/shell.py) or every problem on stderr (exit 2).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

# name -> (module of this room with `main(argv, environ) -> int`, who calls it)
SCRIPTS = {
    "train": ("mem_agent.launch.train", "run-qwen3-4b-train.sh: settings and flag arrays"),
    "ray-job": ("mem_agent.launch.ray_job", "run-qwen3-4b-train.sh: the live launch"),
    "ray-head": ("mem_agent.launch.ray_head", "ray-job: the keeper the head runs under"),
}


def usage() -> str:
    lines = ["usage: python -m mem_agent.launch <name> [args] (called by the scripts in examples/mem_agent/)", ""]
    lines += [f"  {name:<9} {caller}" for name, (_, caller) in SCRIPTS.items()]
    return "\n".join(lines)


NEEDED = ("pydantic", "aiohttp", "orjson", "numpy", "tqdm")


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
    if argv[:1] in (["-h"], ["--help"]):
        print(usage())
        return 0
    if not argv or argv[0] not in SCRIPTS:
        print(f"error: name a script: {', '.join(SCRIPTS)}\n{usage()}", file=sys.stderr)
        return 2
    module, _ = SCRIPTS[argv[0]]
    return importlib.import_module(module).main(argv[1:], os.environ)


if __name__ == "__main__":
    raise SystemExit(main())
