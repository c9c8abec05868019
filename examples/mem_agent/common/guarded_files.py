"""Every file the package writes, appends or reads from a run folder, by one set of rules.

A run folder may be shared, copied or prepared by someone else, so a name the package writes may
already be something other than a file of its own:

- a symbolic link, at the file or at any folder between the folder the command owns (`root`) and
  the file: writing would follow it to a file or folder elsewhere. Folders are entered one at a
  time from `root` with `O_NOFOLLOW` (descriptors, not names, so a link made meanwhile is not
  followed either) and files opened with `O_NOFOLLOW`;
- a hard link: a file with a second name elsewhere, whose content an append or truncation would
  change there too;
- a FIFO, a folder, a device: opening a FIFO blocks until someone opens its other end.

Each is refused in one line naming the path and why (Refused, a user's mistake: exit 2), and what
it points to is never touched. A name that leads out of `root` (`..`) is refused the same way. The
layer never truncates a file it did not make: whole files are written to a temporary file of its
own and renamed over the name (`atomic_output`), appends only append, and a lock file with a
second name is refused before its holder record is rewritten.

A command that writes several outputs checks them all (`check_outputs`) before it writes the first,
so a refused output leaves every other one as it was.

Whole files are atomic: written to a temporary file in the same folder, flushed and fsynced, then
renamed over the name, so a crash leaves the old file or the new one. A file replaced keeps its mode
(a private file stays private); a new one gets the mode a plain open() would give. An append after
a crash that cut the last line mid-write starts on a new line, so the cut line stays one unreadable
line (which readers skip and name, `common/jsonl_lines.py`) instead of swallowing the next one.

Readers follow links (a dataset is often linked in) but read regular files only: a FIFO or a folder
where a run file belongs is refused at once, never waited on (`open_regular`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from mem_agent.common.usage import UsageError

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = {
    stat.S_IFREG: "a file",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFDIR: "a folder",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class Refused(UsageError):
    """A path the package would write or read is not a plain file of its own; the message names it and why."""


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _link_refusal(path: Path) -> Refused:
    return Refused(f"{path} is a symbolic link: refusing to write through it (remove it or choose another path)")


def _refusal(path: Path, status: os.stat_result) -> Refused | None:
    """Why `path` (lstat `status`) may not be written, or None when it is a regular file of one name."""
    if stat.S_ISLNK(status.st_mode):
        return _link_refusal(path)
    if not stat.S_ISREG(status.st_mode):
        return Refused(f"{path} is {_kind(status.st_mode)}, not a regular file: refusing to write it")
    if status.st_nlink > 1:
        return Refused(
            f"{path} is hard-linked ({status.st_nlink} names): refusing to change a file another name shares"
            " (remove it or copy it)"
        )
    return None


def _refuse(path: Path, status: os.stat_result) -> None:
    refusal = _refusal(path, status)
    if refusal is not None:
        raise refusal


def _parts(path: Path, root: Path | None) -> tuple[Path, tuple[str, ...]]:
    """The folder a walk starts from (`root`, default the file's folder) and the names below it."""
    path = _absolute(path)
    base = path.parent if root is None else _absolute(root)
    if path == base or not path.is_relative_to(base):
        raise Refused(f"{path} is outside {base}, the folder this command writes in: refusing to write there")
    return base, path.relative_to(base).parts


def _absolute(path: Path) -> Path:
    """`path` made absolute with `..` taken lexically, links not resolved: they are checked, not followed."""
    return Path(os.path.normpath(Path(path).absolute()))


@contextlib.contextmanager
def _folder_of(path: Path, root: Path | None, *, make: bool) -> Iterator[int | None]:
    """A descriptor of `path`'s folder, entered from `root` one folder at a time without following a
    link (folders made on the way with `make`); None when one is missing and `make` is false."""
    base, parts = _parts(path, root)
    if make:
        base.mkdir(parents=True, exist_ok=True)  # the command's own folder, where its user put it
    try:
        folder = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if make:
            raise
        yield None
        return
    try:
        for depth, name in enumerate(parts[:-1]):
            inner = _enter(folder, name, Path(path).parents[len(parts) - 2 - depth], make)
            os.close(folder)
            folder = inner
            if folder is None:
                break
        yield folder
    finally:
        if folder is not None:
            os.close(folder)


def _enter(folder: int, name: str, shown: Path, make: bool) -> int | None:
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        if not make:
            return None
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            status = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISLNK(status.st_mode):
                raise _link_refusal(shown) from None
            raise Refused(f"{shown} is {_kind(status.st_mode)}, not a folder: refusing to write in it") from None
        raise OSError(error.errno, error.strerror, str(shown)) from None
    with contextlib.suppress(FileExistsError):  # made meanwhile by another writer: entered as any other
        os.mkdir(name, dir_fd=folder)
    return _enter(folder, name, shown, make=False)


def _entry(folder: int, name: str, shown: Path) -> os.stat_result | None:
    """lstat of `name` in `folder` (None when absent); Refused unless it is a regular file of one name."""
    try:
        status = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    _refuse(shown, status)
    return status


def _open_in(folder: int, path: Path, flags: int) -> int:
    """`path`'s file in `folder` opened with `flags` (never O_TRUNC), once it is known to be a regular
    file of one name or absent; O_NONBLOCK until then, so a FIFO put there meanwhile never blocks."""
    _entry(folder, path.name, path)
    try:
        descriptor = os.open(path.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _link_refusal(path) from None
        raise OSError(error.errno, error.strerror, str(path)) from None
    try:
        _refuse(path, os.fstat(descriptor))
        _blocking(descriptor)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _blocking(descriptor: int) -> None:
    fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) & ~os.O_NONBLOCK)


def _open_output(path: Path, root: Path | None, flags: int) -> int:
    path = Path(path)
    with _folder_of(path, root, make=True) as folder:
        assert folder is not None
        return _open_in(folder, path, flags)


def check_output(path: Path, root: Path | None = None) -> None:
    """Refused when `path` could not be written by this layer: a link at it or at a folder between
    `root` (the folder the command owns; default the file's own) and it, an existing file that is not
    a regular file of one name, or a path outside `root`. Writes nothing."""
    path = Path(path)
    with _folder_of(path, root, make=False) as folder:
        if folder is not None:
            _entry(folder, path.name, path)


def check_outputs(paths: Iterable[Path], root: Path | None = None) -> None:
    """`check_output` for every output of a command, before it writes the first."""
    for path in paths:
        check_output(path, root)


def append_bytes(path: Path, payload: bytes, *, sync: bool = False, root: Path | None = None) -> None:
    """Append `payload` (whole lines) to `path`, made if need be; after a cut last line (no newline at
    the end: a writer killed mid-line) it starts on a new line."""
    descriptor = _open_output(path, root, os.O_RDWR | os.O_APPEND | os.O_CREAT)
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


def open_append_log(path: Path, root: Path | None = None) -> BinaryIO:
    """`path` opened to append, made if need be: the log a child process writes its output to."""
    descriptor = _open_output(path, root, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    return open(path, "ab", opener=lambda _name, _flags: descriptor)


def open_lock(path: Path, *, write: bool = True) -> int:
    """A descriptor of a run folder's lock file `path` (made with `write`), a regular file of one
    name: its holder record is truncated and rewritten, which must never reach another name's file."""
    if write:
        return _open_output(path, None, os.O_RDWR | os.O_CREAT)
    path = Path(path)
    with _folder_of(path, None, make=False) as folder:
        if folder is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        return _open_in(folder, path, os.O_RDONLY)


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
def atomic_output(
    path: Path, mode: str = "w", encoding: str | None = "utf-8", *, root: Path | None = None
) -> Iterator[IO[Any]]:
    """Yield a file to write (its `name` is the temporary file's path, to check it before it counts);
    it replaces `path` only if the block finishes without an error."""
    path = Path(path)
    with _folder_of(path, root, make=True) as folder:
        assert folder is not None
        existing = _entry(folder, path.name, path)
        temporary = f".{path.name}.{secrets.token_hex(4)}.partial"
        descriptor = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder
        )
        try:
            # A new file is private (0600) until now; outputs are shared data (Ray workers, other
            # users), so they get the mode a plain open() would give: 0666 less the umask.
            os.fchmod(descriptor, 0o666 & ~_UMASK if existing is None else stat.S_IMODE(existing.st_mode))
            handle = open(  # noqa: SIM115 - closed below, before the rename
                path.parent / temporary,
                mode,
                encoding=None if "b" in mode else encoding,
                opener=lambda _name, _flags: descriptor,
            )
            with handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise


def place_file(source: Path, path: Path, *, root: Path | None = None) -> None:
    """`source`, a finished file of the command's own on the same file system, renamed to `path`
    without replacing anything there: a hard link made (which never follows or replaces a link at
    `path`), then `source` unlinked. Refused when `path` exists, as whatever it is."""
    path = Path(path)
    with _folder_of(path, root, make=True) as folder:
        assert folder is not None
        try:
            os.link(source, path.name, dst_dir_fd=folder, follow_symlinks=False)
        except FileExistsError:
            _entry(folder, path.name, path)  # a link, a FIFO, a folder: refused as what it is
            raise Refused(f"{path} exists: refusing to replace it (move it aside)") from None
    Path(source).unlink()


def write_text_atomic(path: Path, text: str, *, root: Path | None = None) -> None:
    with atomic_output(path, root=root) as handle:
        handle.write(text)


def write_figure_png(figure: Any, path: Path, *, root: Path | None = None) -> None:
    """Save a matplotlib figure as a PNG that replaces `path` whole, then free the figure (pyplot
    keeps every open figure alive until it is closed)."""
    import matplotlib.pyplot as plt  # only plotting callers pay for the import

    with atomic_output(path, mode="wb", root=root) as handle:
        figure.savefig(handle, format="png")
    plt.close(figure)


def open_regular(path: Path, mode: str = "rb", encoding: str | None = None, errors: str | None = None) -> IO[Any]:
    """`path` opened to read, through links, when it is a regular file: Refused for a FIFO, a folder
    or a device, at once (opened with O_NONBLOCK, so a FIFO with no writer never blocks the open)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise Refused(f"{path}: cannot read: it is {_kind(status.st_mode)}, not a regular file")
        _blocking(descriptor)
    except BaseException:
        os.close(descriptor)
        raise
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    return open(path, mode, encoding=encoding, errors=errors, opener=lambda _name, _flags: descriptor)


def read_regular_bytes(path: Path) -> bytes:
    with open_regular(path) as handle:
        return handle.read()


def read_regular_text(path: Path, encoding: str = "utf-8", errors: str | None = None) -> str:
    with open_regular(path, "r", encoding, errors) as handle:
        return handle.read()
