"""A long int32 array kept in an unlinked file and read back one slice at a time.

A 25600-document RULER-HQA context is about 3.5M tokens (14 MB of int32 ids); 128 questions in
flight would hold 1.8 GB of ids for the whole run, though a memory turn reads 5000 of them at a
time. Held here, each array costs an open descriptor: a slice is read with `os.pread` into a
fresh array, so no page stays mapped into the process (a memory map's touched pages count as
resident until the kernel reclaims them) and resident memory stays near one chunk per question.
The file has no name from the moment it is made (`tempfile.TemporaryFile`): a crash leaves
nothing behind, and the space is the kernel's to free when the descriptor closes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

__all__ = ["SpilledArray", "spill"]


class SpilledArray:
    """A one-dimensional array read by slices: `len`, `shape`, `dtype` and `a[start:stop]` (a copy)."""

    def __init__(self, handle: BinaryIO, length: int, dtype: np.dtype) -> None:
        self._handle = handle
        self._length = length
        self.dtype = np.dtype(dtype)

    @property
    def shape(self) -> tuple[int]:
        return (self._length,)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a SpilledArray is read by contiguous slices only")
        start, stop, _ = key.indices(self._length)
        count = max(stop - start, 0)
        size = self.dtype.itemsize
        data = os.pread(self._handle.fileno(), count * size, start * size)
        if len(data) != count * size:
            raise OSError(f"short read from a spilled array: {len(data)} of {count * size} bytes")
        return np.frombuffer(data, dtype=self.dtype).copy()

    def close(self) -> None:
        self._handle.close()

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.close()


def spill(values: np.ndarray, folder: Path | None = None) -> SpilledArray:
    """`values` written to an unnamed file in `folder` (default: the system's temporary folder).

    The caller chooses a folder on disk: a tmpfs /tmp would hold the bytes in memory again."""
    handle = tempfile.TemporaryFile(dir=folder, prefix="mem_agent_ids_")  # noqa: SIM115 - the array owns it
    try:
        np.ascontiguousarray(values).tofile(handle)
        handle.flush()
    except BaseException:
        handle.close()
        raise
    return SpilledArray(handle, int(values.shape[0]), values.dtype)
