"""Fetch the authors' prompt templates at a pinned commit and write a template file for MEM_PROMPTS.

    python -m mem_agent.fetch_prompts --source memagent-eval --out memagent-eval.toml
    python -m mem_agent.eval_ruler_hqa --prompts memagent-eval.toml ...

This repository holds none of MemAgent's or ReMemR1's wording. This command downloads the one
source file that holds it, from raw.githubusercontent.com at the commit pinned below, checks its
sha256 before reading anything from it, and takes the template strings from its syntax tree
(`ast`): the file is never executed or imported. The authors' placeholders are renamed to ours
({prompt} -> {problem}, {chunk} -> {section}, {recalled_memory} -> {recalled}) and any literal
brace is escaped, so each prompt is character for character the text the authors' code builds.

Sources (`--list`): `memagent` and `rememr1` are the training clients (token splice, the memory is
the response's ids), `memagent-eval` and `rememr1-eval` the evaluation clients (text sent to
/v1/chat/completions). Evaluate a released checkpoint with its `-eval` source, train with the other.

`--base-url` reads from a mirror with the same layout ({base}/{owner}/{repo}/{commit}/{path});
`--commit` with `--sha256` reads another commit of the same file.
Exit status: 0 written, 1 download, checksum or extraction failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import ipaddress
import re
import string
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.io_utils import write_text_atomic
from mem_agent.prompt_file import (
    Assembly,
    MemoryRule,
    PromptFileError,
    Thinking,
    dump_prompt_file,
    parse_prompt_file,
)

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
MAX_BYTES = 2 * 1024 * 1024  # the files are 4-20 KB; anything this large is not the file we pinned
TRAINING_KEYWORD = r"\{([a-zA-Z]+)\}"  # MemAgent's TokenTemplate: a {word} of letters is a slot
TRAINING_KEYWORD_REMEMR1 = r"\{([a-zA-Z_]+)\}"  # ReMemR1's copy also allows underscores
_MEMAGENT = ("BytedTsinghua-SIA/MemAgent", "76b7a658988e4ea53d7388a62de6c0ce79084146")
_REMEMR1 = ("syr-cn/ReMemR1", "43e69f38b97f7899cccadb4176b0fed003262ce3")
_RENAMES = {"prompt": "problem", "memory": "memory", "chunk": "section", "recalled_memory": "recalled"}


class FetchError(RuntimeError):
    """The download, its checksum or the extraction failed; the message says which and where."""


@dataclass(frozen=True)
class Source:
    name: str
    repository: str
    commit: str
    path: str
    sha256: str
    mode: str
    assembly: Assembly
    memory: MemoryRule
    keyword: str | None  # the slot pattern of a token template; None: the text is a str.format template
    constants: tuple[tuple[str, str], ...]  # (our template key, the name the authors assign it to)
    about: str

    def url(self, base_url: str, commit: str) -> str:
        return f"{base_url.rstrip('/')}/{self.repository}/{commit}/{self.path}"


SOURCES = {
    source.name: source
    for source in (
        Source(
            "memagent",
            *_MEMAGENT,
            "recurrent/impls/memory.py",
            "d12a704ca04e7b7b9df10e0740c63d7d247aa76b7fd90d12f15315966771bd23",
            "memagent",
            Assembly.TOKENS,
            MemoryRule.RESPONSE,
            TRAINING_KEYWORD,
            (("memory_turn", "TEMPLATE"), ("final_turn", "TEMPLATE_FINAL_BOXED"), ("no_memory", "NO_MEMORY_TOKENS")),
            "MemAgent's training client: token splice, memory = the response's ids",
        ),
        Source(
            "memagent-eval",
            *_MEMAGENT,
            "taskutils/memory_eval/utils/recurrent_boxed.py",
            "18685b1a3c2422a27581d802ceed2559e181fb97ab858fa7fc8811b7cd5a69cb",
            "memagent",
            Assembly.TEXT,
            MemoryRule.AFTER_THINK,
            None,
            (("memory_turn", "TEMPLATE"), ("final_turn", "TEMPLATE_FINAL"), ("no_memory", "NO_MEMORY")),
            "MemAgent's evaluation client (boxed answer): chat text, memory = the response after </think>",
        ),
        Source(
            "rememr1",
            *_REMEMR1,
            "recurrent/impls/memory_revisit.py",
            "419d30eb8534eb7a16cba30b17830d60383675e304eae34f60d1d35e42928f93",
            "rememr1",
            Assembly.TOKENS,
            MemoryRule.RESPONSE,
            TRAINING_KEYWORD_REMEMR1,
            (
                ("memory_turn", "TEMPLATE"),
                ("final_turn", "TEMPLATE_FINAL_BOXED"),
                ("no_memory", "NO_MEMORY_STRING"),
                ("no_recall", "NO_MEMORY_RECALLED_STRING"),
            ),
            "ReMemR1's training client: token splice (MEM_MODE=rememr1)",
        ),
        Source(
            "rememr1-eval",
            *_REMEMR1,
            "taskutils/memory_eval/utils/rememr1.py",
            "9b1ef2066a2233a7892d428f11b9d252ae227f25d79a9008d9d3c9d5152d8f47",
            "rememr1",
            Assembly.TEXT,
            MemoryRule.RESPONSE,
            None,
            (
                ("memory_turn", "TEMPLATE"),
                ("final_turn", "TEMPLATE_FINAL_BOXED"),
                ("no_memory", "NO_MEMORY"),
                ("no_recall", "NO_RECALLED_MEMORY"),
            ),
            "ReMemR1's evaluation client: chat text (MEM_MODE=rememr1)",
        ),
    )
}


def download(url: str, timeout_s: float) -> bytes:
    """GET `url` (at most MAX_BYTES); a loopback address never goes through an environment proxy."""
    host = urllib.parse.urlsplit(url).hostname or ""
    handlers = [urllib.request.ProxyHandler({})] if _is_loopback(host) else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=timeout_s) as response:
            body = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as error:
        raise FetchError(f"GET {url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        raise FetchError(f"GET {url}: {getattr(error, 'reason', error)}") from None
    if len(body) > MAX_BYTES:
        raise FetchError(f"GET {url}: more than {MAX_BYTES} bytes; not the pinned source file")
    return body


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
        raise FetchError(f"expected one string assigned to {name}, found {len(found)}: the file has changed")
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


def to_our_syntax(template: str, keyword: str | None) -> str:
    """The authors' template in our str.format syntax with our placeholder names.

    A token template (`keyword`) treats everything but a slot as literal text, braces included;
    a str.format template has its own `{{` escapes. Either way the literal text is re-escaped.
    """
    if keyword is not None:
        parts = re.split(keyword, template)
        pieces = [(parts[i], parts[i + 1] if i + 1 < len(parts) else None) for i in range(0, len(parts), 2)]
    else:
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as error:
            raise FetchError(f"template is not a valid str.format string: {error}") from None
        if any(spec or conversion for _, _, spec, conversion in parsed):
            raise FetchError("the authors' template uses a format spec or conversion: the file has changed")
        pieces = [(literal, name) for literal, name, _, _ in parsed]
    out = []
    for literal, name in pieces:
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if name is not None:
            if name not in _RENAMES:
                raise FetchError(f"unknown placeholder {{{name}}} in the authors' template: the file has changed")
            out.append("{" + _RENAMES[name] + "}")
    return "".join(out)


def extract(source: Source, raw: bytes) -> dict[str, str]:
    try:
        tree = ast.parse(raw.decode("utf-8"), filename=source.path)
    except (UnicodeDecodeError, SyntaxError) as error:
        raise FetchError(f"{source.path} is not a Python file this interpreter can parse: {error}") from None
    templates = {}
    for key, name in source.constants:
        text = string_assigned(tree, name)
        templates[key] = to_our_syntax(text, source.keyword) if key.endswith("_turn") else text
    return templates


def fetch(source: Source, base_url: str, commit: str, sha256: str, timeout_s: float, thinking: Thinking) -> str:
    """The template file's text for `source` at `commit`, after its checksum and a full validation."""
    url = source.url(base_url, commit)
    raw = download(url, timeout_s)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise FetchError(f"{url}: sha256 {digest} is not the pinned {sha256}; nothing was written")
    provenance = {"name": source.name, "repository": source.repository, "commit": commit, "path": source.path}
    text = dump_prompt_file(
        mode=source.mode,
        assembly=source.assembly,
        thinking=thinking,
        memory=source.memory,
        templates=extract(source, raw),
        source={**provenance, "url": url, "sha256": digest},
        header=(
            f"Prompt templates for mem_agent (MEM_PROMPTS), written by mem_agent.fetch_prompts.\n"
            f"{source.about}.\nThe template text is {source.repository}'s own, under its license; "
            "it is not part of mem-agent."
        ),
    )
    try:
        parse_prompt_file(text.encode(), Path(f"<{source.name}>"))
    except PromptFileError as error:
        raise FetchError(f"the extracted templates do not validate: {error}") from None
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mem_agent.fetch_prompts",
        description="Download the authors' prompt templates at a pinned commit and write a MEM_PROMPTS file.",
    )
    parser.add_argument("--source", choices=sorted(SOURCES), help="whose client to reproduce (see --list)")
    parser.add_argument("--out", type=Path, help="template file to write (TOML)")
    parser.add_argument("--list", action="store_true", help="print the sources with their pinned commits and exit")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    parser.add_argument("--base-url", default=DEFAULT_BASE_URL, help="raw-file server or mirror (default: %(default)s)")
    parser.add_argument("--commit", default=None, help="another commit of the same file (needs --sha256)")
    parser.add_argument("--sha256", default=None, help="the sha256 of the file at --commit")
    parser.add_argument(
        "--thinking",
        choices=[t.value for t in Thinking],
        default=Thinking.TEMPLATE.value,
        help="template: the chat template's default, as the authors' clients (default); on/off: enable_thinking",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for the download (default: 30)")
    return parser


def _usage(args: argparse.Namespace) -> str | None:
    if args.source is None or args.out is None:
        return "--source and --out are required (or --list)"
    if (args.commit is None) != (args.sha256 is None):
        return "--commit and --sha256 go together: a commit is only trusted with the checksum of its file"
    if args.commit is not None and not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        return f"--commit {args.commit} must be a full 40-character commit id"
    if args.sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", args.sha256):
        return f"--sha256 {args.sha256} must be 64 lowercase hex digits"
    if args.out.exists() and not args.force:
        return f"--out {args.out} exists; pass --force to replace it"
    if not args.base_url.startswith(("http://", "https://")):
        return f"--base-url {args.base_url} must start with http:// or https://"
    if args.timeout <= 0:
        return f"--timeout {args.timeout} must be positive"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for source in SOURCES.values():
            print(f"{source.name:13} {source.repository}@{source.commit[:12]} {source.path}\n{'':13} {source.about}")
        return 0
    problem = _usage(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    source = SOURCES[args.source]
    try:
        text = fetch(
            source,
            args.base_url,
            args.commit or source.commit,
            args.sha256 or source.sha256,
            args.timeout,
            Thinking(args.thinking),
        )
    except FetchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    write_text_atomic(args.out, text)
    print(f"wrote {args.out} ({source.name}, {source.repository}@{(args.commit or source.commit)[:12]})")
    mode = f"MEM_MODE={source.mode} " if source.mode != "memagent" else ""
    print(f"use it with: {mode}MEM_PROMPTS={args.out.resolve()}  (or --prompts {args.out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
