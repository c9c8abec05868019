"""How the preflight fails, and the checks for a host change that would break training silently.

A failure is one line, `FAIL <stage>: <file:line>: <what>`, at the deepest checkout frame of what a
stage raised, an exit or an interrupt included (a train.py that exits must not end the preflight
with its status). A renamed field raises nowhere: our hooks set `sample.rollout_log_probs` on a
Sample without that field, or our convert emits a key the host's split no longer forwards, and the
logprobs never reach the trainer. So our hooks run through spies the host loads by the launch's
paths: its Sample class records each undeclared attribute our code sets, our convert's dict each
key the host reads; after the step neither may be left over (`silent_breaks`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Keys our convert may emit that no host split forwards, and why that is fine.
OPTIONAL_KEYS = {
    "metadata": "each row's train_metadata, which the hosts' own convert emits alike for their loggers; "
    "no split forwards it to a rank",
}
_OURS = str(Path(__file__).resolve().parents[1])  # the mem_agent package: our frames, not the host's


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
    """`file:line` of a class, function, method, module or traceback entry."""
    if isinstance(obj, traceback.FrameSummary):
        return f"{shown_path(obj.filename, root)}:{obj.lineno}"
    target = inspect.unwrap(obj) if callable(obj) else obj
    try:
        path = inspect.getsourcefile(target) or inspect.getfile(target)
        line = max(inspect.getsourcelines(target)[1], 1)  # a module starts at line 0
    except (OSError, TypeError):
        return getattr(obj, "__module__", None) or repr(obj)
    return f"{shown_path(path, root)}:{line}"


@contextlib.contextmanager
def stage(name: str, root: Path, fallback: str, exiting: str = "") -> Iterator[None]:
    """Report whatever the stage raises at the deepest checkout frame of its traceback, else at
    `fallback`; `exiting` is appended when that is an exit or an interrupt."""
    try:
        yield
    except CheckFailed:
        raise
    except BaseException as error:  # an exit or interrupt in the checkout's code is a FAIL too
        top = root.resolve()
        inside = [
            frame
            for frame in traceback.extract_tb(error.__traceback__)
            if Path(frame.filename).is_absolute() and Path(frame.filename).resolve().is_relative_to(top)
        ]
        exited = isinstance(error, SystemExit)
        message = f"exit status {error.code!r}" if exited else " ".join(str(error).split()) or "(no message)"
        suffix = exiting if isinstance(error, (SystemExit, KeyboardInterrupt)) else ""
        detail = f"{type(error).__name__}: {message[:300]}{suffix}"
        raise CheckFailed(name, where(inside[-1], root) if inside else fallback, detail) from None


@dataclasses.dataclass
class KeyReads:
    """What the spies saw: the samples our convert got, the keys it emitted, the keys the host read."""

    samples: list[Any] = dataclasses.field(default_factory=list)
    emitted: dict[str, Any] = dataclasses.field(default_factory=dict)
    read: set[str] = dataclasses.field(default_factory=set)
    reader: traceback.FrameSummary | None = None  # the first host line that read a key
    unknown_attributes: dict[str, str] = dataclasses.field(default_factory=dict)  # not a field -> our line
    sample_type: type | None = None
    watched: dict[type, Any] = dataclasses.field(default_factory=dict)  # Sample class -> its own __setattr__

    def note(self, keys: Any) -> None:
        self.read.update(keys)
        frame = sys._getframe(2) if self.reader is None else None
        while frame is not None and frame.f_code.co_filename.startswith((_OURS, "<")):
            frame = frame.f_back
        if frame is not None:
            self.reader = traceback.extract_stack(frame, limit=1)[0]


def _noting(method: str) -> Any:
    real = getattr(dict, method)

    def noting(self: Any, *args: Any) -> Any:
        self.reads.note(args[:1] if method in ("__getitem__", "get", "pop") else list(dict.keys(self)))
        return real(self, *args)

    return noting


# Our convert's dict, recording which keys the host reads: a key by item access, get or pop; every
# key by iteration, keys, items or values (a host that walks every key forwards every key).
TrackedData = type(
    "TrackedData",
    (dict,),
    {m: _noting(m) for m in ("__getitem__", "get", "pop", "__iter__", "keys", "items", "values")},
)


def _flat(items: Any) -> list[Any]:
    return [one for item in items for one in _flat(item)] if isinstance(items, list) else [items]


def _watch(reads: KeyReads, items: Any) -> None:
    """From the first sample a hook gets, every attribute set on the host's Sample class is seen:
    one that the dataclass does not declare, set from our package's code, is noted with its line."""
    for sample in _flat(items):
        cls = type(sample)
        if not dataclasses.is_dataclass(sample) or cls in reads.watched:
            continue
        fields = {field.name for field in dataclasses.fields(sample)}
        original = reads.watched[cls] = cls.__setattr__

        def recorder(obj: Any, name: str, value: Any, _fields: set[str] = fields, _set: Any = original) -> None:
            if name not in _fields and not name.startswith("_"):
                caller = sys._getframe(1)
                if caller.f_code.co_filename.startswith(_OURS):
                    line = where(traceback.extract_stack(caller, limit=1)[0], Path(_OURS).parent)
                    reads.unknown_attributes.setdefault(name, line)
                    reads.sample_type = type(obj)
            _set(obj, name, value)

        cls.__setattr__ = recorder  # type: ignore[method-assign]


def _spied(path: str, reads: KeyReads, real: Any) -> Any:
    if "convert" in path.rpartition(".")[2]:

        @functools.wraps(real)
        def convert(args: Any, samples: Any, *rest: Any, **kwargs: Any) -> Any:
            reads.samples = list(samples)
            data = real(args, samples, *rest, **kwargs)
            reads.emitted = dict(data)
            tracked = TrackedData(data)
            tracked.reads = reads
            return tracked

        return convert

    def hook(args: Any, items: Any, *rest: Any, **kwargs: Any) -> Any:
        _watch(reads, items)
        return real(args, items, *rest, **kwargs)

    async def hook_async(*args: Any, **kwargs: Any) -> Any:
        return await hook(*args, **kwargs)

    return functools.wraps(real)(hook_async if inspect.iscoroutinefunction(real) else hook)


@contextlib.contextmanager
def spy_hooks(paths: list[str], reads: KeyReads) -> Iterator[None]:
    """Wrap the hooks the launch flags name, for the step, so the host loads the spies by those paths."""
    patched = []
    for path in paths:
        module_name, _, name = path.rpartition(".")
        module = importlib.import_module(module_name)
        patched.append((module, name, getattr(module, name)))
        setattr(module, name, _spied(path, reads, patched[-1][2]))
    try:
        yield
    finally:
        for module, name, real in patched:
            setattr(module, name, real)
        for cls, original in reads.watched.items():
            cls.__setattr__ = original  # type: ignore[method-assign]
        reads.watched.clear()


def silent_breaks(reads: KeyReads, root: Path, manager_class: type) -> None:
    """The two breaks that raise nowhere: a Sample field our hooks set that the host lacks, and a
    key our convert emits that the host never reads."""
    if reads.unknown_attributes and reads.sample_type is not None:
        named = ", ".join(f"{name} ({hook})" for name, hook in sorted(reads.unknown_attributes.items()))
        raise CheckFailed(
            "sample",
            where(reads.sample_type, root),
            f"our hooks set {named} on the host's {reads.sample_type.__name__}, which declares no such field "
            "(renamed? the value would never reach the trainer)",
        )
    unread = sorted(key for key in reads.emitted if key not in reads.read and key not in OPTIONAL_KEYS)
    if unread:
        raise CheckFailed(
            "convert",
            where(reads.reader or manager_class, root),
            f"our convert emits {', '.join(unread)}, which the host's convert and split never read (renamed? "
            "the values would never reach the trainer)",
        )
