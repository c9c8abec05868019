"""The MEM_* settings every hook of this process works with, read once.

A Ray actor's environment is fixed when it starts, so one read serves every call; the generate,
reward and convert hooks (mem_agent.rollout, mem_agent.custom_convert) all see the same object.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from mem_agent.host.trajectory_rows import ScoredRows, score_rows
from mem_agent.settings.config import MemAgentConfig


@functools.cache
def settings() -> MemAgentConfig:
    """MEM_* settings, read once per process (the Ray actor's environment is fixed at start)."""
    return MemAgentConfig.from_env()


def scored_rows(args: Any, samples: Sequence[Any]) -> ScoredRows:
    """Raw rewards, advantages and trainability per row, with this process's MEM_* settings."""
    return score_rows(args, samples, settings())
