"""The rollout engine, stood in three times: its parser, its start-up and its router.

- Its parser (SGLang's in slime, vLLM's in vime) needs the engine installed. A launch flag with
  the engine's prefix (`--sglang-*`, `--vllm-*`) is stored under its attribute name, typed as its
  value reads, over the engine parser's defaults for what the rollout path reads.
- Its router address, which the real start-up fills into args, is the server the preflight was
  given.
- Its start-up, `start_rollout_servers(args, pg)`, starts engines on GPUs. Right before train.py's
  path builds its first Ray actor (the RolloutManager, whose `__init__` starts the engines), the
  stand-in finds the function the way that class reaches it: as an attribute of the class's
  module (defined there, or imported at its top: slime), or in the module one of the class's own
  methods imports it from when it runs (`from ...deployment import start_rollout_servers` inside
  `__init__`: current vime), read from the method's compiled code. It replaces the function in
  each of those modules and in the one that defines it; the replacement starts no engine. A
  class that reaches no such function is a failure at its line: the host renamed or moved its
  engine start-up.
"""

from __future__ import annotations

import dis
import importlib
import importlib.util
import inspect
import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mem_agent.preflight.failures import CheckFailed, where

ENGINES = {"slime": "sglang", "vime": "vllm"}
START_UP = "start_rollout_servers"
# The engine parser's defaults (under its prefix) for what the rollout path reads: one data-parallel
# group per engine, no engine config file or extra routers, no speculative decoding.
ENGINE_DEFAULTS = {
    "dp_size": 1,
    "config": None,
    "model_routers": None,
    "enable_deterministic_inference": False,
    "speculative_algorithm": None,
    "speculative_config": None,
}


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def engine_flags(words: list[str], engine: str) -> tuple[dict[str, Any], list[str]]:
    """The `--<engine>-*` flags as the engine's parser stores them, and the words left over."""
    prefix = f"--{engine}-"
    stored: dict[str, Any] = {f"{engine}_{name}": value for name, value in ENGINE_DEFAULTS.items()}
    left: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith(prefix):
            left.append(word)
            index += 1
            continue
        name = word[2:].replace("-", "_")
        if index + 1 < len(words) and not words[index + 1].startswith("--"):
            stored[name] = _value(words[index + 1])
            index += 2
        else:
            stored[name] = True
            index += 1
    return stored, left


def parser_stand_in(engine: str) -> str:
    """How the engine's parser is stood in, for the report."""
    defaults = ", ".join(ENGINE_DEFAULTS)
    return f"the {engine} engine's parser (its --{engine}-* flags stored as given, defaults for {defaults})"


def set_router(args: Any, engine: str, address: str, port: int) -> None:
    """What the engine start-up fills in: the router's address (the server the preflight uses)."""
    setattr(args, f"{engine}_router_ip", address)
    setattr(args, f"{engine}_router_port", port)


def _imported_by_methods(actor_class: type) -> list[str]:
    """Modules the class's own methods import the start-up from (`from M import start_rollout_servers`)."""
    package = sys.modules[actor_class.__module__].__package__ or ""
    found: list[str] = []
    for member in vars(actor_class).values():
        code = getattr(member, "__code__", None)
        if code is None:
            continue
        constants: list[Any] = []
        module_name = None
        for instruction in dis.get_instructions(code):
            if instruction.opname == "LOAD_CONST":
                constants = [*constants[-1:], instruction.argval]
            elif instruction.opname == "IMPORT_NAME":  # preceded by LOAD_CONST level, LOAD_CONST names
                level = constants[0] if len(constants) == 2 and isinstance(constants[0], int) else 0
                module_name = importlib.util.resolve_name("." * level + instruction.argval, package)
            elif instruction.opname == "IMPORT_FROM" and instruction.argval == START_UP and module_name:
                found.append(module_name)
    return found


class StartUpStandIn:
    """Before the first actor is built: the start-up it reaches starts no engine."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.replaced: list[str] = []  # `module.start_rollout_servers` for each module replaced in

    def __call__(self, actor_class: type) -> None:
        if self.replaced:
            return
        home = sys.modules[actor_class.__module__]
        reached = [home, *(importlib.import_module(name) for name in _imported_by_methods(actor_class))]
        modules = [module for module in reached if callable(getattr(module, START_UP, None))]
        if not modules:
            raise CheckFailed(
                "manager",
                where(actor_class, self.root),
                f"{actor_class.__name__} reaches no {START_UP} (neither its module {home.__name__} nor an import "
                "in its methods): the engine start-up was renamed or moved, and the preflight cannot stand in for it",
            )
        real = getattr(modules[0], START_UP)
        defining = sys.modules.get(real.__module__)
        stand_in = _no_engines(real)
        for module in dict.fromkeys([*modules, *([defining] if isinstance(defining, types.ModuleType) else [])]):
            setattr(module, START_UP, stand_in)
            self.replaced.append(f"{module.__name__}.{START_UP}")


def _no_engines(real: Callable[..., Any]) -> Callable[..., Any]:
    """Returns what `real` returns when it starts no engine: `({}, [])` or `{}`, by its annotation."""
    returns_pair = "tuple" in str(inspect.signature(real).return_annotation)

    def no_engines(*args: Any, **kwargs: Any) -> Any:
        return ({}, []) if returns_pair else {}

    return no_engines
