"""Run a memory agent over one long document of your own and watch its memory evolve.

    python -m mem_agent.run_document --url http://127.0.0.1:8000 --question "Who ...?" --document book.txt
    cat book.txt | python -m mem_agent.run_document --url ... --question "Who ...?"

Works against any server speaking one of the three protocols (default `openai`: any
`vllm serve` answers `/v1/completions`). Prints the memory after each chunk as it is written,
then the final answer and what is inside its \\boxed{}. `--json` keeps the whole trajectory and
which prompt templates produced it.
Chunking and token limits come from the `MEM_*` settings; the flags below override them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mem_agent.agent.records import TrajectoryStatus
from mem_agent.common.console import add_flags, command_parser, command_status
from mem_agent.common.usage import gather
from mem_agent.inference.agent_flags import (
    AgentFlags,
    SamplingFlags,
    ServerFlags,
    client_settings,
    config_from_args,
    sampling_from_args,
)
from mem_agent.inference.one_document import (
    DocumentRequest,
    check_document,
    check_json_inputs,
    check_json_path,
    read_with_agent,
)
from mem_agent.tokenization.tokenizer import TokenizerNotFoundError


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser("mem_agent.run_document", __doc__.split("\n\n")[0])
    parser.add_argument("--question", required=True, help="the question to answer from the document")
    parser.add_argument("--document", default="-", help="UTF-8 text file, or - for stdin (default: -)")
    for flags in (ServerFlags, SamplingFlags, AgentFlags):
        add_flags(parser, flags)
    parser.add_argument("--json", type=Path, default=None, help="also write the whole trajectory to this JSON file")
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    return parser


def _request(args: argparse.Namespace) -> DocumentRequest:
    """Every problem of the flags and settings at once (one line), then the server's address, then
    the files: the document's path and the --json file's (never one of the files read)."""
    config, sampling, _ = gather(
        lambda: config_from_args(args), lambda: sampling_from_args(args), lambda: check_json_path(args.json)
    )
    server = client_settings(args.url, args, config, concurrency=1)
    check_document(args.document)
    check_json_inputs(args.json, args.document, config.prompts)
    return DocumentRequest(
        question=args.question,
        document=args.document,
        tokenizer=args.tokenizer,
        config=config,
        sampling=sampling,
        server=server,
        json_path=args.json,
        quiet=args.quiet,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return command_status(lambda: _read(_request(args)), mistakes=(TokenizerNotFoundError,))


def _read(request: DocumentRequest) -> int:
    trajectory = read_with_agent(request)
    if trajectory.error:
        print(f"error: {trajectory.status.value}: {trajectory.error}", file=sys.stderr)
        return 1
    return 0 if trajectory.status is TrajectoryStatus.COMPLETED else 1


if __name__ == "__main__":
    raise SystemExit(main())
