"""How a command was called: the one exception for a user's mistake, every problem at once, and a
wrapper's own arguments apart from the command it runs.

A launch collects its problems in `Problems` before anything starts: a setting that cannot work is a
problem; something this machine lacks (a checkout, a checkpoint, a command) is one for a real run
but only a warning in a dry run, so that DRY_RUN=1 previews a launch on any machine.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mem_agent.common.printable import printable


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


@dataclass
class Problems:
    """Problems and warnings of one launch, collected before anything starts."""

    dry_run: bool = False
    found: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        self.found.append(text)

    def extend(self, texts: Iterable[str], prefix: str = "") -> None:
        self.found.extend(f"{prefix}{text}" for text in texts)

    def missing(self, text: str) -> None:
        """Something this machine lacks: refused in a real run, a warning in a dry run."""
        (self.warnings if self.dry_run else self.found).append(text)

    def require_path(self, name: str, value: Path, what: str) -> None:
        """`name=value: what not found` unless `value` exists."""
        if not value.exists():
            self.missing(f"{name}={value}: {what} not found")

    def require_command(self, command: str, why: str, path: str | None = None) -> None:
        if shutil.which(command, path=path) is None:
            self.missing(f"command '{command}' not found: {why}")

    def unused(self, names: Iterable[str], set_by_user: Mapping[str, str], why: str) -> None:
        """Each of `names` the user set is a problem: the chosen mode would silently ignore it."""
        for name in names:
            if set_by_user.get(name, "").strip():
                self.problem(f"{name} is set but not used: {why}; unset it")

    def raise_if_any(self, out: TextIO = sys.stderr) -> None:
        """Print the warnings (a dry run goes on after them), then refuse on any problem."""
        if self.warnings:
            print(
                "warning: dry run on a machine that lacks what a real run needs (a real run would refuse to start):",
                file=out,
            )
            for text in self.warnings:
                print(f"  - {printable(text)}", file=out)
            self.warnings = []
        if self.found:
            raise UsageError(self.found)


def refusal_text(refused: UsageError) -> str:
    lines = [f"error: cannot start, {len(refused.problems)} problem(s):"]
    lines += [f"  - {printable(text)}" for text in refused.problems]
    lines.append("nothing was started; see --help for every setting")
    return "\n".join(lines)
