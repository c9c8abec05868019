"""Files a command reads: regular files only, read whole only up to a bound, named by their flag.

A path given where a file is read may be anything: `/dev/zero` or `/dev/urandom` never end (a
command once wrote 18 GB in 21 s from one), a FIFO blocks, a folder cannot be read, and a name
longer than the file system allows fails deep inside a library, and an output renamed over a
device replaces the device. Each is one UsageError here,
naming the flag and the path, before anything is read or written: a user's mistake, exit 2.
What is read whole (a document, an essay, a SQuAD file) is bounded too: a larger file is refused
with its size and the bound, never read into memory; what is streamed (JSON arrays, JSON Lines,
parquet) needs only to be a regular file.

Paths are shown as `os.fsencode(...).decode(errors="backslashreplace")` would show them: a file
name that is not UTF-8 reaches Python as lone surrogates (`\\udcff`), which a strict stdout or a
UTF-8 file cannot hold.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from mem_agent.common.guarded_files import Refused, open_regular
from mem_agent.common.guarded_files import check_output as guarded_check_output
from mem_agent.common.usage import UsageError

MAX_NAME_BYTES = 255  # bound: one name in a path (NAME_MAX of Linux file systems)
MAX_PATH_BYTES = 4095  # bound: a whole path (PATH_MAX less its terminating NUL)
MAX_TEXT_BYTES = 256 << 20  # bound: a text read whole (~64M tokens; the longest context evaluated is 3.5M)
STDIN = "-"


def shown(path: str | Path) -> str:
    """`path` printable anywhere: bytes that are not UTF-8 as `\\xff` escapes, on one line."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return text.replace("\n", "\\n").replace("\r", "\\r")


def length_problem(path: str | Path) -> str | None:
    """Why no file system can hold `path` (a name or the whole path too long), or None."""
    encoded = os.fsencode(path)
    if len(encoded) > MAX_PATH_BYTES:
        return f"is {len(encoded)} bytes long, more than a path may be ({MAX_PATH_BYTES})"
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > MAX_NAME_BYTES:
        return f"holds a name of {len(longest)} bytes, more than a file system allows ({MAX_NAME_BYTES})"
    return None


def check_name(path: str | Path, flag: str) -> None:
    """UsageError when `path` (an output, say) names no possible file."""
    problem = length_problem(path)
    if problem:
        raise UsageError(f"{flag} {_short(path)} {problem}")


def check_output(path: str | Path, flag: str) -> None:
    """UsageError naming `flag` when `path` can be no output file: a name too long, or what the file
    layer's writers would refuse (a link, a device, a FIFO, a folder, a hard-linked file: a new file
    renamed over /dev/null would replace the device itself), found before anything is written."""
    check_name(path, flag)
    try:
        guarded_check_output(Path(path))
    except Refused as refused:
        raise UsageError(f"{flag} {refused}") from None


def input_file(path: str | Path, flag: str, *, max_bytes: int | None = None) -> Path:
    """`path`, once it is known to be a regular file (links followed) of at most `max_bytes`."""
    check_name(path, flag)
    try:
        found = Path(path).stat()
    except OSError as error:
        why = "not found" if error.errno == errno.ENOENT else f"cannot read: {error.strerror}"
        raise UsageError(f"{flag} {shown(path)}: {why}") from None
    if stat.S_ISDIR(found.st_mode):
        raise UsageError(f"{flag} {shown(path)} is a folder: give a file")
    if not stat.S_ISREG(found.st_mode):
        raise UsageError(f"{flag} {shown(path)} is not a regular file (a device, a pipe or a socket): give a file")
    if max_bytes is not None and found.st_size > max_bytes:
        raise UsageError(f"{flag} {shown(path)} is {found.st_size:,} bytes, more than the {max_bytes:,} read whole")
    return Path(path)


def read_bounded(source: str | Path, flag: str, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of a regular file, or of stdin for the string `-` (a Path named `-` is a file),
    refused past `max_bytes`: a pipe that never ends is cut at the bound, not read until memory
    runs out."""
    if source != STDIN:
        input_file(source, flag, max_bytes=max_bytes)
    try:
        if source == STDIN:
            raw = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with open_regular(Path(source)) as handle:  # the one regular-file reader: a FIFO swapped in never blocks
                raw = handle.read(max_bytes + 1)
    except OSError as error:
        raise UsageError(f"{flag} {shown(source)}: cannot read: {error.strerror}") from None
    except Refused as error:
        raise UsageError(f"{flag} {error}") from None
    if len(raw) > max_bytes:
        raise UsageError(f"{flag} {shown(source)} holds more than the {max_bytes:,} bytes read whole")
    return raw


def _short(path: str | Path) -> str:
    """A path too long to name in full: its start and end."""
    text = shown(path)
    return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]}"
