"""How a command was called: the one exception for a user's mistake, every problem at once, and a
wrapper's own arguments apart from the command it runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class UsageError(Exception):
    """A mistake in how a command was called; reported in one line with exit status 2. `problems`
    holds each mistake apart, for a caller that lists them (a launch script's one message)."""

    def __init__(self, problems: str | Sequence[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


def gather(*checks: Callable[[], Any]) -> list[Any]:
    """Run every check, also after one has failed, and return their results; one UsageError naming
    every problem (`; `-separated, one line) when any failed, so a user fixes them in one go.
    A ValueError is a problem too (ConfigError and DataFormatError are ValueErrors)."""
    results, problems = [], []
    for check in checks:
        try:
            results.append(check())
        except (UsageError, ValueError) as error:
            # UsageError and the settings' errors keep their problems apart (`problems`)
            problems.extend(getattr(error, "problems", None) or [str(error)])
    if problems:
        raise UsageError(problems)
    return results


def problems_to_error(problems: list[str]) -> None:
    """Raise one UsageError naming every problem, if there are any."""
    if problems:
        raise UsageError(problems)


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(our arguments, the command after `--`): a wrapper's own flags never swallow the command's."""
    argv = list(argv)
    if "--" not in argv:
        return argv, []
    split = argv.index("--")
    return argv[:split], argv[split + 1 :]
