"""Every problem of a launch at once: what a person fixes in one go before anything starts.

A problem is a setting that cannot work; a run refuses to start on any. Something this machine
lacks (a checkout, a checkpoint, a command) is a problem for a real run but only a warning in a
dry run, so that DRY_RUN=1 previews a launch on any machine.
"""

from __future__ import annotations

import errno
import shutil
import socket
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from mem_agent.common.printable import printable
from mem_agent.common.usage import UsageError


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

    def require_path(self, name: str, value: Path, what: str, hint: str = "") -> bool:
        """True when `value` exists; otherwise `name=value: what not found (hint)`."""
        if value.exists():
            return True
        self.missing(f"{name}={value}: {what} not found" + (f" ({hint})" if hint else ""))
        return False

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


def port_in_use(port: int) -> bool:
    """True when a socket of this node listens on `port` on any address. Binding the wildcard address
    fails then (asking 127.0.0.1 would miss servers that bind the node's own address); SO_REUSEADDR
    keeps connections that merely closed on the port (TIME_WAIT) from counting."""
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this node
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind((address, port))
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    return True
    return False


def refusal_text(refused: UsageError) -> str:
    lines = [f"error: cannot start, {len(refused.problems)} problem(s):"]
    lines += [f"  - {printable(text)}" for text in refused.problems]
    lines.append("nothing was started; see --help for every setting")
    return "\n".join(lines)
