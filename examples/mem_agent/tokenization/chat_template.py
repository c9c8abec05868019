"""Chat templates rendered exactly as transformers renders them, without importing transformers.

A model's chat template is a Jinja program; the text it renders decides the prompt's token ids,
so it must render here character for character as in `transformers` (5.x,
`utils/chat_template_utils.py`): the same sandbox (`ImmutableSandboxedEnvironment`, so a template
cannot change the messages it reads), `trim_blocks` and `lstrip_blocks`, the `loopcontrols`
extension (`{% break %}`, `{% continue %}`), the `{% generation %}` block (rendered as its body,
as transformers does when no assistant mask is asked for), and the three helpers templates call:
`raise_exception(message)`, a `tojson` that keeps non-ASCII text and HTML characters as they are,
and `strftime_now(format)`. The template sees the messages, `tools`, `documents`,
`add_generation_prompt`, the tokenizer's named special tokens (`bos_token`, `eos_token`, ...) and
any extra keyword (`enable_thinking`), which wins over a special token of the same name.

Which template a folder has follows transformers too: `chat_template.jinja`, and named ones in
`additional_chat_templates/*.jinja`, take priority over the `chat_template` entry of
`tokenizer_config.json` (a string, or a list of `{name, template}`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATE_DIR = "additional_chat_templates"

ChatTemplates = str | dict[str, str] | None


class ChatTemplateError(ValueError):
    """A chat template cannot be found, chosen or rendered with the arguments given."""


def read_chat_templates(folder: Path, tokenizer_config: Mapping[str, Any]) -> ChatTemplates:
    """The folder's chat template(s): one string, a dict of named templates, or None."""
    templates: dict[str, str] = {}
    default_file = folder / CHAT_TEMPLATE_FILE
    if default_file.is_file():
        templates["default"] = default_file.read_text(encoding="utf-8")
    extra_dir = folder / CHAT_TEMPLATE_DIR
    if extra_dir.is_dir():
        for path in sorted(extra_dir.glob("*.jinja")):
            templates[path.name.removesuffix(".jinja")] = path.read_text(encoding="utf-8")
    if templates:
        return templates["default"] if list(templates) == ["default"] else templates
    configured = tokenizer_config.get("chat_template")
    if isinstance(configured, list):
        return {entry["name"]: entry["template"] for entry in configured}
    return configured


def choose_template(templates: ChatTemplates, requested: str | None, tools: object) -> str:
    """transformers' `get_chat_template`: a template given as text, by name, or the default."""
    if isinstance(templates, dict):
        if requested is not None and requested in templates:
            return templates[requested]
        if requested is not None:
            return requested
        if tools is not None and "tool_use" in templates:
            return templates["tool_use"]
        if "default" in templates:
            return templates["default"]
        raise ChatTemplateError(
            f"this model has several chat templates and none is named 'default'; pick one of {sorted(templates)}"
        )
    if requested is not None:
        return requested
    if templates is None:
        raise ChatTemplateError("this tokenizer has no chat template (no chat_template.jinja, none in its config)")
    return templates


def render(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool,
    tools: list[dict[str, Any]] | None = None,
    documents: list[dict[str, Any]] | None = None,
    variables: Mapping[str, Any] | None = None,
) -> str:
    """One conversation rendered to text, with the same variables transformers passes."""
    return compiled(template).render(
        messages=messages,
        tools=tools,
        documents=documents,
        add_generation_prompt=add_generation_prompt,
        **(variables or {}),
    )


@functools.lru_cache(maxsize=16)
def compiled(template: str) -> Any:
    """Compile once per template text (a syntax error is raised here, as in transformers)."""
    return _environment().from_string(template)


@functools.cache
def _environment() -> Any:
    # jinja2 is imported here, on the first render, not when the package is imported.
    import jinja2.exceptions
    import jinja2.ext
    import jinja2.nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class GenerationBlock(jinja2.ext.Extension):
        """`{% generation %}...{% endgeneration %}` marks assistant text; rendered as its body."""

        tags: ClassVar[set[str]] = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return caller()

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        value: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format: str) -> str:
        return datetime.now().strftime(format)

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols]
    )
    environment.filters["tojson"] = tojson
    environment.globals["raise_exception"] = raise_exception
    environment.globals["strftime_now"] = strftime_now
    return environment
