"""The trainer's `args` for the preflight: the host's own parser and validation over the launch's flags.

The hosts' parser has three layers: Megatron-LM's, the engine's (`--sglang-*`, `--vllm-*`) and their
own (`get_<host>_extra_args_provider` in the module of train.py's `parse_args`, after slime's
`_pre_parse_mode`, slime/utils/arguments.py:1584), which runs for real with `<host>_validate_args`.
Megatron's and the engine's are one parser of the launch's `megatron` groups' flags and its
`--<engine>-*` flags, each typed as its value reads (JSON, else text). A `host` flag the host's
parser does not know fails, naming it: the hosts call Megatron's parser with
`ignore_unknown_args=True`, so a real run would train without it. EXTRA_ARGS words the host does
not know are taken as Megatron's, and named.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import unittest.mock
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from mem_agent.common.console import command_parser
from mem_agent.launch.recipe import Group
from mem_agent.preflight.checks import CheckFailed, stage, where

ENGINES = {"slime": "sglang", "vime": "vllm"}
# The engine parser's defaults (under its prefix) for what the rollout path reads: one data-parallel
# group per engine, no engine config file or extra routers, no speculative decoding.
ENGINE_DEFAULTS = {"dp_size": 1, "enable_deterministic_inference": False} | dict.fromkeys(
    ("config", "model_routers", "speculative_algorithm", "speculative_config")
)


def json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def launch_words(groups: Iterable[Group]) -> list[str]:
    return [word for group in groups for word in group.words]


def flag_values(groups: Iterable[Group], owner: str | None = None) -> dict[str, list[str]]:
    """Each flag of `owner`'s groups (None: every group's) with the words that follow it up to the
    next flag (at its first use)."""
    values: dict[str, list[str]] = {}
    for group in groups:
        current: list[str] | None = None  # the values being read; None after a flag seen before
        for word in group.words if owner in (None, group.owner) else ():
            if word.startswith("--"):
                current = None if word in values else values.setdefault(word, [])
            elif current is not None:
                current.append(word)
    return values


def megatron_stand_in(flags: dict[str, list[str]]) -> tuple[argparse.ArgumentParser, dict[str, argparse.Action]]:
    """A parser that stores `flags` as Megatron's and the engine's would, each typed as its values
    read, and its actions (a flag the host's parser defines again leaves its action's option_strings)."""
    parser = command_parser("train", prog="train.py", add_help=False, conflict_handler="resolve")
    actions = {}
    for flag, values in flags.items():
        typed = (
            {"type": json_or_text, "nargs": "+" if len(values) > 1 else None} if values else {"action": "store_true"}
        )
        actions[flag] = parser.add_argument(flag, **typed)
    return parser, actions


def _pre_parsed(functions: dict[str, Any], words: list[str]) -> dict[str, Any]:
    """The flags the host parses before its main parser (slime's `_pre_parse_mode`: backend and debug
    modes), as its parse_args merges them into args."""
    with unittest.mock.patch.object(sys, "argv", ["train.py", *words]):
        return {
            key: value for name, pre in functions.items() if "pre_parse" in name for key, value in vars(pre()).items()
        }


def host_args(
    parse_args: Callable[..., Any], groups: tuple[Group, ...], host: str, root: Path, router: tuple[str, int]
) -> tuple[argparse.Namespace, list[str]]:
    """The launch's words through the host's own provider (module of `parse_args`), the router filled
    in as the engine start-up would, then the host's validation; and the stand-ins that took part."""
    module = sys.modules[parse_args.__module__]
    own = {name: f for name, f in vars(module).items() if inspect.isfunction(f) and f.__module__ == module.__name__}
    provider = next((value for name, value in own.items() if name.endswith("extra_args_provider")), None)
    parser_file = where(parse_args, root).rsplit(":", 1)[0]
    if provider is None:
        raise CheckFailed("flags", parser_file, "no get_*_extra_args_provider: cannot read the host's own flags")
    engine, words = ENGINES[host], launch_words(groups)
    stand_in = flag_values(groups, "megatron")
    megatron = len(stand_in)
    stand_in |= {flag: values for flag, values in flag_values(groups).items() if flag.startswith(f"--{engine}-")}
    owned = {flag for group in groups if group.owner != "user" for flag in group.flags()} | stand_in.keys()
    users = {flag: values for flag, values in flag_values(groups, "user").items() if flag not in owned}
    parser, actions = megatron_stand_in({**stand_in, **users})
    args, left = provider()(parser).parse_known_args(words)
    refused = [word.split("=", 1)[0] for word in left if word.startswith("-")]
    if refused:
        detail = f"the launch script passes {refused[0]}, which the host's parser does not know (renamed or removed?)"
        raise CheckFailed("flags", where(provider, root), detail)
    users = {flag: values for flag, values in users.items() if flag in actions[flag].option_strings}  # not the host's
    if left:
        raise CheckFailed("flags", where(provider, root), f"the host's parser leaves {' '.join(left)} unparsed")
    routed = {f"{engine}_router_ip": router[0], f"{engine}_router_port": router[1]}
    vars(args).update({**_pre_parsed(own, words), **routed})
    for name, value in ENGINE_DEFAULTS.items():
        vars(args).setdefault(f"{engine}_{name}", value)
    validate = next((value for name, value in own.items() if name.endswith("validate_args")), None)
    with stage("flags", root, parser_file):  # it fills derived values; current vime's returns (args, ...)
        result = validate(args) if validate else None
    result = result[0] if isinstance(result, tuple) and result else result
    stand_ins = [
        f"Megatron-LM's parser ({megatron} flags of the launch's megatron groups, typed by value, not validated)",
        f"the {engine} engine's parser (its --{engine}-* flags typed by value; defaults: {', '.join(ENGINE_DEFAULTS)})",
    ]
    if users:
        stand_ins.append(
            f"the user's words the host's parser does not know, taken as Megatron-LM's: {', '.join(users)}"
        )
    return (result if isinstance(result, argparse.Namespace) else args), stand_ins
