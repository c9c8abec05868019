"""Prompt-template files (`MEM_PROMPTS=FILE`): another wording for every prompt, checked up front.

The built-in prompts (prompts.py, rememr1.py) are our own wording. A released MemAgent or ReMemR1
checkpoint was trained on its authors' templates, and evaluating it on ours measures something
else, so every prompt can come from a file instead. `fetch_prompts.py` writes such a file from the
authors' code at a pinned commit; this repository never holds their wording.

A file is TOML (version 1):

    version = 1
    mode = "memagent"        # memagent | rememr1: the loop the templates are written for
    assembly = "tokens"      # tokens | text: how a prompt is put together (prompt_sets.py)
    thinking = "template"    # template | on | off: enable_thinking as the chat template's default,
                             #   or passed explicitly
    memory = "response"      # response | after-think (text only): what becomes the next memory

    [source]                 # optional provenance, copied into the evaluator's summary.json
    name = "..."             # and: repository, commit, path, url, sha256 (all strings)

    [templates]
    memory_turn = "..."      # {problem} {memory} {section}, and {recalled} in rememr1 mode
    final_turn = "..."       # {problem} {memory}, and {recalled} in rememr1 mode
    no_memory = "..."        # the memory before the first turn (plain text, braces literal)
    no_recall = "..."        # rememr1 only: the recalled block when nothing was recalled

`memory_turn` and `final_turn` use Python's str.format syntax: `{name}` is a placeholder and
`{{` / `}}` are literal braces. Each turn must name every one of its placeholders exactly once and
nothing else; conversions (`{memory!r}`), format specs and positional fields are refused, so a
template means the same thing whether it is spliced as token ids or formatted as text.
"""

from __future__ import annotations

import hashlib
import string
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
MODES = ("memagent", "rememr1")
SOURCE_KEYS = ("name", "repository", "commit", "path", "url", "sha256")
_TOP_KEYS = {"version", "mode", "assembly", "thinking", "memory", "source", "templates"}


class PromptFileError(ValueError):
    """A template file we cannot use; the one-line message names the file, the key and the fix."""


class Assembly(StrEnum):
    TOKENS = "tokens"  # static pieces tokenised once, slots spliced as ids (the authors' training)
    TEXT = "text"  # message formatted as text, chat-templated and tokenised whole (their evaluation)


class Thinking(StrEnum):
    TEMPLATE = "template"  # no enable_thinking argument: the chat template's own default
    ON = "on"
    OFF = "off"

    @property
    def flag(self) -> bool | None:
        return None if self is Thinking.TEMPLATE else self is Thinking.ON


class MemoryText(StrEnum):
    """A template file's `memory` key: how much of a response's ids or text is carried as the memory.

    Not to be confused with `config.MemoryRule` (MEM_REMEMR1_MEMORY), which reads a ReMemR1
    response's <update>/<recall> tags afterwards; both name their default "response", each for the
    authors' own rule.
    """

    RESPONSE = "response"  # the whole response, less pad and EOS (tokens) / as the server decodes it (text)
    AFTER_THINK = "after-think"  # text after the last </think>, stripped, else the whole text


def placeholders_of(mode: str) -> dict[str, tuple[str, ...]]:
    """The placeholders each turn takes in `mode`, in our names."""
    recalled = ("recalled",) if mode == "rememr1" else ()
    return {
        "memory_turn": ("problem", *recalled, "memory", "section"),
        "final_turn": ("problem", *recalled, "memory"),
    }


@dataclass(frozen=True)
class PromptFile:
    path: Path
    sha256: str  # of the file's bytes, as read
    mode: str
    assembly: Assembly
    thinking: Thinking
    memory: MemoryText
    memory_turn: str
    final_turn: str
    no_memory: str
    no_recall: str | None = None
    source: dict[str, str] = field(default_factory=dict)

    def facts(self) -> dict[str, Any]:
        """What a run records about the templates it used (summary.json)."""
        return {
            "kind": "file",
            "path": str(self.path.resolve()),
            "sha256": self.sha256,
            "mode": self.mode,
            "assembly": self.assembly.value,
            "thinking": self.thinking.value,
            "memory": self.memory.value,
            "source": dict(self.source),
        }


def template_fields(template: str) -> list[str]:
    """The placeholder names of a str.format template in order, refusing anything but `{name}`."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise PromptFileError(f"{error} (write a literal brace as {{{{ or }}}})") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name == "" or name.isdigit():
            raise PromptFileError("positional placeholder {" + name + "}: name it, e.g. {memory}")
        if conversion or spec:
            raise PromptFileError(f"placeholder {{{name}}}: conversions and format specs are not allowed")
        names.append(name)
    return names


def check_template(template: str, expected: tuple[str, ...]) -> None:
    names = template_fields(template)
    allowed = " ".join(f"{{{name}}}" for name in expected)
    for name in names:
        if name not in expected:
            raise PromptFileError(f"unknown placeholder {{{name}}} (allowed: {allowed}; write a literal brace as {{{{)")
    for name in expected:
        count = names.count(name)
        if count == 0:
            raise PromptFileError(f"missing placeholder {{{name}}} (needs: {allowed})")
        if count > 1:
            raise PromptFileError(f"placeholder {{{name}}} appears {count} times; each must appear once")


def load_prompt_file(path: str | Path, mode: str | None = None) -> PromptFile:
    """Read and validate a template file; `mode` (MEM_MODE) must match the file's when given."""
    path = Path(path).expanduser()
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise PromptFileError(f"{path}: cannot read: {error.strerror or error}") from None
    return parse_prompt_file(raw, path, mode)


def parse_prompt_file(raw: bytes, path: Path, mode: str | None = None) -> PromptFile:
    """Validate a template file's bytes; every error is one line that starts with `path`."""
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise PromptFileError(f"{path}: not UTF-8 (byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise PromptFileError(f"{path}: not valid TOML: {error}") from None
    try:
        return _from_document(path, hashlib.sha256(raw).hexdigest(), document, mode)
    except PromptFileError as error:
        raise PromptFileError(f"{path}: {error}") from None


def _from_document(path: Path, sha256: str, document: dict[str, Any], mode: str | None) -> PromptFile:
    _no_unknown_keys("", document, _TOP_KEYS)
    if document.get("version") != FORMAT_VERSION:
        raise PromptFileError(f"version = {document.get('version')!r}: this mem_agent reads version = {FORMAT_VERSION}")
    file_mode = _choice(document, "mode", MODES, None)
    if mode is not None and str(mode) != file_mode:
        raise PromptFileError(f"mode = {file_mode!r} but MEM_MODE={mode}; use a {mode} template file or set MEM_MODE")
    assembly = Assembly(_choice(document, "assembly", tuple(Assembly), None))
    thinking = Thinking(_choice(document, "thinking", tuple(Thinking), Thinking.TEMPLATE))
    memory = MemoryText(_choice(document, "memory", tuple(MemoryText), MemoryText.RESPONSE))
    if memory is MemoryText.AFTER_THINK and assembly is not Assembly.TEXT:
        raise PromptFileError('memory = "after-think" needs assembly = "text" (token splicing keeps the ids)')
    texts = _templates(document.get("templates"), file_mode)
    return PromptFile(
        path=path,
        sha256=sha256,
        mode=file_mode,
        assembly=assembly,
        thinking=thinking,
        memory=memory,
        memory_turn=texts["memory_turn"],
        final_turn=texts["final_turn"],
        no_memory=texts["no_memory"],
        no_recall=texts.get("no_recall"),
        source=_source(document.get("source", {})),
    )


def _templates(table: object, mode: str) -> dict[str, str]:
    if not isinstance(table, dict):
        raise PromptFileError("needs a [templates] table with memory_turn, final_turn and no_memory")
    required = ["memory_turn", "final_turn", "no_memory", *(["no_recall"] if mode == "rememr1" else [])]
    _no_unknown_keys("templates.", table, set(required))
    for key in required:
        if key not in table:
            raise PromptFileError(f"templates.{key} is missing")
        if not isinstance(table[key], str):
            raise PromptFileError(f"templates.{key} must be a string")
    for key, expected in placeholders_of(mode).items():
        try:
            check_template(table[key], expected)
        except PromptFileError as error:
            raise PromptFileError(f"templates.{key}: {error}") from None
    return {key: table[key] for key in required}


def _source(table: object) -> dict[str, str]:
    if not isinstance(table, dict):
        raise PromptFileError("source must be a table")
    _no_unknown_keys("source.", table, set(SOURCE_KEYS))
    for key, value in table.items():
        if not isinstance(value, str):
            raise PromptFileError(f"source.{key} must be a string")
    return dict(table)


def _choice(document: dict[str, Any], key: str, allowed: tuple[str, ...], default: str | None) -> str:
    value = document.get(key, default)
    if value is None:
        raise PromptFileError(f"{key} is missing (one of {', '.join(allowed)})")
    if value not in allowed:
        raise PromptFileError(f"{key} = {value!r} must be one of {', '.join(allowed)}")
    return str(value)


def _no_unknown_keys(prefix: str, table: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise PromptFileError(f"unknown key {prefix}{unknown[0]} (known: {', '.join(sorted(known))})")


def toml_string(text: str) -> str:
    """`text` as a TOML basic string that tomllib reads back exactly; multi-line when it has newlines."""
    escaped = []
    for char in text:
        if char == "\\":
            escaped.append("\\\\")
        elif char == '"':
            escaped.append('\\"')
        elif char in "\n\t":  # newlines only occur in a multi-line string
            escaped.append(char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04X}")
        else:
            escaped.append(char)
    body = "".join(escaped)
    # A newline right after the opening delimiter is trimmed by TOML, so the text starts on line two.
    return f'"""\n{body}"""' if "\n" in text else f'"{body}"'


def dump_prompt_file(
    *,
    mode: str,
    assembly: Assembly,
    thinking: Thinking,
    memory: MemoryText,
    templates: dict[str, str],
    source: dict[str, str],
    header: str = "",
) -> str:
    """A template file's text; `load_prompt_file` reads back exactly these values."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += [
        f"version = {FORMAT_VERSION}",
        f"mode = {toml_string(mode)}",
        f"assembly = {toml_string(assembly.value)}",
        f"thinking = {toml_string(thinking.value)}",
        f"memory = {toml_string(memory.value)}",
        "",
        "[source]",
        *(f"{key} = {toml_string(value)}" for key, value in source.items()),
        "",
        "[templates]",
        *(f"{key} = {toml_string(value)}" for key, value in templates.items()),
    ]
    return "\n".join(lines) + "\n"
