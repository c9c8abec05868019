"""The agent settings a job will run with, set or defaulted, as lines a launch script prints.

Python owns every default (config.py), so a launch script asks this module what the workers will
see instead of repeating the defaults in shell: the values come from the same
`MemAgentConfig.from_env` the hooks call, with each one's origin (set by the user, Python's
default, or the mode's default)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from mem_agent.common.printable import printable
from mem_agent.settings.config import ENV_NAMES, MODE_DEFAULTS, AgentMode, MemAgentConfig


def settings_lines(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per MEM_* setting (`MEM_X=value (origin)`), then what the chunk cap means."""
    environ = os.environ if environ is None else environ
    config = MemAgentConfig.from_env(environ)
    mode_defaults = MODE_DEFAULTS.get(config.mode, {})
    lines = []
    for field, env in ENV_NAMES.items():
        value = getattr(config, field)
        if environ.get(env, "").strip():
            origin = "set"
        elif field in mode_defaults:
            origin = f"default of {config.mode.value} mode"
        elif field == "max_final_tokens" and config.mode is AgentMode.MEMAGENT:
            origin = "default: MEM_MAX_MEMORY's value, as MemAgent's final turn"
        else:
            origin = "default"
        lines.append(f"{env}={_shown(value)} ({origin})")
    lines.append(chunk_cap_line(config))
    return lines


def chunk_cap_line(config: MemAgentConfig) -> str:
    cap = config.chunk_cap_tokens
    if cap is None:
        return "chunk cap: none, every chunk of a training document is read"
    return (
        f"chunk cap: {config.max_chunks} chunks x {config.chunk_tokens} = {cap} tokens per training document; "
        f"longer ones keep their first {cap // 2} and last {cap - cap // 2} tokens (MemAgent's centre cut)"
    )


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if value == "":
        return '"" (built-in prompts)'
    return printable(str(value))
