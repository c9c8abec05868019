"""One writer per run folder: an exclusive lock that the operating system releases when its holder dies.

Two evaluators appending to one results file would each run every item, and the file would hold
every item twice. So every command that writes into a run folder first takes `flock(LOCK_EX)` on
the folder's `.run.lock` and keeps it for its whole life. The kernel drops the lock when the last
descriptor of it is closed, which happens when the holder exits however it exits (`kill -9`
included), so a lock is never stale: the file may stay, but without a live holder it locks
nothing. The holder writes its PID, start time and command into the file so that a refused run
can say whom it waits for. The lock file is opened through common/guarded_files.py: a `.run.lock`
that is a symbolic link, a hard link (a second name of another file, which rewriting the holder
record would truncate) or not a regular file (a FIFO) is refused in one line, and the file it
points to is never touched.

A lock belongs to an open file description, not to a process: a child that inherits the
descriptor shares it. run-eval.sh's launch (launch/evaluate.py) takes the lock through a descriptor
of its own and names it in `_MEM_RUN_LOCK_FD`; a command started by it finds it there and runs under it instead of
refusing itself. Such a child must never unlock: that would release its parent's lock too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mem_agent.common.guarded_files import open_lock, read_regular_text
from mem_agent.common.usage import UsageError

LOCK_NAME = ".run.lock"
LOCK_FD_ENV = "_MEM_RUN_LOCK_FD"  # an inherited descriptor of a run folder's lock (set by run-eval.sh's launch)
_HOLDER_WAIT_S = 1.0  # a holder writes its details right after it locks: a refused run waits this long for them


class RunFolderBusy(UsageError):
    """Another live process holds the run folder; the message names it and the ways out."""


def lock_path(folder: Path) -> Path:
    return Path(folder) / LOCK_NAME


@contextlib.contextmanager
def lock_run_folder(folder: Path, *, command: str, instead: str = "choose another output folder") -> Iterator[None]:
    """Hold `folder`'s lock for the block (the folder is made if need be); RunFolderBusy at once if a
    live process holds it. `command` is what the lock file names as the holder; `instead` is the
    other way out the refusal offers (e.g. "choose another --output-dir")."""
    inherited = _inherited_descriptor(folder)
    if inherited is not None:
        _lock_or_refuse(inherited, folder, instead)
        yield  # the parent's lock: never unlocked here, the parent releases it
        return
    descriptor = open_lock(lock_path(folder))
    try:
        _lock_or_refuse(descriptor, folder, instead)
        write_holder(descriptor, os.getpid(), command)
        try:
            yield
        finally:
            os.ftruncate(descriptor, 0)  # no holder any more; the lock itself goes with the close
    finally:
        os.close(descriptor)


_HELD_FOR_LIFE: dict[Path, contextlib.ExitStack] = {}


def hold_run_folder(folder: Path, *, command: str, instead: str = "choose another output folder") -> None:
    """Hold `folder`'s lock until this process exits, for writers with no block to hold it in (a
    trainer hook that records trajectories for a whole run). A second call for the same folder is a
    no-op: a new descriptor of our own would be refused by the lock we already hold."""
    key = Path(folder).resolve()
    if key not in _HELD_FOR_LIFE:
        stack = contextlib.ExitStack()
        stack.enter_context(lock_run_folder(folder, command=command, instead=instead))
        _HELD_FOR_LIFE[key] = stack  # never closed: the kernel releases the lock when the process ends


def hold_descriptor(descriptor: int, folder: Path, pid: int, command: str, instead: str) -> None:
    """Lock `folder` through `descriptor`, a descriptor of its lock file (`open_lock`) that a parent
    process keeps (run-eval.sh's launch): the lock outlives this call and stays the parent's, which
    is named as the holder (`pid`, `command`)."""
    if not _same_file(descriptor, lock_path(folder)):
        raise UsageError(f"descriptor {descriptor} is not open on {lock_path(folder)}")
    _lock_or_refuse(descriptor, folder, instead)
    write_holder(descriptor, pid, command)


def write_holder(descriptor: int, pid: int, command: str) -> None:
    started = datetime.now(UTC).isoformat(timespec="seconds")
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, (json.dumps({"pid": pid, "started": started, "command": command}) + "\n").encode(), 0)


def read_holder(folder: Path, wait_s: float = _HOLDER_WAIT_S) -> dict[str, Any] | None:
    """The holder's details, waiting up to `wait_s` for a holder that has locked but not written yet."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            holder = json.loads(read_regular_text(lock_path(folder)))
            if isinstance(holder, dict) and "pid" in holder:
                return holder
        except (OSError, ValueError, UsageError):
            pass
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _lock_or_refuse(descriptor: int, folder: Path, instead: str) -> None:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunFolderBusy(_busy_message(folder, read_holder(folder), instead)) from None


def folder_in_use(folder: Path) -> str | None:
    """Who holds `folder` now ("FOLDER is in use by another run: pid ..."), or None when no live run
    does: for readers that must not mix a live run's old and new files. The lock is only tested
    (a shared flock, dropped at once), never kept, and never opened through a link."""
    try:
        descriptor = open_lock(lock_path(folder), write=False)
    except (FileNotFoundError, NotADirectoryError, UsageError):
        return None  # no lock file: no run ever held it; a link or a FIFO: no run of ours holds it
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder_text(folder, read_holder(folder))
    finally:
        os.close(descriptor)
    return None


def _holder_text(folder: Path, holder: dict[str, Any] | None) -> str:
    if holder is None:
        return f"{folder} is in use by another run (its details are not written yet)"
    return (
        f"{folder} is in use by another run: pid {holder['pid']} ({holder.get('command', '?')}), started"
        f" {holder.get('started', '?')}"
    )


def _busy_message(folder: Path, holder: dict[str, Any] | None, instead: str) -> str:
    if holder is None:
        return f"{_holder_text(folder, holder)}: wait for it to end, or {instead}"
    return f"{_holder_text(folder, holder)}; wait for it to end, stop it (kill {holder['pid']}), or {instead}"


def _inherited_descriptor(folder: Path) -> int | None:
    """The descriptor named by _MEM_RUN_LOCK_FD when it is open on this folder's lock file."""
    value = os.environ.get(LOCK_FD_ENV, "")
    if not value.isdigit():
        return None
    descriptor = int(value)
    return descriptor if _same_file(descriptor, lock_path(folder)) else None


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        held, named = os.fstat(descriptor), Path(path).stat()
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def inherited_lock_descriptors() -> tuple[int, ...]:
    """The lock descriptor a command started from here must keep (for subprocess's pass_fds)."""
    value = os.environ.get(LOCK_FD_ENV, "")
    if not value.isdigit():
        return ()
    try:
        os.fstat(int(value))
    except OSError:
        return ()
    return (int(value),)
