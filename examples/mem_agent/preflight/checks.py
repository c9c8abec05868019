"""The checks that catch a host change which would break training silently.

A renamed field does not raise: our hooks set `sample.rollout_log_probs` on a Sample that no
longer has the field (Python allows it), our convert emits a key the host's split no longer
forwards, and the logprobs never reach the trainer. So the preflight watches the step:

- our hooks run through spies (the module attributes the launch flags name are wrapped for the
  step, so the host loads them by the same paths). From the first sample a hook gets, the host's
  Sample class records every attribute set on it that the dataclass does not declare, when the
  code setting it is ours (the host's own extras, such as slime's trace carrier, are not). The
  convert spy records the samples the host hands it and returns its dict as a `TrackedData`,
  which records every key the host's code reads from it;
- after the step (`silent_breaks`), no such attribute may exist, and every key our convert
  emitted must have been read by the host (or be in `OPTIONAL_KEYS`, with the reason it may go
  unread).
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

from mem_agent.preflight.failures import CheckFailed, where

# Keys our convert may emit that no host split forwards, and why that is fine.
OPTIONAL_KEYS = {
    "metadata": "each row's train_metadata, which the hosts' own convert emits alike for their loggers; "
    "no split forwards it to a rank",
}
_OURS = str(Path(__file__).resolve().parents[1])  # the mem_agent package: our frames, not the host's


class KeyReads:
    """What the spy saw: the samples our convert got, the keys it emitted, the keys the host read."""

    def __init__(self) -> None:
        self.samples: list[Any] = []
        self.emitted: dict[str, Any] = {}
        self.read: set[str] = set()
        self.reader: traceback.FrameSummary | None = None  # the first host line that read a key
        self.unknown_attributes: dict[str, str] = {}  # attribute our hooks set, not a Sample field -> our line
        self.sample_type: type | None = None
        self.watched: dict[type, Any] = {}  # Sample classes whose __setattr__ records, and the original

    def note(self, keys: Any) -> None:
        self.read.update(keys)
        if self.reader is None:
            frame = sys._getframe(2)
            while frame is not None and frame.f_code.co_filename.startswith((_OURS, "<")):
                frame = frame.f_back
            if frame is not None:
                self.reader = traceback.FrameSummary(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


class TrackedData(dict):
    """Our convert's dict, recording which keys the host reads (item access, get, pop, iteration)."""

    reads: KeyReads

    def __getitem__(self, key: Any) -> Any:
        self.reads.note([key])
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self.reads.note([key])
        return super().get(key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        self.reads.note([key])
        return super().pop(key, *default)

    def __iter__(self) -> Iterator[Any]:
        self.reads.note(list(super().keys()))  # a host that walks every key forwards every key
        return super().__iter__()

    def keys(self) -> Any:
        self.reads.note(list(super().keys()))
        return super().keys()

    def items(self) -> Any:
        self.reads.note(list(super().keys()))
        return super().items()

    def values(self) -> Any:
        self.reads.note(list(super().keys()))
        return super().values()


def _watch(reads: KeyReads, items: Any) -> None:
    """From the first sample a hook gets, every attribute set on the host's Sample class is seen:
    one that the dataclass does not declare, set from our package's code, is noted with its line."""
    for sample in _flat([items]):
        cls = type(sample)
        if not dataclasses.is_dataclass(sample) or cls in reads.watched:
            continue
        fields = {field.name for field in dataclasses.fields(sample)}
        original = cls.__setattr__

        def recorder(obj: Any, name: str, value: Any, _fields: set[str] = fields, _set: Any = original) -> None:
            if name not in _fields and not name.startswith("_"):
                caller = sys._getframe(1)
                if caller.f_code.co_filename.startswith(_OURS):
                    reads.unknown_attributes.setdefault(name, where(caller, Path(_OURS).parent))
                    reads.sample_type = type(obj)
            _set(obj, name, value)

        reads.watched[cls] = original
        cls.__setattr__ = recorder  # type: ignore[method-assign]


def _spied(path: str, reads: KeyReads, real: Any) -> Any:
    if path.endswith("convert_samples_to_train_data") or "convert" in path.rpartition(".")[2]:

        @functools.wraps(real)
        def convert(args: Any, samples: Any, *rest: Any, **kwargs: Any) -> Any:
            reads.samples = list(samples)
            data = real(args, samples, *rest, **kwargs)
            tracked = TrackedData(data)
            tracked.reads = reads
            reads.emitted = dict(data)
            return tracked

        return convert
    if inspect.iscoroutinefunction(real):

        @functools.wraps(real)
        async def hook_async(args: Any, items: Any, *rest: Any, **kwargs: Any) -> Any:
            _watch(reads, items)
            return await real(args, items, *rest, **kwargs)

        return hook_async

    @functools.wraps(real)
    def hook(args: Any, items: Any, *rest: Any, **kwargs: Any) -> Any:
        _watch(reads, items)
        return real(args, items, *rest, **kwargs)

    return hook


@contextlib.contextmanager
def spy_hooks(paths: list[str], reads: KeyReads) -> Iterator[None]:
    """Wrap the hooks the launch flags name, for the step, so the host loads the spies by those paths."""
    patched = []
    for path in paths:
        module_name, _, name = path.rpartition(".")
        module = importlib.import_module(module_name)
        real = getattr(module, name)
        setattr(module, name, _spied(path, reads, real))
        patched.append((module, name, real))
    try:
        yield
    finally:
        for module, name, real in patched:
            setattr(module, name, real)
        for cls, original in reads.watched.items():
            cls.__setattr__ = original  # type: ignore[method-assign]
        reads.watched.clear()


def _flat(samples: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for item in samples:
        flat.extend(_flat(item) if isinstance(item, list) else [item])
    return flat


def convert_keys_unread(reads: KeyReads) -> list[str]:
    """Keys our convert emitted that the host never read (the optional ones aside)."""
    return sorted(key for key in reads.emitted if key not in reads.read and key not in OPTIONAL_KEYS)


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
    unread = convert_keys_unread(reads)
    if unread:
        raise CheckFailed(
            "convert",
            where(reads.reader or manager_class, root),
            f"our convert emits {', '.join(unread)}, which the host's convert and split never read (renamed? "
            "the values would never reach the trainer)",
        )
