"""What the user asks the preflight for, checked before anything runs: a user mistake is a UsageError.

The checkout is a slime or a vime one (a `slime/` or `vime/` package folder, not both). The
trainer's args keep the router as `--sglang-router-ip/port` (slime) or the vllm ones (vime),
which the host's engine start-up fills in; the preflight stands in for that start-up and fills
them from `--url`, so a URL must say exactly an address and a port. `--host-flag NAME=VALUE`
adds a trainer flag by its attribute name, with a JSON value.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from mem_agent.common.usage import UsageError

HOSTS = ("slime", "vime")


@dataclass(frozen=True)
class PreflightOptions:
    """check_host's options (the names are its flags' destinations)."""

    trainer_root: Path
    url: str | None = None
    local_stack: bool = False
    protocol: str | None = None
    hf_checkpoint: str | None = None
    data: Path | None = None
    num_prompts: int = 2
    n_samples: int = 2
    dp_size: int = 2
    host_flag: list[str] = field(default_factory=list)
    import_timeout: float = 120.0


@dataclass(frozen=True)
class Host:
    name: str
    root: Path


def detect_host(root: Path) -> Host:
    if not root.is_dir():
        raise UsageError(f"--trainer-root {root} is not a folder")
    found = [name for name in HOSTS if (root / name).is_dir()]
    if len(found) > 1:
        raise UsageError(f"--trainer-root {root} holds both slime/ and vime/: point it at one checkout")
    if not found:
        raise UsageError(f"--trainer-root {root} has no slime/ or vime/ package folder: not a slime or vime checkout")
    return Host(found[0], root.resolve())


def host_flag_words(items: list[str]) -> list[str]:
    """`--host-flag reward_key="score"` as the words a command line has: `--reward-key score`."""
    words: list[str] = []
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--host-flag {item!r} must be NAME=VALUE, with the flag's attribute name")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif value is not False:
            words += [flag, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return words


def router_address(url: str) -> tuple[str, int]:
    """The address and port a trainer's args hold for its router (`--sglang-router-ip/port`, or the
    vllm ones); the hooks call it over plain http, so anything else a URL says could not be honoured."""
    problem = f"--url {url} must be http://HOST:PORT, the router as the trainer's args hold it"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as error:  # a port that is not a number, a malformed IPv6 address
        raise UsageError(f"{problem} ({error})") from None
    if parts.scheme == "https":
        raise UsageError(f"{problem}: the hooks reach the router over http (the args hold no scheme)")
    if parts.scheme != "http" or not parts.hostname:
        raise UsageError(problem)
    if port is None:
        raise UsageError(f"{problem}: give the port")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise UsageError(f"{problem}: no path, query or user (the args hold only the address and port)")
    return parts.hostname, port
