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
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from mem_agent.agent.records import SamplingParams, Trajectory, Turn, TurnKind
from mem_agent.agent.scoring import extract_boxed
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.atomic_files import write_text_atomic
from mem_agent.common.console import program_name
from mem_agent.common.usage import UsageError, gather
from mem_agent.inference.agent_flags import (
    add_agent_flags,
    add_sampling_flags,
    add_server_flags,
    build_agent,
    client_settings,
    config_from_args,
    reach_servers,
    sampling_from_args,
)
from mem_agent.inference.client import RolloutClient
from mem_agent.settings.config import ConfigError
from mem_agent.tokenization.tokenizer import TokenizerNotFoundError, decode


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("mem_agent.run_document"),
        description="Run a MemAgent over one long document (a file or stdin) and print its memory and answer.",
    )
    parser.add_argument("--question", required=True, help="the question to answer from the document")
    parser.add_argument("--document", default="-", help="UTF-8 text file, or - for stdin (default: -)")
    add_server_flags(parser)
    add_sampling_flags(parser)
    add_agent_flags(parser)
    parser.add_argument("--json", type=Path, default=None, help="also write the whole trajectory to this JSON file")
    parser.add_argument("--quiet", action="store_true", help="print only the final answer")
    return parser


def read_document(source: str) -> str:
    try:
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read document {source}: {error.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"document {source} is not UTF-8 (byte {error.start}); convert it first") from None
    if not text.strip():
        raise UsageError(f"document {source} is empty")
    return text


def trajectory_to_json(trajectory: Trajectory, tokenizer) -> dict:
    return {
        "status": trajectory.status.value,
        "error": trajectory.error,
        "answer": trajectory.answer,
        "boxed": extract_boxed(trajectory.answer),
        "context_tokens": trajectory.context_tokens,
        "dropped_tokens": trajectory.dropped_tokens,
        "num_chunks": trajectory.num_chunks,
        "turns": [
            {
                "kind": turn.kind.value,
                "step": turn.step,
                "prompt_tokens": len(turn.prompt_ids),
                "response_tokens": len(turn.response_ids),
                "finish_reason": turn.finish_reason.value,
                "memory": decode(tokenizer, turn.memory_ids),
            }
            for turn in trajectory.turns
        ],
    }


def _printer(agent: MemoryAgent, quiet: bool):
    def show(turn: Turn) -> None:
        if quiet or turn.kind is not TurnKind.MEMORY:
            return
        cut = " (cut at max tokens)" if turn.truncated else ""
        print(f"== memory after chunk {turn.step + 1}{cut} ==", flush=True)
        print(decode(agent.tokenizer, turn.memory_ids), flush=True)

    return show


async def _run(args: argparse.Namespace, agent: MemoryAgent, document: str, sampling: SamplingParams) -> Trajectory:
    settings = client_settings(args.url, args, agent.config, concurrency=1)
    async with RolloutClient(settings) as client:
        return await agent.run(args.question, document, client, sampling, on_turn=_printer(agent, args.quiet))


def _check_json_path(path: Path | None) -> None:
    """The --json file's folder must exist before the run: a mistyped path is reported, never made."""
    if path is not None and path.is_dir():
        raise UsageError(f"--json {path} is a folder; give the path of the file to write")
    if path is not None and not path.parent.is_dir():
        raise UsageError(f"--json {path}: folder {path.parent} does not exist (make it first)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config, sampling, _ = gather(
            lambda: config_from_args(args), lambda: sampling_from_args(args), lambda: _check_json_path(args.json)
        )
        server = client_settings(args.url, args, config, concurrency=1)  # the address, before the tokenizer loads
        agent = build_agent(args.tokenizer, config)
        reach_servers([server])
        document = read_document(args.document)
    except (UsageError, ConfigError, TokenizerNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    trajectory = asyncio.run(_run(args, agent, document, sampling))
    if trajectory.error:
        print(f"error: {trajectory.status.value}: {trajectory.error}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"== answer ({trajectory.num_chunks} chunks, {trajectory.context_tokens} tokens) ==")
    print(trajectory.answer)
    if not args.quiet:
        print(f"== boxed == {extract_boxed(trajectory.answer)}")
    if args.json is not None:
        document = {**trajectory_to_json(trajectory, agent.tokenizer), "prompts": agent.prompt_facts}
        write_text_atomic(args.json, json.dumps(document, indent=2) + "\n")
    return 0 if trajectory.status.value == "completed" else 1


if __name__ == "__main__":
    raise SystemExit(main())
