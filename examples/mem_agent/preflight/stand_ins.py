"""Import stand-ins that let a trainer checkout's rollout code load on a laptop.

Exactly two kinds of module are replaced, and nothing else:

- `ray`, always, by an in-process stand-in: `ray.put` keeps the object, `ray.get` returns it,
  `ray.remote` on a class gives an actor class whose `.options(...).remote(...)` builds the
  instance here and whose handle's `method.remote(...)` calls it at once (so train.py's
  `ray.get(manager.generate.remote(0))` runs as written), `ray.init` does nothing. The host's
  rollout path only uses Ray to ship data between its actors; a real `ray.put` would start a
  local cluster, which the preflight neither needs nor should leave behind. `before_actor_start`
  registers a call made with the actor's class just before an actor is built (the preflight
  stands in for the engine start-up there: see engines.py).
- a module that is not installed here and is imported by a file inside the trainer checkout
  (GPU-only packages such as `sglang`, `megatron`, `transformer_engine`, or optional ones such
  as `wandb` and `pylatexenc`): an empty stand-in whose attributes are placeholders. A
  placeholder may be used as a decorator, a base class, or a type annotation, which is what
  import time needs; calling it for real raises `StubUsedError` naming it, so the preflight reports
  "this step needs <module>" instead of running on a fake.

`installed()` lists what was stubbed, for the preflight's report. These stand-ins change the
process for good (sys.modules, sys.meta_path), so they are installed only in the child process
that imports train.py (child.py), never in the process that runs the preflight.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["StubUsedError", "before_actor_start", "install", "installed"]

_STUBBED: list[str] = []
_BEFORE_ACTOR_START: list[Callable[[type], None]] = []


class StubUsedError(RuntimeError):
    """Code on the checked path called into a module that is not installed here."""


class _PlaceholderMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{cls.__qualname__}.{name}")

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator at import time
        raise StubUsedError(f"{cls.__qualname__} is from a module that is not installed here (stubbed)")

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__


def _placeholder(qualname: str) -> type:
    placeholder = _PlaceholderMeta(qualname.rsplit(".", 1)[-1], (), {})
    placeholder.__qualname__ = qualname
    return placeholder


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{self.__name__}.{name}")


def _ray_module() -> types.ModuleType:
    """The in-process Ray: objects stay in this process."""

    class ObjectRef:
        def __init__(self, value: Any) -> None:
            self.value = value

    def put(value: Any, **kwargs: Any) -> ObjectRef:
        return ObjectRef(value)

    def get(refs: Any, **kwargs: Any) -> Any:
        if isinstance(refs, list):
            return [get(ref) for ref in refs]
        return refs.value if isinstance(refs, ObjectRef) else refs

    class _Method:
        def __init__(self, method: Any) -> None:
            self.method = method

        def remote(self, *args: Any, **kwargs: Any) -> ObjectRef:
            return ObjectRef(self.method(*args, **kwargs))

        def options(self, **kwargs: Any) -> _Method:
            return self

    class ActorHandle:
        """An actor built in this process: `handle.method.remote(...)` calls it now."""

        def __init__(self, instance: Any) -> None:
            self._instance = instance

        def __getattr__(self, name: str) -> Any:
            return _Method(getattr(self._instance, name))

    class ActorClass:
        def __init__(self, cls: type) -> None:
            self.cls = cls
            self.__name__ = cls.__name__
            self.__qualname__ = cls.__qualname__
            self.__module__ = cls.__module__

        def options(self, **kwargs: Any) -> ActorClass:
            return self

        def remote(self, *args: Any, **kwargs: Any) -> ActorHandle:
            for hook in list(_BEFORE_ACTOR_START):
                hook(self.cls)
            return ActorHandle(self.cls(*args, **kwargs))

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise TypeError(f"Actors cannot be instantiated directly: use {self.__name__}.remote()")

    class RemoteFunction:
        def __init__(self, function: Any) -> None:
            self.function = function

        def options(self, **kwargs: Any) -> RemoteFunction:
            return self

        def remote(self, *args: Any, **kwargs: Any) -> ObjectRef:
            return ObjectRef(self.function(*args, **kwargs))

    def _wrap(target: Any) -> Any:
        return ActorClass(target) if isinstance(target, type) else RemoteFunction(target)

    def remote(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return _wrap(args[0])
        return _wrap

    ray = _StubModule("ray")
    ray.__path__ = []  # a package: `ray.util.*` and friends resolve to stand-ins
    for name, value in {
        "ObjectRef": ObjectRef,
        "actor": types.SimpleNamespace(ActorHandle=ActorHandle, ActorClass=ActorClass),
        "put": put,
        "get": get,
        "remote": remote,
        "init": lambda *a, **k: None,
        "is_initialized": lambda: True,
    }.items():
        setattr(ray, name, value)
    return ray


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, trainer_root: Path) -> None:
        self.trainer_root = trainer_root.resolve()

    def _imported_from_checkout(self) -> bool:
        """Whether the file running the `import` statement (not any caller further up) is the checkout's."""
        frame = sys._getframe(2)
        while frame is not None and (
            frame.f_code.co_filename.startswith("<") or "importlib" in frame.f_code.co_filename
        ):
            frame = frame.f_back
        return frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(self.trainer_root)

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> Any:
        top = fullname.split(".", 1)[0]
        if top in _STUBBED:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if "." in fullname or not self._imported_from_checkout():
            return None
        sys.meta_path.remove(self)
        try:
            missing = importlib.util.find_spec(fullname) is None
        finally:
            sys.meta_path.insert(0, self)
        if not missing:
            return None
        _STUBBED.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


@contextlib.contextmanager
def before_actor_start(hook: Callable[[type], None]) -> Iterator[None]:
    """Within the block, `hook(actor_class)` runs before each actor the in-process Ray builds."""
    _BEFORE_ACTOR_START.append(hook)
    try:
        yield
    finally:
        _BEFORE_ACTOR_START.remove(hook)


def install(trainer_root: Path) -> None:
    """Stand in for `ray` and for modules missing here that the checkout imports (see above)."""
    if "ray" not in _STUBBED:
        sys.modules["ray"] = _ray_module()
        _STUBBED.append("ray")
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder(trainer_root))


def installed() -> list[str]:
    return list(_STUBBED)
