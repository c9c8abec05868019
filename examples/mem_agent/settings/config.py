"""Every MemAgent knob, read from `MEM_*` environment variables once and validated.

Environment variables are the one channel that reaches a hook inside the trainer's Ray actors
unchanged (slime and vime pass `--runtime-env-json` env vars to every worker), so they are the
settings interface for training, evaluation and the CLIs alike. Python owns every default: the
shell scripts forward only what the user set. The settings table of docs/settings.md is generated from
`SETTINGS` and a test keeps the two identical.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mem_agent.templates.template_file import PromptFile, PromptFileError, load_prompt_file


class ConfigError(ValueError):
    """A setting has a value we cannot use; the message names the variable and the fix."""


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


@dataclass(frozen=True)
class Setting:
    env: str
    field: str
    default: Any
    kind: str  # how the value is parsed; shown in the table of docs/settings.md
    doc: str
    # Whether an evaluated item's result (its answer, or how the answer is scored) can depend on the
    # value: the evaluator reuses earlier results only when these are unchanged. Timeouts, retries,
    # the wire protocol and training-only knobs cannot.
    shapes_answers: bool = True


SETTINGS: tuple[Setting, ...] = (
    Setting("MEM_CHUNK_TOKENS", "chunk_tokens", 5000, "positive int", "Document tokens per memory turn."),
    Setting(
        "MEM_MAX_MEMORY",
        "max_memory_tokens",
        1024,
        "positive int",
        "Max new tokens of a memory turn (rememr1 mode: 2048, ReMemR1's recipe).",
    ),
    Setting(
        "MEM_MAX_FINAL",
        "max_final_tokens",
        1024,
        "positive int",
        "Max new tokens of the final answer; unset, MEM_MAX_MEMORY's value (MemAgent's loop caps its final "
        "turn with the memory limit), in rememr1 mode 2048 (ReMemR1's recipe).",
    ),
    Setting(
        "MEM_MAX_CHUNKS",
        "max_chunks",
        8,
        "int >= 0",
        "Chunk cap per document in the trainer's hooks (MemAgent's training: longer documents keep their "
        "first and last halves); 0 = no cap. The evaluation commands read whole documents unless it is set.",
    ),
    Setting("MEM_MODE", "mode", AgentMode.MEMAGENT, "memagent|rememr1", "Agent loop: MemAgent or ReMemR1."),
    Setting(
        "MEM_THINKING",
        "thinking",
        False,
        "0|1",
        "Qwen3 thinking with the built-in prompts; its `<think>` text never enters memory.",
    ),
    Setting(
        "MEM_PROMPTS",
        "prompts",
        "",
        "file path",
        "Prompt-template file (see Prompt templates); empty = our built-in prompts.",
    ),
    Setting(
        "MEM_REMEMR1_ALPHA",
        "rememr1_alpha",
        0.8,
        "float in [0,1]",
        "ReMemR1 outcome weight; 1 = MemAgent.",
        shapes_answers=False,
    ),
    Setting(
        "MEM_REMEMR1_STATE_SCALE",
        "rememr1_state_scale",
        2.0,
        "positive float",
        "ReMemR1 state rewards are multiplied by this before centring; 2 = the released code's.",
        shapes_answers=False,
    ),
    Setting(
        "MEM_RETRIEVER",
        "retriever",
        RetrieverKind.TFIDF,
        "recall|tfidf|bm25",
        "ReMemR1 recall scorer; tfidf = the released code's, recall = the paper's word recall.",
    ),
    Setting(
        "MEM_REMEMR1_MEMORY",
        "rememr1_memory",
        MemoryRule.RESPONSE,
        "response|update",
        "ReMemR1 memory: the response less its recall blocks (released code) or its last update block.",
    ),
    Setting(
        "MEM_REMEMR1_COVERAGE",
        "rememr1_coverage",
        CoverageRule.SUBSTRING,
        "substring|words",
        "ReMemR1 state reward word matching: case-sensitive sub-strings (released code) or lower-cased words.",
        shapes_answers=False,
    ),
    Setting(
        "MEM_FOLD_UNICODE",
        "fold_unicode",
        False,
        "0|1",
        "EM/F1/sub_em fold Unicode first (NFKC, Unicode punctuation deleted); 0 = the official HotpotQA rules.",
    ),
    Setting(
        "MEM_SUB_EM_GUARD",
        "sub_em_guard",
        False,
        "0|1",
        "sub_em: an answer that normalises to nothing matches nothing; 0 = MemAgent's (it is inside every answer).",
    ),
    Setting(
        "MEM_TRAJECTORY_EVERY",
        "trajectory_every",
        1,
        "int >= 0",
        "Training: write trajectory records every this many rollouts (under --save/trajectories); 0 = never.",
        shapes_answers=False,
    ),
    Setting(
        "MEM_TRAJECTORY_COUNT",
        "trajectory_count",
        8,
        "positive int",
        "Training: trajectories recorded per recorded rollout, correct and wrong ones both kept.",
        shapes_answers=False,
    ),
    Setting(
        "MEM_REQUEST_TIMEOUT",
        "request_timeout_s",
        600.0,
        "positive float",
        "Seconds per request.",
        shapes_answers=False,
    ),
    Setting(
        "MEM_CONNECT_TIMEOUT", "connect_timeout_s", 10.0, "positive float", "Seconds to connect.", shapes_answers=False
    ),
    Setting("MEM_MAX_RETRIES", "max_retries", 3, "int >= 0", "Retries of a transient failure.", shapes_answers=False),
    Setting(
        "MEM_FILTER_MAX_ROUNDS",
        "filter_max_rounds",
        8,
        "positive int",
        "Dynamic filter: rounds of dropped groups (x --over-sampling-batch-size) a rollout may draw before it"
        " keeps groups without contrast.",
        shapes_answers=False,
    ),
    Setting(
        "MEM_PROTOCOL",
        "protocol",
        ProtocolChoice.AUTO,
        "auto|vllm|sglang|openai",
        "Inference API; auto = the host trainer's.",
        shapes_answers=False,
    ),
)
# MemAgentConfig fields whose value an evaluated result can depend on (see Setting.shapes_answers).
ANSWER_SHAPING_FIELDS = frozenset(setting.field for setting in SETTINGS if setting.shapes_answers)


@dataclass(frozen=True)
class MemAgentConfig:
    chunk_tokens: int = 5000
    max_memory_tokens: int = 1024
    max_final_tokens: int = 1024
    max_chunks: int = 8
    mode: AgentMode = AgentMode.MEMAGENT
    thinking: bool = False
    prompts: str = ""
    rememr1_alpha: float = 0.8
    rememr1_state_scale: float = 2.0
    retriever: RetrieverKind = RetrieverKind.TFIDF
    rememr1_memory: MemoryRule = MemoryRule.RESPONSE
    rememr1_coverage: CoverageRule = CoverageRule.SUBSTRING
    fold_unicode: bool = False
    sub_em_guard: bool = False
    trajectory_every: int = 1
    trajectory_count: int = 8
    request_timeout_s: float = 600.0
    connect_timeout_s: float = 10.0
    max_retries: int = 3
    filter_max_rounds: int = 8
    protocol: ProtocolChoice = ProtocolChoice.AUTO

    def __post_init__(self) -> None:
        for setting in SETTINGS:
            value = getattr(self, setting.field)
            if setting.kind in _ENUMS:  # accept plain strings from callers; store the enum
                object.__setattr__(self, setting.field, _as_enum(setting, value))
            else:
                _check(setting, value)
        if self.prompts and self.thinking:
            raise ConfigError(
                f"MEM_THINKING=1 switches the built-in prompts; with MEM_PROMPTS={self.prompts} set "
                'thinking = "on" in the file instead'
            )
        _ = self.prompt_file  # read and checked now, so every entry point reports a bad file before any work

    @functools.cached_property
    def prompt_file(self) -> PromptFile | None:
        """The template file MEM_PROMPTS names, read once: the prompts a run builds and the sha256 it
        records come from this one read. None for the built-in prompts."""
        if not self.prompts:
            return None
        try:
            return load_prompt_file(self.prompts, self.mode.value)
        except PromptFileError as error:
            raise ConfigError(f"MEM_PROMPTS={error}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> MemAgentConfig:
        """Settings from `environ` (default: the process environment); `overrides` win over both."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            raw = environ.get(setting.env)
            if raw is not None and raw.strip() != "":
                values[setting.field] = _parse(setting, raw.strip())
        values.update(overrides)
        mode = _as_enum(_SETTING_OF["mode"], values.get("mode", AgentMode.MEMAGENT))
        for name, value in MODE_DEFAULTS.get(mode, {}).items():  # below the user's values
            values.setdefault(name, value)
        if mode is AgentMode.MEMAGENT:  # MemAgent's final turn has the memory turns' limit
            values.setdefault("max_final_tokens", values.get("max_memory_tokens", cls.max_memory_tokens))
        return cls(**values)

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
_SETTING_OF = {setting.field: setting for setting in SETTINGS}


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
    problems = []
    for setting in SETTINGS:
        raw = environ.get(setting.env)
        if raw is not None and raw.strip() != "":
            try:
                _parse(setting, raw.strip())
            except ConfigError as error:
                problems.append(str(error))
    if not problems:  # each value is usable alone: now the rules between them and the template file
        try:
            MemAgentConfig.from_env(environ)
        except ConfigError as error:
            problems.append(str(error))
    return problems + unknown_variable_problems(environ)


def unknown_variable_problems(environ: Mapping[str, str]) -> list[str]:
    """One message per MEM_* variable that is neither a setting, one of ours, nor allowed by
    MEM_ALLOW_UNKNOWN; each names the nearest settings."""
    known = [setting.env for setting in SETTINGS]
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


def _fail(setting: Setting, raw: object) -> ConfigError:
    return ConfigError(f"{setting.env}={raw} must be {_DESCRIPTIONS[setting.kind]} (default {_shown(setting)})")


def _shown(setting: Setting) -> str:
    default = setting.default
    if isinstance(default, bool):
        return "1" if default else "0"
    return str(default) if default != "" else '""'


_DESCRIPTIONS = {
    "positive int": "a positive integer",
    "int >= 0": "an integer >= 0",
    "positive float": "a positive number",
    "float in [0,1]": "a number between 0 and 1",
    "0|1": "0 or 1",
    "file path": "a file path",
    "memagent|rememr1": "one of memagent, rememr1",
    "recall|tfidf|bm25": "one of recall, tfidf, bm25",
    "response|update": "one of response, update",
    "substring|words": "one of substring, words",
    "auto|vllm|sglang|openai": "one of auto, vllm, sglang, openai",
}

_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
_ENUMS: dict[str, type[StrEnum]] = {
    "memagent|rememr1": AgentMode,
    "recall|tfidf|bm25": RetrieverKind,
    "response|update": MemoryRule,
    "substring|words": CoverageRule,
    "auto|vllm|sglang|openai": ProtocolChoice,
}


def _parse(setting: Setting, raw: str) -> Any:
    parsers: dict[str, Callable[[str], Any]] = {
        "positive int": int,
        "int >= 0": int,
        "positive float": float,
        "float in [0,1]": float,
        "0|1": lambda text: _BOOLEANS[text.lower()],
        "file path": str,
    }
    try:
        if setting.kind in _ENUMS:
            return _as_enum(setting, raw)
        value = parsers[setting.kind](raw)
        _check(setting, value)
        return value
    except (ValueError, KeyError):  # ConfigError included: report the text as the user wrote it
        raise _fail(setting, raw) from None


def _as_enum(setting: Setting, value: Any) -> StrEnum:
    try:
        return _ENUMS[setting.kind](str(value).lower())
    except ValueError:
        raise _fail(setting, value) from None


def _check(setting: Setting, value: Any) -> None:
    kind = setting.kind
    if kind == "0|1":
        ok = isinstance(value, bool)
    elif kind == "file path":
        ok = isinstance(value, str)
    elif kind in ("positive int", "int >= 0"):
        minimum = 1 if kind == "positive int" else 0
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= minimum
    elif kind == "positive float":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    else:  # float in [0,1]
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0
    if not ok:
        raise _fail(setting, value)


def settings_table_markdown() -> str:
    """The settings table of docs/settings.md, generated so documentation and code cannot drift apart."""
    rows = ["| variable | default | values | meaning |", "|---|---|---|---|"]
    for setting in SETTINGS:
        values = setting.kind.replace("|", r" \| ")  # a bare pipe would split the table cell
        rows.append(f"| `{setting.env}` | `{_shown(setting)}` | {values} | {setting.doc} |")
    return "\n".join(rows)
