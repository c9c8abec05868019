"""The MEM_* settings and the agents every hook of this process works with, each made once.

A Ray actor's environment is fixed when it starts, so one read serves every call; the generate,
reward and convert hooks (mem_agent.rollout, mem_agent.custom_convert) all see the same object.
An agent (its tokenizer loaded) is built once per checkpoint and settings, not once per sample.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from mem_agent.agent.workflow import MemoryAgent
from mem_agent.host.clients import forget_clients
from mem_agent.host.trajectory_rows import ScoredRows, score_rows
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import load_tokenizer


@functools.cache
def settings() -> MemAgentConfig:
    """MEM_* settings, read once per process (the Ray actor's environment is fixed at start)."""
    return MemAgentConfig.from_env()


@functools.cache
def agent_for(hf_checkpoint: str, config: MemAgentConfig) -> MemoryAgent:
    """The memory agent for the host's checkpoint (its tokenizer) and these settings."""
    return MemoryAgent(load_tokenizer(hf_checkpoint), config)


def reset_caches() -> None:
    """Forget settings, agents and clients (tests change MEM_* between cases)."""
    settings.cache_clear()
    agent_for.cache_clear()
    forget_clients()


def scored_rows(args: Any, samples: Sequence[Any]) -> ScoredRows:
    """Raw rewards, advantages and trainability per row, with this process's MEM_* settings."""
    return score_rows(args, samples, settings())
