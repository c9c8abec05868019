"""A command's exit status, run in-process as the tests call its main."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def exit_status(main: Callable[[Sequence[str]], int], argv: Sequence[str]) -> int:
    """What `main(argv)` returns, or the status of the SystemExit its parser raises: a flag argparse
    refuses (a bad number, an unknown flag) ends the parse with exit 2 before main's own checks run."""
    try:
        return main(argv)
    except SystemExit as exited:
        return exited.code if isinstance(exited.code, int) else 1
