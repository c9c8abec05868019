"""One training rollout step of the host double over our hooks, against a real server, recorded.

Every request goes through a fault proxy (no faults unless a plan says so) that keeps each
(request, answer) pair, so a test checks the step from the host's side (its groups, metrics,
convert and DP split) and from the wire's. Small agent settings keep a question at a few turns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mem_agent.host.clients import close_clients
from support.fault_proxy import FaultPlan, fault_proxy, scripted
from support.hook_bench import small_agent
from support.host.args import host_args
from support.host.data_source import DataSource
from support.host.step import StepResult, run_step

SAMPLES_PER_PROMPT = 4


@dataclass
class Recorded:
    result: StepResult
    exchanges: list[tuple[bytes, bytes]]  # (request body, upstream answer) of each POST
    args: Any  # the host's parsed flags the step ran with


def real_step(
    router_url: str,
    model_path: Any,
    rows: list[dict],
    plan: FaultPlan | None = None,
    backend: str = "vime",
    **overrides: Any,
) -> Recorded:
    """One step over `rows` (SAMPLES_PER_PROMPT samples each, one update per prompt, two DP ranks);
    `overrides` set more host flags (e.g. `save`)."""
    with small_agent(), fault_proxy(router_url, plan or scripted()) as proxy:
        args = host_args(
            proxy.url,
            backend=backend,
            hf_checkpoint=str(model_path),
            n_samples_per_prompt=SAMPLES_PER_PROMPT,
            rollout_batch_size=len(rows),
            global_batch_size=SAMPLES_PER_PROMPT,
            grpo_std_normalization=False,
            **overrides,
        )
        result = run_step(args, DataSource(rows, SAMPLES_PER_PROMPT), dp_size=2, closers=(close_clients,))
    return Recorded(result, proxy.exchanges, args)
