"""What needs a GPU or a cluster, stood in for in the child process only (they change the process for
good), each named in the PASS line.

- `ray`: in-process; actors are built here and `.remote(...)` calls at once, so train.py's
  `ray.get(manager.generate.remote(0))` runs as written (a real `ray.put` would start a cluster).
- a module the checkout imports that is not installed here (`sglang`, `megatron`, `wandb`, ...):
  placeholders for import time (a decorator, a base class, an annotation); calling one raises
  `StubUsedError` naming it, instead of running on a fake.
- `start_rollout_servers(args, pg)`: before the first actor (the RolloutManager, whose `__init__`
  starts the engines) it is found as that class reaches it, its module's attribute (slime:
  slime/ray/rollout.py) or imported in a method of it (current vime, in `RolloutManager.__init__`,
  read from the compiled code), and replaced there and where defined by one that starts no engine.
"""

from __future__ import annotations

import dis
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mem_agent.preflight.checks import CheckFailed, where

START_UP = "start_rollout_servers"
STUBBED: list[str] = []  # the modules stood in for, for the report
REPLACED: list[str] = []  # `module.start_rollout_servers` for each module the start-up was replaced in


class StubUsedError(RuntimeError):
    """Code on the checked path called into a module that is not installed here."""


class _PlaceholderMeta(type):
    """A name in a stubbed module: a decorator, a base class or an annotation at import time."""

    def __getattr__(cls, name: str) -> Any:
        return _placeholder(cls.__qualname__, name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator at import time
        raise StubUsedError(f"{cls.__qualname__} is from a module that is not installed here (stubbed)")

    def __or__(cls, other: Any) -> Any:
        return cls  # as an annotation: `X | None`, `X[int]`

    __ror__ = __getitem__ = __or__


def _placeholder(owner: str, name: str) -> type:
    if name.startswith("__"):
        raise AttributeError(name)
    placeholder = _PlaceholderMeta(name, (), {})
    placeholder.__qualname__ = f"{owner}.{name}"
    return placeholder


def _stub(module: types.ModuleType) -> types.ModuleType:
    """`module` as a package (`ray.util.*` and friends resolve to stand-ins) whose every name is a
    placeholder (a module's own `__getattr__`, PEP 562)."""
    module.__path__ = []
    module.__getattr__ = functools.partial(_placeholder, module.__name__)  # type: ignore[method-assign]
    return module


def _ray_module(before_actor: Callable[[type], None]) -> types.ModuleType:
    """The in-process Ray: objects stay in this process; `before_actor(cls)` runs before each actor is built."""

    class ObjectRef:
        def __init__(self, value: Any, **kwargs: Any) -> None:  # also `ray.put(value)`
            self.value = value

    def get(refs: Any, **kwargs: Any) -> Any:
        if isinstance(refs, list):
            return [get(ref) for ref in refs]
        return refs.value if isinstance(refs, ObjectRef) else refs

    class Remote:
        """A remote function, an actor's method or an actor class: `.remote(...)` calls it now (an
        actor class: builds the actor in this process)."""

        def __init__(self, function: Any) -> None:
            self.function = functools.update_wrapper(self, function, updated=()).__wrapped__

        def options(self, **kwargs: Any) -> Remote:
            return self

        def remote(self, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(self.function, type):
                return ObjectRef(self.function(*args, **kwargs))
            before_actor(self.function)
            return ActorHandle(self.function(*args, **kwargs))

    class ActorHandle:
        def __init__(self, instance: Any) -> None:
            self._instance = instance

        def __getattr__(self, name: str) -> Any:
            return Remote(getattr(self._instance, name))

    def remote(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return Remote(args[0])
        return remote  # `@ray.remote(num_gpus=1)`: the decorator, once its options are given

    ray = _stub(types.ModuleType("ray"))
    ray.__dict__.update(
        ObjectRef=ObjectRef,
        actor=types.SimpleNamespace(ActorHandle=ActorHandle, ActorClass=Remote),
        put=ObjectRef,
        get=get,
        remote=remote,
        init=lambda *a, **k: None,
        is_initialized=lambda: True,
    )
    return ray


class _Finder(importlib.abc.Loader):
    """Finds a top-level module the checkout imports that is not installed here, and its submodules."""

    def __init__(self, trainer_root: Path) -> None:
        self.trainer_root = trainer_root.resolve()

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> Any:
        if fullname.split(".", 1)[0] not in STUBBED:
            frame = sys._getframe(1)  # up to the file running the `import` statement, not any caller further up
            while frame and (frame.f_code.co_filename.startswith("<") or "importlib" in frame.f_code.co_filename):
                frame = frame.f_back
            checkout = frame and Path(frame.f_code.co_filename).resolve().is_relative_to(self.trainer_root)
            if "." in fullname or not checkout:
                return None
            sys.meta_path.remove(self)
            try:
                if importlib.util.find_spec(fullname) is not None:
                    return None  # installed here
            finally:
                sys.meta_path.insert(0, self)
            STUBBED.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def exec_module(self, module: types.ModuleType) -> None:
        _stub(module)


def _imported_by_methods(actor_class: type) -> list[str]:
    """Modules the class's own methods import the start-up from (`from M import start_rollout_servers`)."""
    package = sys.modules[actor_class.__module__].__package__ or ""
    found: list[str] = []
    for code in (getattr(member, "__code__", None) for member in vars(actor_class).values()):
        steps = list(dis.get_instructions(code)) if code else []
        for level, names, module in zip(steps, steps[1:], steps[2:], strict=False):  # LOAD_CONST 2x, IMPORT_NAME
            if module.opname == "IMPORT_NAME" and START_UP in (names.argval or ()):
                found.append(importlib.util.resolve_name("." * level.argval + module.argval, package))
    return found


def _stand_in_start_up(root: Path, actor_class: type) -> None:
    """Before the first actor is built: the start-up it reaches starts no engine."""
    if REPLACED:
        return
    home = sys.modules[actor_class.__module__]
    reached = [home, *(importlib.import_module(name) for name in _imported_by_methods(actor_class))]
    modules = [module for module in reached if callable(getattr(module, START_UP, None))]
    if not modules:
        raise CheckFailed(
            "manager",
            where(actor_class, root),
            f"{actor_class.__name__} reaches no {START_UP} (neither its module {home.__name__} nor an import "
            "in its methods): the engine start-up was renamed or moved, and the preflight cannot stand in for it",
        )
    real = getattr(modules[0], START_UP)
    returns_pair = "tuple" in str(inspect.signature(real).return_annotation)  # `({}, [])` or `{}`
    defining = sys.modules.get(real.__module__)
    for module in dict.fromkeys([*modules, *([defining] if isinstance(defining, types.ModuleType) else [])]):
        setattr(module, START_UP, lambda *args, **kwargs: ({}, []) if returns_pair else {})
        REPLACED.append(f"{module.__name__}.{START_UP}")


def install(trainer_root: Path) -> None:
    """Stand in for `ray`, for modules missing here that the checkout imports, and for the engine
    start-up the first actor reaches (see above)."""
    sys.modules["ray"] = _ray_module(functools.partial(_stand_in_start_up, trainer_root))
    STUBBED.append("ray")
    sys.meta_path.insert(0, _Finder(trainer_root))
