"""The trainer's `args` for the preflight: the host's own parser and validation over the launch's flags.

Both hosts build their parser in three layers: Megatron-LM's (model, optimizer, parallelism: it
needs Megatron and a GPU build), the rollout engine's (`--sglang-*` in slime, `--vllm-*` in
vime: it needs the engine), and their own flags, which Megatron's parser takes through the
host's extra-args provider (`get_<host>_extra_args_provider` in the module train.py imports
`parse_args` from), with a few flags pre-parsed first (`_pre_parse_mode`). The preflight runs the
host's provider, its pre-parse and its own `<host>_validate_args` for real, and stands in for the
other two:

- Megatron's parser: built from the launch's `megatron` groups (launch/recipe.py), each flag typed as
  its value reads (int, float, else str; a flag without a value is a switch). Flags whose default
  the host resets (`--lr`, `--global-batch-size`, ...) are the host's provider's to reset, as on
  the real parser; Megatron's validate_args is not run.
- the engine's parser: engines.py.

A flag of a `host` group that the host's parser does not know is a failure naming the flag: the
host renamed or dropped it. The hosts call Megatron's parser with `ignore_unknown_args=True`, so
a real run would not stop on it: it would train without what the flag asked for. Words of a
`user` group (EXTRA_ARGS) that the host's parser does not know are taken as Megatron-LM's,
typed the same way, and named in the report.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.common.console import command_parser
from mem_agent.launch.recipe import Group
from mem_agent.preflight import engines
from mem_agent.preflight.failures import CheckFailed, where
from mem_agent.preflight.launch import Launch


@dataclass
class HostArgs:
    args: argparse.Namespace
    parser_file: str
    stand_ins: list[str]


def _own(module: types.ModuleType, suffix: str) -> Callable[..., Any] | None:
    """The function of `module` itself (not one it imports) whose name ends with `suffix`."""
    for name, value in vars(module).items():
        if name.endswith(suffix) and inspect.isfunction(value) and value.__module__ == module.__name__:
            return value
    return None


def flag_values(groups: Iterable[Group]) -> dict[str, list[str]]:
    """Each flag of `groups` with the words that follow it up to the next flag (at its first use)."""
    values: dict[str, list[str]] = {}
    for group in groups:
        current: list[str] | None = None  # the values being read; None after a flag seen before
        for word in group.words:
            if word.startswith("--"):
                current = None if word in values else values.setdefault(word, [])
            elif current is not None:
                current.append(word)
    return values


def _kind(values: list[str]) -> type:
    for kind in (int, float):
        try:
            for value in values:
                kind(value)
        except ValueError:
            continue
        return kind
    return str


def megatron_stand_in(flags: dict[str, list[str]]) -> argparse.ArgumentParser:
    """A parser that stores `flags` as Megatron's would, each typed as its values read."""
    parser = command_parser("train", prog="train.py", add_help=False, conflict_handler="resolve")
    for flag, values in flags.items():
        if not values:
            parser.add_argument(flag, action="store_true")
        elif len(values) == 1:
            parser.add_argument(flag, type=_kind(values))
        else:
            parser.add_argument(flag, type=_kind(values), nargs="+")
    return parser


def _pre_parsed(module: types.ModuleType, words: list[str]) -> dict[str, Any]:
    """The flags the host parses before its main parser (slime's `_pre_parse_mode`: backend and
    debug modes), as its parse_args merges them into args."""
    merged: dict[str, Any] = {}
    for name, value in vars(module).items():
        if "pre_parse" in name and inspect.isfunction(value) and value.__module__ == module.__name__:
            saved = sys.argv
            sys.argv = ["train.py", *words]
            try:
                merged.update(vars(value()))
            finally:
                sys.argv = saved
    return merged


def _unknown_flags(provider: Callable[..., Any], stand_in: dict[str, list[str]], words: list[str]) -> list[str]:
    _, unknown = provider()(megatron_stand_in(stand_in)).parse_known_args(words)
    return [word.split("=", 1)[0] for word in unknown if word.startswith("-")]


def host_args(parse_args: Callable[..., Any], launch: Launch, *, engine: str, root: Path) -> HostArgs:
    """The launch's words through the host's own provider (module of `parse_args`)."""
    module = sys.modules[parse_args.__module__]
    provider = _own(module, "extra_args_provider")
    parser_file = where(parse_args, root).rsplit(":", 1)[0]
    if provider is None:
        raise CheckFailed("flags", parser_file, "no get_*_extra_args_provider: cannot read the host's own flags")
    engine_stored, words = engines.engine_flags(launch.words(), engine)
    stand_in = flag_values(launch.owned_by("megatron"))
    unknown = _unknown_flags(provider, stand_in, words)
    owned = {flag for group in launch.groups if group.owner != "user" for flag in group.flags()}
    refused = [flag for flag in unknown if flag in owned]
    if refused:
        raise CheckFailed(
            "flags",
            where(provider, root),
            f"the launch script passes {refused[0]}, which the host's parser does not know (renamed or removed?)",
        )
    users = {flag: values for flag, values in flag_values(launch.owned_by("user")).items() if flag in unknown}
    args, left = provider()(megatron_stand_in({**stand_in, **users})).parse_known_args(words)
    if left:
        raise CheckFailed("flags", where(provider, root), f"the host's parser leaves {' '.join(left)} unparsed")
    for name, value in {**engine_stored, **_pre_parsed(module, launch.words())}.items():
        setattr(args, name, value)
    stand_ins = [
        f"Megatron-LM's parser ({len(stand_in)} flags of the launch's megatron groups, typed by value, "
        "its validate_args not run)",
        engines.parser_stand_in(engine),
    ]
    if users:
        taken = ", ".join(users)
        stand_ins.append(f"the user's words the host's parser does not know, taken as Megatron-LM's: {taken}")
    return HostArgs(args, parser_file, stand_ins)


def validate(host: HostArgs, parse_args: Callable[..., Any]) -> None:
    """The host's own validation of the parsed args, which fills derived values (the eval function,
    and on current vime the data source path). slime's changes args in place; current vime's
    returns `(args, ...)`: either way `host.args` is what the host goes on with."""
    validate_fn = _own(sys.modules[parse_args.__module__], "validate_args")
    if validate_fn is None:
        return
    result = validate_fn(host.args)
    if isinstance(result, tuple) and result and isinstance(result[0], argparse.Namespace):
        result = result[0]
    if isinstance(result, argparse.Namespace):
        host.args = result
