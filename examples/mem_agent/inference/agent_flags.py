"""Flags shared by the commands that run the agent against a server (the evaluator, run_document),
so each is declared once (dataclass fields, common/console.flag), and the agent, sampling and client
settings built from them."""

from __future__ import annotations

import argparse
import json
import os
import socket
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.direct_reading import DirectReader, WindowTooSmallError
from mem_agent.agent.records import SamplingParams
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.console import flag
from mem_agent.common.numbers import SEED_LIMIT, number
from mem_agent.common.numbers import seed as seed_number
from mem_agent.common.usage import UsageError, problems_to_error
from mem_agent.inference.client import ApiProtocol, ClientSettings
from mem_agent.settings.config import ENV_NAMES, ConfigError, MemAgentConfig, config_problems
from mem_agent.settings.declared import flag_type
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, load_tokenizer


def url_flag(*, many: bool = False) -> Any:
    """--url: one server, or (`many`) several; $MEM_ROUTER_URL as the parser is made by default."""

    def default() -> Any:
        url = os.environ.get("MEM_ROUTER_URL")
        return ((url,) if url else ()) if many else url

    several = " (several: requests go to the least busy)" if many else ""
    text = f"server or router base URL{several} (default: $MEM_ROUTER_URL)"
    return flag(factory=default, help=text, nargs="+" if many else None)


@dataclass(frozen=True)
class ServerFlags:
    """The server an agent command talks to, and how."""

    url: str | None = url_flag()
    protocol: str = flag(
        ApiProtocol.OPENAI.value,
        "openai: /v1/completions (any vLLM); vllm: /inference/v1/generate; sglang: /generate (default: openai)",
        choices=[p.value for p in ApiProtocol],
        env="PROTOCOL",
    )
    model: str | None = flag(None, "model name to send (default: the server's only model)")
    tokenizer: str = flag(
        factory=lambda: os.environ.get("MEM_MODEL_PATH", BUNDLED_QWEN3),
        help=f"model folder whose tokenizer to use (default: $MEM_MODEL_PATH, else {BUNDLED_QWEN3})",
    )


@dataclass(frozen=True)
class SamplingFlags:
    temperature: float = flag(0.7, "sampling temperature, >= 0 (default: 0.7)", type=number(0), env="EVAL_TEMPERATURE")
    top_p: float = flag(
        0.95, "nucleus sampling mass, in (0, 1] (default: 0.95)", type=number(0, 1, above=True), env="EVAL_TOP_P"
    )
    seed: int | None = flag(
        None,
        f"per-request sampling seed, 0 to {SEED_LIMIT} (default: none; the vLLM CPU build 0.32 crashes on"
        " seeded requests)",
        type=seed_number,
    )


def _setting(field: str, text: str) -> Any:
    """A flag that overrides a MEM_* setting, bounded as the setting is (MemAgentConfig)."""
    return flag(None, text, type=flag_type(MemAgentConfig, field))


@dataclass(frozen=True)
class AgentFlags:
    """The flags that override MEM_* settings."""

    chunk_tokens: int | None = _setting("chunk_tokens", "tokens per chunk (default: MEM_CHUNK_TOKENS)")
    max_memory: int | None = _setting("max_memory_tokens", "memory token limit (default: MEM_MAX_MEMORY)")
    max_final: int | None = _setting("max_final_tokens", "answer token limit (default: MEM_MAX_FINAL)")
    max_chunks: int | None = _setting(
        "max_chunks",
        "chunk cap, 0 = none (default: MEM_MAX_CHUNKS where set, else 0: whole documents, as MemAgent evaluates)",
    )
    prompts: str | None = flag(
        None,
        "prompt-template file, e.g. written by mem_agent.fetch_prompts (default: MEM_PROMPTS, else built-in)",
        metavar="FILE",
    )


def config_from_args(args: AgentFlags | argparse.Namespace) -> MemAgentConfig:
    """MEM_* settings from the environment, with the flags that were given taking precedence.

    The chunk cap is MemAgent's training setting: its evaluation reads every chunk of a document,
    so these commands do too unless the cap is asked for (MEM_MAX_CHUNKS set, or --max-chunks).
    Each problem by the name the user typed: a flag was held to its setting's bounds as it was
    parsed (AgentFlags), a bad variable is named as the variable, every one at once; a
    setting a flag overrides is not judged.
    """
    max_chunks = args.max_chunks
    if max_chunks is None and not os.environ.get("MEM_MAX_CHUNKS", "").strip():
        max_chunks = 0
    overrides = {
        "chunk_tokens": args.chunk_tokens,
        "max_memory_tokens": args.max_memory,
        "max_final_tokens": args.max_final,
        "max_chunks": max_chunks,
        "prompts": args.prompts,
    }
    overrides = {key: value for key, value in overrides.items() if value is not None}
    overridden = {ENV_NAMES[field] for field in overrides}
    environ = {name: value for name, value in os.environ.items() if name not in overridden}
    problems_to_error(config_problems(environ))
    try:
        return MemAgentConfig.from_env(environ, **overrides)
    except ConfigError as error:
        if args.prompts is None:
            raise
        # The file came from --prompts, which wins over MEM_PROMPTS: the message names the flag.
        raise ConfigError(str(error).replace("MEM_PROMPTS=", "--prompts ")) from None


def build_agent(tokenizer_path: str, config: MemAgentConfig) -> MemoryAgent:
    """The agent for a tokenizer folder; one whose chat template is missing or cannot hold the
    prompts (a syntax error, a template that drops the message) is a UsageError, not a traceback."""
    tokenizer = load_tokenizer(tokenizer_path)
    import jinja2  # transformers renders chat templates with it; imported by the first render anyway

    try:
        return MemoryAgent(tokenizer, config)
    except (ValueError, jinja2.TemplateError) as error:  # no template: transformers raises ValueError
        message = " ".join(str(error).split()) or type(error).__name__
        problem = f"its chat template cannot build the prompts: {message}"
        raise UsageError(f"--tokenizer {tokenizer_path}: {problem}") from None


def model_window(tokenizer_path: str) -> int | None:
    """The model's context window as its config.json states it (`max_position_embeddings`), or None
    where the folder has none (the bundled tokenizer, a tokenizer-only folder)."""
    if tokenizer_path == BUNDLED_QWEN3:
        return None
    try:
        config = json.loads((Path(tokenizer_path).expanduser() / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    window = config.get("max_position_embeddings") if isinstance(config, dict) else None
    return window if isinstance(window, int) and window > 0 else None


def check_direct_settings(config: MemAgentConfig) -> None:
    """What --mode direct cannot honour, refused before anything starts (the evaluator's --check too)."""
    if config.prompts:
        raise UsageError(
            f"--mode direct reads with its own prompt; MEM_PROMPTS / --prompts {config.prompts} holds"
            " memory-agent prompts: unset it for this run"
        )


def build_direct_reader(tokenizer_path: str, config: MemAgentConfig, window: int | None) -> DirectReader:
    """The long-context baseline for a model folder; `window` None reads the model's own."""
    check_direct_settings(config)
    if window is None:
        window = model_window(tokenizer_path)
        if window is None:
            raise UsageError(
                f"--mode direct needs the model's window: {tokenizer_path} has no config.json with"
                " max_position_embeddings, so pass --context-window TOKENS"
            )
    tokenizer = load_tokenizer(tokenizer_path)
    try:
        return DirectReader(tokenizer, config, window)
    except WindowTooSmallError as error:
        raise UsageError(f"--context-window: {error}") from None


def sampling_from_args(args: SamplingFlags | argparse.Namespace) -> SamplingParams:
    return SamplingParams(temperature=args.temperature, top_p=args.top_p, seed=args.seed)


def client_settings(
    url: str, args: ServerFlags | argparse.Namespace, config: MemAgentConfig, concurrency: int
) -> ClientSettings:
    if not url:
        raise UsageError("no server: pass --url or set MEM_ROUTER_URL")
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--url {url} must start with http:// or https://")
    return ClientSettings(
        url,
        protocol=ApiProtocol(args.protocol),
        model=args.model,
        max_concurrency=concurrency,
        connect_timeout_s=config.connect_timeout_s,
        request_timeout_s=config.request_timeout_s,
        max_retries=config.max_retries,
    )


def reach_servers(servers: list[ClientSettings]) -> None:
    """Connect to every server once before any work starts: an address where nothing listens is
    one line naming it (exit 2), not a run whose every item fails after its retries."""
    problems = []
    for server in servers:
        address = urllib.parse.urlsplit(server.base_url)
        port = address.port or (443 if address.scheme == "https" else 80)
        try:
            socket.create_connection((address.hostname or "", port), timeout=server.connect_timeout_s).close()
        except OSError as error:
            reason = error.strerror or str(error) or type(error).__name__
            problems.append(f"--url {server.base_url}: cannot connect to {address.hostname}:{port} ({reason})")
    problems_to_error(problems)
