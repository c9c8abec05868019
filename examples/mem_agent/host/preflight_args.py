"""The trainer's `args` for the preflight: the host's own parser and validation over the launch flags.

Both hosts build their parser in three layers: Megatron-LM's (model, optimizer, parallelism:
it needs Megatron and a GPU build), the rollout engine's (`--sglang-*` in slime, `--vllm-*` in
vime: it needs the engine), and their own flags, which Megatron's parser takes through the
host's extra-args provider (`get_<host>_extra_args_provider` in the module train.py imports
`parse_args` from), with a few flags pre-parsed first (`_pre_parse_mode`). The preflight runs the
host's provider, its pre-parse and its own `<host>_validate_args` for real, and stands in for the
other two:

- Megatron's parser: the flags in `MEGATRON_FLAGS` (the Megatron-LM flags our launch script
  passes, with Megatron's defaults for the few the rollout path reads) are accepted as Megatron's
  parser would store them; Megatron's validate_args is not run.
- the engine's parser: a flag with the engine's prefix is stored under its attribute name,
  typed as its value reads; the router address the engine start-up fills in is the server the
  preflight uses.

A launch flag that none of the three knows is a failure: the host renamed or dropped it, and
the real parser would exit on it.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Megatron-LM's flags in our launch script; the value says how Megatron stores it (None: a switch).
MEGATRON_FLAGS: dict[str, type | None] = {
    **dict.fromkeys(
        ("--swiglu", "--group-query-attention", "--use-rotary-position-embeddings", "--disable-bias-linear"), None
    ),
    **dict.fromkeys(("--qk-layernorm", "--sequence-parallel", "--accumulate-allreduce-grads-in-fp32"), None),
    **dict.fromkeys(("--attention-softmax-in-fp32", "--use-dynamic-batch-size"), None),
    **dict.fromkeys(("--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads"), int),
    **dict.fromkeys(
        ("--num-query-groups", "--kv-channels", "--vocab-size", "--save-interval", "--lr-warmup-iters"), int
    ),
    **dict.fromkeys(("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size"), int),
    **dict.fromkeys(("--recompute-num-layers", "--global-batch-size", "--micro-batch-size", "--seed"), int),
    **dict.fromkeys(("--rotary-base", "--norm-epsilon", "--lr", "--weight-decay", "--adam-beta1"), float),
    **dict.fromkeys(("--adam-beta2", "--clip-grad", "--attention-dropout", "--hidden-dropout"), float),
    **dict.fromkeys(("--normalization", "--load", "--save", "--optimizer", "--lr-decay-style"), str),
    **dict.fromkeys(("--recompute-granularity", "--recompute-method", "--attention-backend"), str),
}
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
# Megatron's defaults for flags the rollout path reads and the launch script does not pass.
MEGATRON_DEFAULTS = {"--micro-batch-size": 1, "--seed": 1234}


class HostArgsError(Exception):
    """The host's parser or validation refused the launch flags: (where, message)."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(f"{where}: {detail}")
        self.where, self.detail = where, detail


@dataclass
class HostArgs:
    args: argparse.Namespace
    parser_file: str
    stand_ins: list[str]


def _where(function: Callable[..., Any], root: str) -> str:
    try:
        path = inspect.getsourcefile(function) or "?"
        line = inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return getattr(function, "__module__", "?")
    return f"{path.removeprefix(root).lstrip('/')}:{line}"


def _own(module: types.ModuleType, suffix: str) -> Callable[..., Any] | None:
    """The function of `module` itself (not one it imports) whose name ends with `suffix`."""
    for name, value in vars(module).items():
        if name.endswith(suffix) and inspect.isfunction(value) and value.__module__ == module.__name__:
            return value
    return None


def _megatron_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False, conflict_handler="resolve")
    for flag, kind in MEGATRON_FLAGS.items():
        if kind is None:
            parser.add_argument(flag, action="store_true")
        else:
            parser.add_argument(flag, type=kind, default=MEGATRON_DEFAULTS.get(flag))
    return parser


def _engine_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _engine_flags(words: list[str], prefix: str) -> tuple[dict[str, Any], list[str]]:
    """The engine-prefixed flags as the engine's parser stores them, and the words left over."""
    engine = prefix.strip("-").rstrip("-")
    stored: dict[str, Any] = {f"{engine}_{name}": value for name, value in ENGINE_DEFAULTS.items()}
    left: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith(prefix):
            name = word[2:].replace("-", "_")
            if index + 1 < len(words) and not words[index + 1].startswith("--"):
                stored[name] = _engine_value(words[index + 1])
                index += 2
                continue
            stored[name] = True
        else:
            left.append(word)
        index += 1
    return stored, left


def _pre_parsed(module: types.ModuleType, flags: list[str]) -> dict[str, Any]:
    """The flags the host parses before its main parser (slime's `_pre_parse_mode`: backend and
    debug modes), as its parse_args merges them into args."""
    merged: dict[str, Any] = {}
    for name, value in vars(module).items():
        if "pre_parse" in name and inspect.isfunction(value) and value.__module__ == module.__name__:
            saved = sys.argv
            sys.argv = ["train.py", *flags]
            try:
                merged.update(vars(value()))
            finally:
                sys.argv = saved
    return merged


def host_args(parse_args: Callable[..., Any], flags: list[str], *, engine: str, root: str) -> HostArgs:
    """Parse `flags` with the host's own provider (module of `parse_args`), then its validation."""
    module = sys.modules[parse_args.__module__]
    provider_factory = _own(module, "extra_args_provider")
    parser_file = _where(parse_args, root).rsplit(":", 1)[0]
    if provider_factory is None:
        raise HostArgsError(parser_file, "no get_*_extra_args_provider: cannot read the host's own flags")
    engine_stored, words = _engine_flags(flags, f"--{engine}-")
    parser = provider_factory()(_megatron_parser())
    args, unknown = parser.parse_known_args(words)
    if unknown:
        flag = next((word for word in unknown if word.startswith("-")), unknown[0])
        raise HostArgsError(
            _where(provider_factory, root),
            f"the launch script passes {flag}, which the host's parser does not know (renamed or removed?)",
        )
    for name, value in engine_stored.items():
        setattr(args, name, value)
    for name, value in _pre_parsed(module, flags).items():
        setattr(args, name, value)
    stand_ins = [
        f"Megatron-LM's parser ({len(MEGATRON_FLAGS)} flags of the launch script, Megatron's defaults; its "
        "validate_args not run)",
        f"the {engine} engine's parser (its --{engine}-* flags stored as given, defaults for "
        f"{', '.join(ENGINE_DEFAULTS)})",
    ]
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
