"""The router address a trainer's args hold, from the URL check_host is given.

The trainer's args keep the router as `--sglang-router-ip/port` (slime) or the vllm ones (vime),
which the host's engine start-up fills in; the preflight stands in for that start-up and fills
them from `--url`, so a URL must say exactly an address and a port.
"""

from __future__ import annotations

import urllib.parse

from mem_agent.common.usage import UsageError


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
