"""A time bound on a block run in this process, for tests of code that might hang (a reader
waiting on a FIFO, a command that never ends)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


class Overran(BaseException):
    """The block ran past its bound. A BaseException, so that no `except Exception` (nor an
    `except OSError`, which TimeoutError would meet) in the code under test can swallow it."""


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Overran when the block takes longer than `seconds` (SIGALRM: the main thread only)."""

    def expired(signum: int, frame: object) -> None:
        raise Overran(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
