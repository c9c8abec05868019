"""Fetch the authors' prompt templates at a pinned commit and write a template file for MEM_PROMPTS.

    python -m mem_agent.fetch_prompts --source memagent-eval --out memagent-eval.toml
    python -m mem_agent.eval_ruler_hqa --prompts memagent-eval.toml ...

This repository holds none of MemAgent's or ReMemR1's wording. This command downloads the one
source file that holds it, from raw.githubusercontent.com at the commit pinned in prompt_sources.py,
checks its sha256 before reading anything from it, and takes the template strings from its syntax
tree (`ast`): the file is never executed or imported. The result is validated as a template file
before it is written.

Sources (`--list`): `memagent` and `rememr1` are the training clients (token splice, the memory is
the response's ids), `memagent-eval` and `rememr1-eval` the evaluation clients (text sent to
/v1/chat/completions). Evaluate a released checkpoint with its `-eval` source, train with the other.

`--base-url` reads from a mirror with the same layout ({base}/{owner}/{repo}/{commit}/{path});
`--commit` with `--sha256` reads another commit of the same file.
Exit status: 0 written, 1 download, checksum or extraction failed, 2 bad usage (or --out not writable).
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.atomic_files import write_text_atomic
from mem_agent.common.console import program_name
from mem_agent.common.usage import UsageError
from mem_agent.templates.sources import SOURCES, Source, SourceError, extract
from mem_agent.templates.template_file import PromptFileError, Thinking, dump_prompt_file, parse_prompt_file

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
MAX_BYTES = 2 * 1024 * 1024  # the files are 4-20 KB; anything this large is not the file we pinned


class FetchError(RuntimeError):
    """The download, its checksum or the validation failed; the message says which and where."""


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
        templates=_extract(source, raw),
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


def _extract(source: Source, raw: bytes) -> dict[str, str]:
    try:
        return extract(source, raw)
    except SourceError as error:
        raise FetchError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("mem_agent.fetch_prompts"),
        description="Download the authors' prompt templates at a pinned commit and write a MEM_PROMPTS file.",
    )
    parser.add_argument(
        "--source", choices=sorted(SOURCES), help="whose client to reproduce (see --list; required unless --list)"
    )
    parser.add_argument("--out", type=Path, help="template file to write, TOML (required unless --list)")
    parser.add_argument("--list", action="store_true", help="print the sources with their pinned commits and exit")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists (default: refuse)")
    parser.add_argument("--base-url", default=DEFAULT_BASE_URL, help="raw-file server or mirror (default: %(default)s)")
    parser.add_argument(
        "--commit", default=None, help="another commit of the same file, with --sha256 (default: the source's pin)"
    )
    parser.add_argument(
        "--sha256", default=None, help="the sha256 of the file at --commit (default: the pinned file's)"
    )
    parser.add_argument(
        "--thinking",
        choices=[t.value for t in Thinking],
        default=Thinking.TEMPLATE.value,
        help="template: the chat template's own default, as the authors' clients; on/off: enable_thinking "
        "(default: %(default)s)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for the download (default: 30)")
    return parser


def check_usage(args: argparse.Namespace) -> None:
    """Every mistake in the flags as a UsageError, before anything is downloaded."""
    if args.source is None or args.out is None:
        raise UsageError("--source and --out are required (or --list)")
    if (args.commit is None) != (args.sha256 is None):
        raise UsageError("--commit and --sha256 go together: a commit is only trusted with the checksum of its file")
    if args.commit is not None and not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        raise UsageError(f"--commit {args.commit} must be a full 40-character commit id")
    if args.sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", args.sha256):
        raise UsageError(f"--sha256 {args.sha256} must be 64 lowercase hex digits")
    if args.out.is_dir():
        raise UsageError(f"--out {args.out} is a folder; give the path of the file to write")
    if not args.out.parent.is_dir():
        raise UsageError(f"--out {args.out}: folder {args.out.parent} does not exist")
    if args.out.exists() and not args.force:
        raise UsageError(f"--out {args.out} exists; pass --force to replace it")
    if not args.base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {args.base_url} must start with http:// or https://")
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout} must be positive")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list:
        for source in SOURCES.values():
            print(f"{source.name:13} {source.repository}@{source.commit[:12]} {source.path}\n{'':13} {source.about}")
        return 0
    try:
        check_usage(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
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
    try:
        write_text_atomic(args.out, text)
    except OSError as error:
        print(f"error: --out {args.out}: cannot write: {error.strerror or error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({source.name}, {source.repository}@{(args.commit or source.commit)[:12]})")
    mode = f"MEM_MODE={source.mode} " if source.mode != "memagent" else ""
    print(f"use it with: {mode}MEM_PROMPTS={args.out.resolve()}  (or --prompts {args.out})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
