"""The authors' prompt templates downloaded at a pinned commit, checked and written as a template
file: the work of `python -m mem_agent.fetch_prompts`, whose docstring says what it reads and why.

The file is fetched once (at most MAX_BYTES), its sha256 compared with the pin before anything is
read from it, the template strings taken from its syntax tree (`sources.extract`, never executed),
and the result validated as a template file before it replaces `--out`.
"""

from __future__ import annotations

import io
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.guarded_files import write_text_atomic
from mem_agent.common.input_files import check_output
from mem_agent.common.pinned_fetch import FetchError
from mem_agent.common.pinned_fetch import fetch as fetch_pinned
from mem_agent.common.usage import UsageError
from mem_agent.templates.sources import SOURCES, Source, SourceError, extract
from mem_agent.templates.template_file import PromptFileError, Thinking, dump_prompt_file, parse_prompt_file

__all__ = ["DEFAULT_BASE_URL", "FetchRequest", "fetch", "fetch_template_file"]

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
MAX_BYTES = 2 * 1024 * 1024  # the files are 4-20 KB; anything this large is not the file we pinned
MAX_TIMEOUT_S = 3600.0  # bound: --timeout, for a file of at most MAX_BYTES


def fetch(source: Source, base_url: str, commit: str, sha256: str, timeout_s: float, thinking: Thinking) -> str:
    """The template file's text for `source` at `commit`, after its checksum and a full validation."""
    url, body = source.url(base_url, commit), io.BytesIO()
    fetch_pinned(url, body, sha256=sha256, deadline_s=timeout_s, deadline="--timeout", max_bytes=MAX_BYTES)
    raw = body.getvalue()
    provenance = {"name": source.name, "repository": source.repository, "commit": commit, "path": source.path}
    text = dump_prompt_file(
        mode=source.mode,
        assembly=source.assembly,
        thinking=thinking,
        memory=source.memory,
        templates=_extract(source, raw),
        source={**provenance, "url": url, "sha256": sha256},
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


def _extract(source: Source, raw: bytes) -> dict[str, str]:
    try:
        return extract(source, raw)
    except SourceError as error:
        raise FetchError(str(error)) from None


@dataclass(frozen=True)
class FetchRequest:
    """Whose templates (`source`), where to write them (`out`), and which file to trust: the pin, or
    another `commit` with its `sha256`. `list_sources` only lists the sources."""

    list_sources: bool
    source: str | None
    out: Path | None
    force: bool
    base_url: str
    commit: str | None
    sha256: str | None
    thinking: Thinking
    timeout: float


def fetch_template_file(request: FetchRequest) -> None:
    """List the sources, or fetch one and write its template file, printing what was written and how
    to use it. UsageError: a mistake in the request or an `--out` that cannot be written;
    FetchError: the download, checksum or validation failed (nothing is written then)."""
    if request.list_sources:
        for source in SOURCES.values():
            print(f"{source.name:13} {source.repository}@{source.commit[:12]} {source.path}\n{'':13} {source.about}")
        return
    source, out = _checked(request)
    commit = request.commit or source.commit
    text = fetch(source, request.base_url, commit, request.sha256 or source.sha256, request.timeout, request.thinking)
    try:
        write_text_atomic(out, text)
    except OSError as error:
        raise UsageError(f"--out {out}: cannot write: {error.strerror or error}") from None
    print(f"wrote {out} ({source.name}, {source.repository}@{commit[:12]})")
    mode = f"MEM_MODE={source.mode} " if source.mode != "memagent" else ""
    print(f"use it with: {mode}MEM_PROMPTS={out.resolve()}  (or --prompts {out})")


def _checked(request: FetchRequest) -> tuple[Source, Path]:
    """The source and the file to write; every mistake in the flags as a UsageError, before
    anything is downloaded."""
    if request.source is None or request.out is None:
        raise UsageError("--source and --out are required (or --list)")
    out = request.out
    if (request.commit is None) != (request.sha256 is None):
        raise UsageError("--commit and --sha256 go together: a commit is only trusted with the checksum of its file")
    if request.commit is not None and not re.fullmatch(r"[0-9a-f]{40}", request.commit):
        raise UsageError(f"--commit {request.commit} must be a full 40-character commit id")
    if request.sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", request.sha256):
        raise UsageError(f"--sha256 {request.sha256} must be 64 lowercase hex digits")
    check_output(out, "--out")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    if out.exists() and not request.force:
        raise UsageError(f"--out {out} exists; pass --force to replace it")
    if not request.base_url.startswith(("http://", "https://")) or not _has_host(request.base_url):
        raise UsageError(f"--base-url {request.base_url} must start with http:// or https:// and name a host")
    if not 0 < request.timeout <= MAX_TIMEOUT_S:  # bound: MAX_TIMEOUT_S
        raise UsageError(f"--timeout {request.timeout} must be positive, at most {MAX_TIMEOUT_S:g} seconds")
    return SOURCES[request.source], out


def _has_host(url: str) -> bool:
    try:
        return bool(urllib.parse.urlsplit(url).hostname)
    except ValueError:  # a bracketed host that is not an IPv6 address, a port that is not a number
        return False
