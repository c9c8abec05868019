"""Resolved settings as shell assignments, for run-qwen3-4b-train.sh alone (the other scripts run
their whole job in Python): `settings=$("${PYTHON}" -m mem_agent.launch train)`, then
`eval "${settings}"`. stdout holds only assignments, each value quoted by `shlex.quote`, so no value
can run as code; everything meant for a person goes to stderr.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

Value = str | int | float | bool | Path | Sequence[str | int | Path]


def assignments(values: Mapping[str, Value]) -> str:
    """`NAME=value` per scalar, `NAME=(a b)` per sequence (a bash array), in the mapping's order."""
    lines = []
    for name, value in values.items():
        if not name.isidentifier():
            raise ValueError(f"{name!r} is not a shell variable name")
        if isinstance(value, str | Path | int | float | bool):
            lines.append(f"{name}={_word(value)}")
        else:
            lines.append(f"{name}=({' '.join(_word(item) for item in value)})")
    return "\n".join(lines) + "\n"


def print_assignments(values: Mapping[str, Value]) -> int:
    sys.stdout.write(assignments(values))
    return 0


def _word(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return shlex.quote(str(value))
