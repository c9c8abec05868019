"""Fetch the authors' prompt templates at a pinned commit and write a template file for MEM_PROMPTS.

    python -m mem_agent.fetch_prompts --source memagent-eval --out memagent-eval.toml
    python -m mem_agent.eval_ruler_hqa --prompts memagent-eval.toml ...

This repository holds none of MemAgent's or ReMemR1's wording. This command downloads the one
source file that holds it, from raw.githubusercontent.com at the commit pinned in templates/sources.py,
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
from collections.abc import Sequence
from pathlib import Path

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.numbers import number
from mem_agent.common.pinned_fetch import FetchError
from mem_agent.templates.authors_download import DEFAULT_BASE_URL, FetchRequest, fetch_template_file
from mem_agent.templates.sources import SOURCES
from mem_agent.templates.template_file import Thinking


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.fetch_prompts", __doc__.split("\n\n")[0])
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
    parser.add_argument(
        "--timeout",
        type=number(0, 3600, above=True),
        default=30.0,
        help="seconds for the whole download, not only each read, at most 3600 (default: 30)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    request = FetchRequest(
        list_sources=args.list,
        source=args.source,
        out=args.out,
        force=args.force,
        base_url=args.base_url,
        commit=args.commit,
        sha256=args.sha256,
        thinking=Thinking(args.thinking),
        timeout=args.timeout,
    )
    return command_status(lambda: fetch_template_file(request), failures=(FetchError,))


if __name__ == "__main__":
    raise SystemExit(main())
