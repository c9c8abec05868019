"""How the preflight fails: one line, `FAIL <stage>: <file:line>: <what>`, at the checkout line it came from.

`where(obj, root)` is the one place a class, function, module or frame becomes `file:line`,
relative to the checkout when it lies inside it. A stage turns anything its code raises (an
exception, and also SystemExit or KeyboardInterrupt: a train.py that exits while being imported
must not end the preflight with that exit status) into a `CheckFailed` at the deepest checkout
frame of the traceback.
"""

from __future__ import annotations

import contextlib
import inspect
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class CheckFailed(Exception):
    """The first incompatibility found: the stage, the `file:line` it came from and what broke."""

    def __init__(self, stage: str, where: str, detail: str) -> None:
        super().__init__(stage, where, detail)  # as the args, so that it crosses a process boundary
        self.stage, self.where, self.detail = stage, where, detail

    def __str__(self) -> str:
        return f"FAIL {self.stage}: {self.where}: {self.detail}"


def shown_path(path: str | Path, root: Path) -> str:
    """`path` relative to `root` when inside it, else as given."""
    resolved, top = Path(path).resolve(), root.resolve()
    return str(resolved.relative_to(top)) if resolved.is_relative_to(top) else str(path)


def where(obj: Any, root: Path) -> str:
    """`file:line` of a class, function, method, module, frame or traceback entry."""
    if isinstance(obj, traceback.FrameSummary):
        return f"{shown_path(obj.filename, root)}:{obj.lineno}"
    if isinstance(obj, types.FrameType):
        return f"{shown_path(obj.f_code.co_filename, root)}:{obj.f_lineno}"
    target = inspect.unwrap(obj) if callable(obj) else obj
    try:
        path = inspect.getsourcefile(target) or inspect.getfile(target)
        line = max(inspect.getsourcelines(target)[1], 1)  # a module starts at line 0
    except (OSError, TypeError):
        return getattr(obj, "__module__", None) or repr(obj)
    return f"{shown_path(path, root)}:{line}"


def describe(error: BaseException, root: Path) -> tuple[str | None, str]:
    """(`file:line` of the deepest traceback frame inside the checkout, or None), and `Type: message`."""
    top = root.resolve()
    inside = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if Path(frame.filename).is_absolute() and Path(frame.filename).resolve().is_relative_to(top)
    ]
    if isinstance(error, SystemExit):
        message = f"exit status {error.code!r}"
    else:
        message = " ".join(str(error).split()) or "(no message)"
    return (where(inside[-1], root) if inside else None), f"{type(error).__name__}: {message[:300]}"


@contextlib.contextmanager
def stage(name: str, root: Path, fallback: str) -> Iterator[None]:
    """Report whatever the stage raises at the checkout line that raised it, else at `fallback`."""
    try:
        yield
    except CheckFailed:
        raise
    except BaseException as error:  # an exit or interrupt in the checkout's code is a FAIL too
        found, detail = describe(error, root)
        raise CheckFailed(name, found or fallback, detail) from None
