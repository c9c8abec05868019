"""The memory agent over one document of the user's, its memory printed as it is written: the work
of `python -m mem_agent.run_document`.

The request is checked in the order that costs least first: the settings, the `--json` path and
the document's path (by the command, with the flags: a regular file, not a device that never
ends, of at most MAX_TEXT_BYTES; the `--json` file is neither the document nor the prompt-template
file, by inode), then the tokenizer, the server's address and health, and last the document,
read whole (a file, or stdin cut at the same bound) and required to be UTF-8 text.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from mem_agent.agent.records import SamplingParams, Trajectory, Turn, TurnKind
from mem_agent.agent.scoring import extract_boxed
from mem_agent.agent.workflow import MemoryAgent
from mem_agent.common.guarded_files import write_text_atomic
from mem_agent.common.input_files import MAX_TEXT_BYTES, STDIN, check_output, input_file, read_bounded, shown
from mem_agent.common.paths import refuse_writing_inputs
from mem_agent.common.usage import UsageError
from mem_agent.inference.agent_flags import build_agent, reach_servers
from mem_agent.inference.client import ClientSettings, RolloutClient
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import decode

__all__ = [
    "DocumentRequest",
    "check_document",
    "check_json_inputs",
    "check_json_path",
    "read_with_agent",
    "trajectory_to_json",
]


@dataclass(frozen=True)
class DocumentRequest:
    """The question, the document (a path, or `-` for stdin), the agent's settings and the server."""

    question: str
    document: str
    tokenizer: str
    config: MemAgentConfig
    sampling: SamplingParams
    server: ClientSettings
    json_path: Path | None  # also write the whole trajectory here
    quiet: bool  # print only the final answer


def read_with_agent(request: DocumentRequest) -> Trajectory:
    """Run the agent over the document, printing each memory (unless quiet), then the answer and
    what is inside its \\boxed{}; with `json_path`, the whole trajectory and the prompts' facts.
    A trajectory that ended with an error is returned as it is, with nothing printed for it.
    UsageError: the server cannot be reached or the document cannot be read."""
    agent = build_agent(request.tokenizer, request.config)
    reach_servers([request.server])
    document = read_document(request.document)
    trajectory = asyncio.run(_run(request, agent, document))
    if trajectory.error:
        return trajectory
    if not request.quiet:
        print(f"== answer ({trajectory.num_chunks} chunks, {trajectory.context_tokens} tokens) ==")
    print(trajectory.answer)
    if not request.quiet:
        print(f"== boxed == {extract_boxed(trajectory.answer)}")
    if request.json_path is not None:
        record = {**trajectory_to_json(trajectory, agent.tokenizer), "prompts": agent.prompt_facts}
        write_text_atomic(request.json_path, json.dumps(record, indent=2) + "\n")
    return trajectory


def read_document(source: str) -> str:
    """The document's text: a regular file or stdin (`-`), of at most MAX_TEXT_BYTES, UTF-8."""
    raw = read_bounded(source, "--document")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"--document {shown(source)} is not UTF-8 (byte {error.start}); convert it first") from None
    if not text.strip():
        raise UsageError(f"--document {shown(source)} is empty")
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


async def _run(request: DocumentRequest, agent: MemoryAgent, document: str) -> Trajectory:
    async with RolloutClient(request.server) as client:
        return await agent.run(
            request.question, document, client, request.sampling, on_turn=_printer(agent, request.quiet)
        )


def check_json_path(path: Path | None) -> None:
    """The --json file's folder must exist before the run: a mistyped path is reported, never made."""
    if path is not None:
        check_output(path, "--json")
    if path is not None and path.is_dir():
        raise UsageError(f"--json {path} is a folder; give the path of the file to write")
    if path is not None and not path.parent.is_dir():
        raise UsageError(f"--json {path}: folder {path.parent} does not exist (make it first)")


def check_document(source: str) -> None:
    """A document given by path is a regular file of at most MAX_TEXT_BYTES, found before the
    tokenizer and the server are (stdin is bounded as it is read)."""
    if source != STDIN:
        input_file(source, "--document", max_bytes=MAX_TEXT_BYTES)


def check_json_inputs(path: Path | None, document: str, prompts: str) -> None:
    """The --json file is neither the document nor the prompt-template file the run reads."""
    if path is not None:
        reads = {
            "--document": None if document == STDIN else Path(document),
            "--prompts": Path(prompts) if prompts else None,
        }
        refuse_writing_inputs({"--json": [path]}, reads)
