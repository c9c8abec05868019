"""Where the authors' prompt templates live, pinned, and how their text becomes our template file.

Each source is one Python file of MemAgent or ReMemR1 at one commit, with its sha256. The template
strings are read from the file's syntax tree (`ast`), never by executing or importing it. Two
placeholder syntaxes occur, one per client:

- the training clients (`TokenTemplate` in their `recurrent/utils.py`) never run str.format on the
  template: a `{word}` of letters (ReMemR1: letters and `_`) is a slot and everything else is
  literal text, braces included, so `\\boxed{{}}` reaches the model with doubled braces;
- the evaluation clients call `template.format(...)`, so `{{` and `}}` are escapes.

Either way the literal text is re-escaped for our str.format syntax and the slots renamed to ours
({prompt} -> {problem}, {chunk} -> {section}, {recalled_memory} -> {recalled}), so a filled-in
template is character for character the text the authors' code builds.
"""

from __future__ import annotations

import ast
import re
import string
from dataclasses import dataclass

from mem_agent.templates.template_file import Assembly, MemoryText

MEMAGENT_SLOT = r"\{([a-zA-Z]+)\}"  # MemAgent's TokenTemplate
REMEMR1_SLOT = r"\{([a-zA-Z_]+)\}"  # ReMemR1's copy of it
RENAMES = {"prompt": "problem", "memory": "memory", "chunk": "section", "recalled_memory": "recalled"}
MEMAGENT_REPO, MEMAGENT_COMMIT = "BytedTsinghua-SIA/MemAgent", "76b7a658988e4ea53d7388a62de6c0ce79084146"
REMEMR1_REPO, REMEMR1_COMMIT = "syr-cn/ReMemR1", "43e69f38b97f7899cccadb4176b0fed003262ce3"


class SourceError(ValueError):
    """The file is not laid out as pinned (a name is missing, a placeholder is new): never guess."""


@dataclass(frozen=True)
class Source:
    name: str
    repository: str
    commit: str
    path: str
    sha256: str  # of the file at `commit`, as raw.githubusercontent.com serves it
    mode: str
    assembly: Assembly
    memory: MemoryText
    slot_pattern: str | None  # a token template's slot regex; None: the text is a str.format template
    names: dict[str, str]  # our template key -> the name the authors assign that string to
    about: str

    def url(self, base_url: str, commit: str) -> str:
        return f"{base_url.rstrip('/')}/{self.repository}/{commit}/{self.path}"


SOURCES = {
    source.name: source
    for source in (
        Source(
            name="memagent",
            repository=MEMAGENT_REPO,
            commit=MEMAGENT_COMMIT,
            path="recurrent/impls/memory.py",
            sha256="d12a704ca04e7b7b9df10e0740c63d7d247aa76b7fd90d12f15315966771bd23",
            mode="memagent",
            assembly=Assembly.TOKENS,
            memory=MemoryText.RESPONSE,
            slot_pattern=MEMAGENT_SLOT,
            names={"memory_turn": "TEMPLATE", "final_turn": "TEMPLATE_FINAL_BOXED", "no_memory": "NO_MEMORY_TOKENS"},
            about="MemAgent's training client: token splice, memory = the response's ids",
        ),
        Source(
            name="memagent-eval",
            repository=MEMAGENT_REPO,
            commit=MEMAGENT_COMMIT,
            path="taskutils/memory_eval/utils/recurrent_boxed.py",
            sha256="18685b1a3c2422a27581d802ceed2559e181fb97ab858fa7fc8811b7cd5a69cb",
            mode="memagent",
            assembly=Assembly.TEXT,
            memory=MemoryText.AFTER_THINK,
            slot_pattern=None,
            names={"memory_turn": "TEMPLATE", "final_turn": "TEMPLATE_FINAL", "no_memory": "NO_MEMORY"},
            about="MemAgent's evaluation client (boxed answer): chat text, memory = the response after </think>",
        ),
        Source(
            name="rememr1",
            repository=REMEMR1_REPO,
            commit=REMEMR1_COMMIT,
            path="recurrent/impls/memory_revisit.py",
            sha256="419d30eb8534eb7a16cba30b17830d60383675e304eae34f60d1d35e42928f93",
            mode="rememr1",
            assembly=Assembly.TOKENS,
            memory=MemoryText.RESPONSE,
            slot_pattern=REMEMR1_SLOT,
            names={
                "memory_turn": "TEMPLATE",
                "final_turn": "TEMPLATE_FINAL_BOXED",
                "no_memory": "NO_MEMORY_STRING",
                "no_recall": "NO_MEMORY_RECALLED_STRING",
            },
            about="ReMemR1's training client: token splice (MEM_MODE=rememr1)",
        ),
        Source(
            name="rememr1-eval",
            repository=REMEMR1_REPO,
            commit=REMEMR1_COMMIT,
            path="taskutils/memory_eval/utils/rememr1.py",
            sha256="9b1ef2066a2233a7892d428f11b9d252ae227f25d79a9008d9d3c9d5152d8f47",
            mode="rememr1",
            assembly=Assembly.TEXT,
            memory=MemoryText.RESPONSE,
            slot_pattern=None,
            names={
                "memory_turn": "TEMPLATE",
                "final_turn": "TEMPLATE_FINAL_BOXED",
                "no_memory": "NO_MEMORY",
                "no_recall": "NO_RECALLED_MEMORY",
            },
            about="ReMemR1's evaluation client: chat text (MEM_MODE=rememr1)",
        ),
    )
}


def extract(source: Source, raw: bytes) -> dict[str, str]:
    """Our template keys and texts from the bytes of `source`'s file (already checksummed)."""
    try:
        tree = ast.parse(raw.decode("utf-8"), filename=source.path)
    except (UnicodeDecodeError, SyntaxError) as error:
        raise SourceError(f"{source.path} is not a Python file this interpreter can parse: {error}") from None
    templates = {}
    for key, name in source.names.items():
        text = string_assigned(tree, name)
        templates[key] = to_our_syntax(text, source.slot_pattern) if key.endswith("_turn") else text
    return templates


def string_assigned(tree: ast.Module, name: str) -> str:
    """The one string assigned to `name` (a variable or an attribute such as `self.name`).

    The value is a string literal, or the first argument of a call on one (MemAgent encodes its
    "no memory" text where it assigns it: `self.X = tokenizer.encode("...", ...)`).
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        text = _literal(value) if any(_target_name(target) == name for target in targets) else None
        if text is not None:
            found.append(text)
    if len(found) != 1:
        raise SourceError(f"expected one string assigned to {name}, found {len(found)}: the file has changed")
    return found[0]


def _target_name(target: ast.expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def _literal(value: ast.expr | None) -> str | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.Call) and value.args:
        first = value.args[0]
        return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    return None


def to_our_syntax(template: str, slot_pattern: str | None) -> str:
    """The authors' template in our str.format syntax, with our placeholder names."""
    if slot_pattern is not None:
        parts = re.split(slot_pattern, template)
        pieces = [(parts[i], parts[i + 1] if i + 1 < len(parts) else None) for i in range(0, len(parts), 2)]
    else:
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as error:
            raise SourceError(f"template is not a valid str.format string: {error}") from None
        if any(spec or conversion for _, _, spec, conversion in parsed):
            raise SourceError("the authors' template uses a format spec or conversion: the file has changed")
        pieces = [(literal, name) for literal, name, _, _ in parsed]
    out = []
    for literal, name in pieces:
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if name is not None:
            if name not in RENAMES:
                raise SourceError(f"unknown placeholder {{{name}}} in the authors' template: the file has changed")
            out.append("{" + RENAMES[name] + "}")
    return "".join(out)
