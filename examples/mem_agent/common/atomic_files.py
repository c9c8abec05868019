"""Whole files written atomically: a crash leaves the old file or the new one, never half of one.

Outputs are written to a temporary file in the same folder (same filesystem, so the rename is
atomic), flushed and fsynced, then renamed over the final name. A final name that is a symbolic
link is refused (common/safe_files.py): the rename would replace the link, not write where it
points, and a user who made the link meant the other. A file replaced keeps its mode (a private
file stays private); a new one gets the mode a plain open() would give.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mem_agent.common.safe_files import refuse_link


def _current_umask() -> int:
    """The process umask, read without changing it where Linux exposes it (threads may be creating
    files meanwhile); elsewhere by the set-and-restore that is the only portable way."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_UMASK = _current_umask()


@contextlib.contextmanager
def atomic_output(path: Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Yield a file to write; it replaces `path` only if the block finishes without an error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_link(path)
    mode_bits = _existing_mode(path)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(descriptor, mode, encoding=None if "b" in mode else encoding) as handle:
            # mkstemp makes the file private (0600); outputs are shared data (Ray workers, other
            # users), so they get the mode a plain open() would give: 0666 less the umask.
            os.fchmod(handle.fileno(), 0o666 & ~_UMASK if mode_bits is None else mode_bits)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _existing_mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode & 0o7777
    except FileNotFoundError:
        return None


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_output(path) as handle:
        handle.write(text)


def write_figure_png(figure: Any, path: Path) -> None:
    """Save a matplotlib figure as a PNG that replaces `path` whole, then free the figure (pyplot
    keeps every open figure alive until it is closed)."""
    import matplotlib.pyplot as plt  # only plotting callers pay for the import

    with atomic_output(path, mode="wb") as handle:
        figure.savefig(handle, format="png")
    plt.close(figure)
