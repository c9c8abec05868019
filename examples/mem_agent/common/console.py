"""The name a command was started by, so that usage lines and errors show what the user typed.

argparse names a program after `sys.argv[0]`, which for `python -m` is the module's file path, so
every command's parser passes its name explicitly: `python -m mem_agent.<module>`, or, while the
`mem-agent` command (mem_agent/cli.py) runs the module's main, `mem-agent <command>`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

_dispatched: dict[str, str] = {}  # module -> the name the dispatcher runs it under, while it runs


@contextlib.contextmanager
def dispatched_as(module: str, name: str) -> Iterator[None]:
    """While the block runs, `module`'s parser is named `name` (say `mem-agent eval`)."""
    _dispatched[module] = name
    try:
        yield
    finally:
        _dispatched.pop(module, None)


def program_name(module: str) -> str:
    """The name the user typed to start `module`: the dispatcher's, else `python -m module`."""
    return _dispatched.get(module, f"python -m {module}")


def print_any_path() -> None:
    """Let stdout print what stderr already does: a character its encoding cannot hold as a
    backslash escape. A file name that is not UTF-8 reaches Python as lone surrogates (`\\udcff`),
    and a strict stdout (a UTF-8 locale's) would end a command that has done its work with a
    UnicodeEncodeError at its last line ("wrote ... to <path>")."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
