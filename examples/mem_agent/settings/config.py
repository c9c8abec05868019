"""Every MemAgent knob, read from `MEM_*` environment variables once and validated.

Environment variables are the one channel that reaches a hook inside the trainer's Ray actors
unchanged (slime and vime pass `--runtime-env-json` env vars to every worker), so they are the
settings interface for training, evaluation and the CLIs alike. Python owns every default: the
shell scripts forward only what the user set. Each setting is declared once, as a field of
`MemAgentConfig` (settings/declared.py): its variable, default, bounds and documentation, from which
parsing, the fix-it messages, the table of docs/settings.md and summary.json's "config" all come.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError, model_validator

from mem_agent.settings.declared import (
    ENV_MODEL_CONFIG,
    SettingsError,
    Switch,
    env_name,
    problems_of,
    setting,
    settings_table,
    shapes_answers,
    split_env,
)
from mem_agent.templates.template_file import PromptFile, PromptFileError, load_prompt_file


class ConfigError(SettingsError):
    """An agent setting has a value we cannot use; each problem names the variable and the fix."""


class AgentMode(StrEnum):
    MEMAGENT = "memagent"
    REMEMR1 = "rememr1"


class RetrieverKind(StrEnum):
    RECALL = "recall"
    TFIDF = "tfidf"
    BM25 = "bm25"


class MemoryRule(StrEnum):
    """MEM_REMEMR1_MEMORY: which part of a ReMemR1 memory turn's text becomes the memory (its tags).

    Not to be confused with `prompt_file.MemoryText`, a template file's `memory` key, which decides
    how a response is cut (pad/EOS ids, the <think> part) before this rule reads it.
    """

    RESPONSE = "response"  # the response less its <recall> blocks (the released code)
    UPDATE = "update"  # the text of its last <update> block


class CoverageRule(StrEnum):
    """How a ReMemR1 state reward finds a ground truth's words in a text."""

    SUBSTRING = "substring"  # its whitespace-split words, case-sensitive, as sub-strings (the released code)
    WORDS = "words"  # lower-cased whole words (`\w+` runs)


class ProtocolChoice(StrEnum):
    AUTO = "auto"
    VLLM = "vllm"
    SGLANG = "sglang"
    OPENAI = "openai"


class MemAgentConfig(BaseModel):
    """Every agent setting: the `MEM_*` variable, default, bounds and documentation of each, once."""

    model_config = ENV_MODEL_CONFIG

    chunk_tokens: int = setting(5000, "Document tokens per memory turn.", env="MEM_CHUNK_TOKENS", ge=1)
    max_memory_tokens: int = setting(
        1024, "Max new tokens of a memory turn (rememr1 mode: 2048, ReMemR1's recipe).", env="MEM_MAX_MEMORY", ge=1
    )
    max_final_tokens: int = setting(
        1024,
        "Max new tokens of the final answer; unset, MEM_MAX_MEMORY's value (MemAgent's loop caps its final "
        "turn with the memory limit), in rememr1 mode 2048 (ReMemR1's recipe).",
        env="MEM_MAX_FINAL",
        ge=1,
    )
    max_chunks: int = setting(
        8,
        "Chunk cap per document in the trainer's hooks (MemAgent's training: longer documents keep their "
        "first and last halves); 0 = no cap. The evaluation commands read whole documents unless it is set.",
        env="MEM_MAX_CHUNKS",
        ge=0,
    )
    mode: AgentMode = setting(AgentMode.MEMAGENT, "Agent loop: MemAgent or ReMemR1.", env="MEM_MODE")
    thinking: Switch = setting(
        False, "Qwen3 thinking with the built-in prompts; its `<think>` text never enters memory.", env="MEM_THINKING"
    )
    prompts: str = setting(
        "",
        "Prompt-template file (see Prompt templates); empty = our built-in prompts.",
        env="MEM_PROMPTS",
        values="a file path",
    )
    rememr1_alpha: float = setting(
        0.8, "ReMemR1 outcome weight; 1 = MemAgent.", env="MEM_REMEMR1_ALPHA", shapes_answers=False, ge=0, le=1
    )
    rememr1_state_scale: float = setting(
        2.0,
        "ReMemR1 state rewards are multiplied by this before centring; 2 = the released code's.",
        env="MEM_REMEMR1_STATE_SCALE",
        shapes_answers=False,
        gt=0,
    )
    retriever: RetrieverKind = setting(
        RetrieverKind.TFIDF,
        "ReMemR1 recall scorer; tfidf = the released code's, recall = the paper's word recall.",
        env="MEM_RETRIEVER",
    )
    rememr1_memory: MemoryRule = setting(
        MemoryRule.RESPONSE,
        "ReMemR1 memory: the response less its recall blocks (released code) or its last update block.",
        env="MEM_REMEMR1_MEMORY",
    )
    rememr1_coverage: CoverageRule = setting(
        CoverageRule.SUBSTRING,
        "ReMemR1 state reward word matching: case-sensitive sub-strings (released code) or lower-cased words.",
        env="MEM_REMEMR1_COVERAGE",
        shapes_answers=False,
    )
    fold_unicode: Switch = setting(
        False,
        "EM/F1/sub_em fold Unicode first (NFKC, Unicode punctuation deleted); 0 = the official HotpotQA rules.",
        env="MEM_FOLD_UNICODE",
    )
    sub_em_guard: Switch = setting(
        False,
        "sub_em: an answer that normalises to nothing matches nothing; 0 = MemAgent's (it is inside every answer).",
        env="MEM_SUB_EM_GUARD",
    )
    trajectory_every: int = setting(
        1,
        "Training: write trajectory records every this many rollouts (under --save/trajectories); 0 = never.",
        env="MEM_TRAJECTORY_EVERY",
        shapes_answers=False,
        ge=0,
    )
    trajectory_count: int = setting(
        8,
        "Training: trajectories recorded per recorded rollout, correct and wrong ones both kept.",
        env="MEM_TRAJECTORY_COUNT",
        shapes_answers=False,
        ge=1,
    )
    request_timeout_s: float = setting(
        600.0, "Seconds per request.", env="MEM_REQUEST_TIMEOUT", shapes_answers=False, gt=0
    )
    connect_timeout_s: float = setting(
        10.0, "Seconds to connect.", env="MEM_CONNECT_TIMEOUT", shapes_answers=False, gt=0
    )
    max_retries: int = setting(3, "Retries of a transient failure.", env="MEM_MAX_RETRIES", shapes_answers=False, ge=0)
    filter_max_rounds: int = setting(
        8,
        "Dynamic filter: rounds of dropped groups (x --over-sampling-batch-size) a rollout may draw before it"
        " keeps groups without contrast.",
        env="MEM_FILTER_MAX_ROUNDS",
        shapes_answers=False,
        ge=1,
    )
    protocol: ProtocolChoice = setting(
        ProtocolChoice.AUTO, "Inference API; auto = the host trainer's.", env="MEM_PROTOCOL", shapes_answers=False
    )

    def __init__(self, **values: Any) -> None:
        """Settings from code: plain strings are accepted for the choices; a bad value is a ConfigError
        naming its MEM_* variable, as from the environment."""
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise ConfigError(problems_of(error, type(self))) from None

    @model_validator(mode="after")
    def _rules_between_settings(self) -> MemAgentConfig:
        if self.prompts and self.thinking:
            raise ValueError(
                f"MEM_THINKING=1 switches the built-in prompts; with MEM_PROMPTS={self.prompts} set "
                'thinking = "on" in the file instead'
            )
        _ = self.prompt_file  # read and checked now, so every entry point reports a bad file before any work
        return self

    @functools.cached_property
    def prompt_file(self) -> PromptFile | None:
        """The template file MEM_PROMPTS names, read once: the prompts a run builds and the sha256 it
        records come from this one read. None for the built-in prompts."""
        if not self.prompts:
            return None
        try:
            return load_prompt_file(self.prompts, self.mode.value)
        except PromptFileError as error:
            raise ValueError(f"MEM_PROMPTS={error}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> MemAgentConfig:
        """Settings from `environ` (default: the process environment); `overrides` win over both."""
        environ = os.environ if environ is None else environ
        values, refused = split_env(cls, environ)  # a refused variable is left out, so its default stands in
        values |= overrides
        mode = values.get("mode", AgentMode.MEMAGENT)
        mode = AgentMode(mode) if mode in {m.value for m in AgentMode} else mode
        for name, value in MODE_DEFAULTS.get(mode, {}).items():  # below the user's values
            values.setdefault(name, value)
        try:
            config = cls(**values)
        except ConfigError as error:  # every problem at once: the refused variables' and the rest
            raise ConfigError([*refused, *error.problems]) from None
        if refused:
            raise ConfigError(refused)
        if mode == AgentMode.MEMAGENT and "max_final_tokens" not in values:  # MemAgent's final turn has the
            config = config.replaced(max_final_tokens=config.max_memory_tokens)  # memory turns' limit
        return config

    def replaced(self, **changes: Any) -> MemAgentConfig:
        """A copy with `changes`, validated like any other."""
        return type(self)(**(self.model_dump() | changes))

    def recorded(self) -> dict[str, Any]:
        """The settings as a run records them (summary.json): field names, plain JSON values."""
        return self.model_dump(mode="json")

    @property
    def chunk_cap_tokens(self) -> int | None:
        return self.max_chunks * self.chunk_tokens if self.max_chunks else None


# Defaults that follow the mode, where ReMemR1's own training recipe differs from MemAgent's
# (ReMemR1's verl/trainer/config/ppo_trainer.yaml, recurrent.memory.config: memory and final answer
# 2048 tokens each, MemAgent's 1024). from_env applies them where the variable is unset. In
# memagent mode an unset MEM_MAX_FINAL follows MEM_MAX_MEMORY: MemAgent's loop (recurrent/impls/
# memory.py, run_memory_7B.sh) generates the final answer with max_memorization_length.
MODE_DEFAULTS: dict[AgentMode, dict[str, Any]] = {
    AgentMode.REMEMR1: {"max_memory_tokens": 2048, "max_final_tokens": 2048},
}
# The variable of each field, and the fields whose value an evaluated result can depend on.
ENV_NAMES: dict[str, str] = {name: env_name(info) for name, info in MemAgentConfig.model_fields.items()}
ANSWER_SHAPING_FIELDS = frozenset(name for name, info in MemAgentConfig.model_fields.items() if shapes_answers(info))


# MEM_* variables the package reads that are not agent settings: the local stack's addresses for
# the CLIs, the tiny model's cache, the tests' data folder, and the escape below. Never reported.
ALLOW_UNKNOWN_VARIABLE = "MEM_ALLOW_UNKNOWN"
OTHER_MEM_VARIABLES = frozenset(
    {"MEM_ROUTER_URL", "MEM_SERVER_URL", "MEM_MODEL_PATH", "MEM_SHARED_DATA", "MEM_CACHE_DIR", ALLOW_UNKNOWN_VARIABLE}
)
# Other spellings of our settings (MemAgent's own names for the same knob): named, never guessed at.
OTHER_SPELLINGS = {"MEM_CHUNK_SIZE": ("MEM_CHUNK_TOKENS", "MemAgent's chunk_size")}


def config_problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every problem of the MEM_* settings in `environ`, one message each; empty when all are usable.

    `MemAgentConfig.from_env` stops at the first bad value, which suits a process reading its own
    settings. A launch script checks once for a person, who should see every mistake in one go,
    including any other MEM_* variable: it would otherwise be silently ignored and the default
    used (MEM_CHUNK_TOKEN, MemAgent's MEM_CHUNK_SIZE). A site whose environment already uses the
    prefix names its own variables in MEM_ALLOW_UNKNOWN (comma-separated).
    """
    environ = os.environ if environ is None else environ
    try:
        MemAgentConfig.from_env(environ)
        problems = []
    except ConfigError as error:
        problems = error.problems
    return problems + unknown_variable_problems(environ)


def unknown_variable_problems(environ: Mapping[str, str]) -> list[str]:
    """One message per MEM_* variable that is neither a setting, one of ours, nor allowed by
    MEM_ALLOW_UNKNOWN; each names the nearest settings."""
    known = list(ENV_NAMES.values())
    allowed = {name.strip() for name in environ.get(ALLOW_UNKNOWN_VARIABLE, "").split(",") if name.strip()}
    problems = []
    for name in sorted(environ):
        if not name.startswith("MEM_") or name in known or name in OTHER_MEM_VARIABLES or name in allowed:
            continue
        if name in OTHER_SPELLINGS:
            setting, whose = OTHER_SPELLINGS[name]
            problems.append(f"{name} is not a setting: it is {whose}, which is {setting} here")
            continue
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) or known[:3]
        problems.append(
            f"{name} is not a setting: did you mean {' or '.join(close)}? (see docs/settings.md; a variable"
            f" of your own: {ALLOW_UNKNOWN_VARIABLE}={name})"
        )
    return problems


def settings_table_markdown() -> str:
    """The settings table of docs/settings.md, generated so documentation and code cannot drift apart."""
    return settings_table(MemAgentConfig)
