"""How the hooks reach the host's inference router: address, protocol, one client per event loop.

The router is `args.vllm_router_ip/port` (vime, protocol `vllm`) or `args.sglang_router_ip/port`
(slime, protocol `sglang`); MEM_PROTOCOL overrides the choice. Sampling (temperature, top_p,
top_k, seed / sampling_seed) is the host's; its `max_new_tokens` is deliberately not used: a
memory turn and the final turn have their own budgets (MEM_MAX_MEMORY, MEM_MAX_FINAL).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from mem_agent.agent.records import SamplingParams
from mem_agent.host.flags import HostConfigError
from mem_agent.inference.client import ApiProtocol, ClientSettings, RolloutClient
from mem_agent.settings.config import MemAgentConfig, ProtocolChoice

__all__ = ["client_for", "close_all_clients", "close_clients", "forget_clients", "router_address", "sampling_from_host"]

_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[ClientSettings, RolloutClient]] = (
    weakref.WeakKeyDictionary()
)


async def close_clients() -> None:
    """Close this event loop's HTTP sessions (for a loop that is about to end, such as a test's)."""
    for client in _CLIENTS.pop(asyncio.get_running_loop(), {}).values():
        await client.close()


def close_all_clients(timeout_s: float = 10.0) -> None:
    """Close every event loop's HTTP sessions, from outside those loops, once no hook will run again
    (the preflight after its step). The hosts run their rollouts on one background loop that never
    ends, so nothing else would close them before the process exits. A loop running in another
    thread closes its own; one that is not running runs the close here; a closed loop's sessions
    cannot be closed any more and are dropped."""
    for loop, clients in list(_CLIENTS.items()):
        closing = _close(list(clients.values()))
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(closing, loop).result(timeout_s)
        elif not loop.is_closed():
            loop.run_until_complete(closing)
        else:
            closing.close()
    _CLIENTS.clear()


async def _close(clients: list[RolloutClient]) -> None:
    for client in clients:
        await client.close()


def forget_clients() -> None:
    _CLIENTS.clear()


def router_address(args: Any, config: MemAgentConfig) -> tuple[str, ApiProtocol]:
    """The router's base URL and wire protocol for this host trainer."""
    if getattr(args, "vllm_router_ip", None):
        host, port, native = args.vllm_router_ip, args.vllm_router_port, ApiProtocol.VLLM
    elif getattr(args, "sglang_router_ip", None):
        host, port, native = args.sglang_router_ip, args.sglang_router_port, ApiProtocol.SGLANG
    else:
        raise HostConfigError("args has neither vllm_router_ip (vime) nor sglang_router_ip (slime): no router to call")
    protocol = native if config.protocol is ProtocolChoice.AUTO else ApiProtocol(config.protocol.value)
    host = f"[{host}]" if ":" in str(host) and not str(host).startswith("[") else host  # a bare IPv6 address
    return f"http://{host}:{port}", protocol


def _request_limit(args: Any) -> int:
    """The host never has more requests in flight than its own rollout semaphore allows."""
    per_engine = getattr(args, "vllm_server_concurrency", None) or getattr(args, "sglang_server_concurrency", None)
    gpus, per_engine_gpus = getattr(args, "rollout_num_gpus", None), getattr(args, "rollout_num_gpus_per_engine", None)
    if per_engine and gpus and per_engine_gpus:
        return max(1, int(per_engine) * max(1, int(gpus) // int(per_engine_gpus)))
    return 512


def client_for(args: Any, config: MemAgentConfig) -> RolloutClient:
    """One client (one HTTP session) per event loop and router, reused by every call."""
    base_url, protocol = router_address(args, config)
    key = ClientSettings(
        base_url,
        protocol=protocol,
        max_concurrency=_request_limit(args),
        connect_timeout_s=config.connect_timeout_s,
        request_timeout_s=config.request_timeout_s,
        max_retries=config.max_retries,
    )
    per_loop = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        per_loop[key] = RolloutClient(key)
    return per_loop[key]


def sampling_from_host(params: dict[str, Any]) -> SamplingParams:
    """The host's sampling for every turn; its max_new_tokens is deliberately not used (see above)."""
    seed = params.get("seed", params.get("sampling_seed"))  # vime and slime spell it differently
    top_k = params.get("top_k")
    return SamplingParams(
        temperature=float(params.get("temperature", 1.0)),
        top_p=float(params.get("top_p", 1.0)),
        top_k=int(top_k) if top_k is not None else -1,
        seed=int(seed) if seed is not None else None,
    )
