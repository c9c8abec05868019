"""The one exception a command raises for a user's mistake in how it was called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class UsageError(Exception):
    """A mistake in how a command was called; reported in one line with exit status 2."""


def gather(*checks: Callable[[], Any]) -> list[Any]:
    """Run every check, also after one has failed, and return their results; one UsageError naming
    every problem (`; `-separated, one line) when any failed, so a user fixes them in one go.
    A ValueError is a problem too (ConfigError and DataFormatError are ValueErrors)."""
    results, problems = [], []
    for check in checks:
        try:
            results.append(check())
        except (UsageError, ValueError) as error:
            problems.append(str(error))
    if problems:
        raise UsageError("; ".join(problems))
    return results


def problems_to_error(problems: list[str]) -> None:
    """Raise one UsageError naming every problem, if there are any."""
    if problems:
        raise UsageError("; ".join(problems))
