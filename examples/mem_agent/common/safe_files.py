"""Files written inside run folders without following links, appended without gluing onto a cut line.

A run folder may be shared, copied or prepared by someone else: a `.run.lock`, `results_50.jsonl`
or `metrics.jsonl` there may be a symbolic link to a file elsewhere, and a plain `open()` would
truncate or append to that file. Every file the package writes inside a run folder is opened with
`O_NOFOLLOW`, and a link is refused in one line naming it (LinkRefused, a user's mistake: exit 2).

An append after a crash that cut the last line mid-write starts on a new line, so the cut line
stays one unreadable line (which readers skip and name, `common/jsonl_lines.py`) instead of
swallowing the next complete one.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from mem_agent.common.usage import UsageError


class LinkRefused(UsageError):
    """A path the package would write is a symbolic link; the message names it."""


def refusal(path: Path) -> LinkRefused:
    return LinkRefused(f"{path} is a symbolic link: refusing to write through it (remove it or choose another path)")


def refuse_link(path: Path) -> None:
    """LinkRefused when `path` is a symbolic link (dangling ones included)."""
    if Path(path).is_symlink():
        raise refusal(Path(path))


def open_no_follow(path: Path, flags: int, mode: int = 0o666) -> int:
    """os.open(`path`) that never follows a link at its last component: LinkRefused instead."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise refusal(Path(path)) from None
        raise


def append_bytes(path: Path, payload: bytes, *, sync: bool = False) -> None:
    """Append `payload` (whole lines) to `path`, made if need be, never through a link; after a cut
    last line (no newline at the end: a writer killed mid-line) it starts on a new line."""
    descriptor = open_no_follow(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            payload = b"\n" + payload
        _write_all(descriptor, payload)
        if sync:
            os.fsync(descriptor)
    except OSError as error:  # os.write names no file: the message a user reads must
        raise OSError(error.errno, error.strerror, str(path)) from None
    finally:
        os.close(descriptor)


def _write_all(descriptor: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]
