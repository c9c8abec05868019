"""Benchmark 6: start-up, from process start to the first request (or to a loaded tokenizer).

A user who runs the evaluator or `run_document` waits for everything the process does before its
first request: the interpreter, imports, the tokenizer (transformers' `AutoTokenizer`, which
imports torch), the prompt templates, reading the data. The server here answers at once (an
aiohttp app on loopback, in this process, that records when each request arrives), so what is
measured is the client alone. The training hook's first call loads the tokenizer too, in the
rollout worker of a trainer. Side by side, in rotating order:

- `evaluator`: `eval_ruler_hqa`, one question of a one-chunk document, start to first request;
- `run_document`: the same document, start to first request;
- `hook`: a fresh process that imports the hook module (`mem_agent.rollout`) and builds the agent
  its first call builds (the tokenizer load), start to agent ready;
- `hook_in_host`: the same in a process that first does what slime's rollout worker does before
  it calls the hook (imports torch, loads the policy's tokenizer with `AutoTokenizer`), from then
  to agent ready: what the hook adds to a real host;
- the floors, what a loader reading tokenizer.json with `tokenizers` alone (no transformers, the
  chat template written by hand) would reach: `minimal` (`bench/minimal_client.py`: one prompt,
  one request with the standard library) for the request paths, `minimal_load` (`tokenizers`
  reading tokenizer.json, nothing else) for the hook.

Each command runs once untimed (to warm the page cache), then `rounds` times; the figures are
medians, and the ratios are taken between medians of the same run.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from mem_agent.tokenization.tokenizer import bundled_qwen3_dir

TARGET_S = 20.0  # evaluator and run_document, process start to first request (a loaded machine)
HOST_TARGET_S = 3.0  # what the hook adds to a trainer's rollout worker
MINIMAL_CLIENT = Path(__file__).resolve().parent / "minimal_client.py"
ANSWER_IDS = [59, 79075, 90, 54, 92]  # a few ordinary ids; the client only needs a well-formed reply
QUESTION = "Who built the bridge?"
DOCUMENT = "The bridge over the river was built in 1901 by a company founded in the town.\n" * 20  # one chunk

# A child that prints CLOCK_MONOTONIC (system-wide on Linux, so comparable with the parent's) when
# the hook's agent is ready, and, as a host, once the host's own state is built: slime's rollout
# worker imports torch and loads the policy's tokenizer with AutoTokenizer (its GenerateState)
# before it calls the generate hook.
_HOOK_CHILD = """
import sys, time
if sys.argv[1] == "host":
    import torch
    from transformers import AutoTokenizer
    AutoTokenizer.from_pretrained(sys.argv[3])
    print(time.monotonic(), flush=True)
from mem_agent import rollout  # the hook module the host loads
from mem_agent.host import hook_config
hook_config.agent_for(sys.argv[2], hook_config.settings())
print(time.monotonic(), flush=True)
"""
_LOAD_CHILD = """
import sys, time
from tokenizers import Tokenizer
Tokenizer.from_file(sys.argv[1])
print(time.monotonic())
"""


class InstantServer:
    """Answers every POST at once with a short completion and records when requests arrive.

    It speaks the reply shapes of `/v1/completions` and `/inference/v1/generate` at once (the
    client reads only its own protocol's fields). Runs its own event loop in a thread.
    """

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.url = ""

    def __enter__(self) -> InstantServer:
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    async def _start(self) -> int:
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_post("/{path:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _answer(self, request: web.Request) -> web.Response:
        self.arrivals.append(time.monotonic())
        await request.read()
        logprobs = {"content": [{"logprob": -1.0} for _ in ANSWER_IDS], "token_logprobs": [-1.0] * len(ANSWER_IDS)}
        choice = {"token_ids": ANSWER_IDS, "text": "", "logprobs": logprobs, "finish_reason": "stop"}
        return web.json_response({"choices": [choice]})


@dataclass(frozen=True)
class Client:
    """One command measured: `request` ones until their first request, the others until they print."""

    argv: list[str]
    request: bool = True


def first_request_s(server: InstantServer, argv: list[str], env: dict[str, str]) -> float:
    """Seconds from starting `argv` to its first request's arrival; the command must succeed."""
    server.arrivals.clear()
    started = time.monotonic()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0 or not server.arrivals:
        raise RuntimeError(f"{argv[1:3]} exited {done.returncode} after {len(server.arrivals)} requests: {done.stderr}")
    return server.arrivals[0] - started


def ready_s(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from starting `argv` (or from the first time it prints, if it prints two) to the last
    time it prints: the child reports its own CLOCK_MONOTONIC instants."""
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    instants = [float(line) for line in done.stdout.split()] if done.returncode == 0 else []
    if not instants:
        raise RuntimeError(f"{argv[1:3]} exited {done.returncode}: {done.stderr[-2000:]}")
    return instants[-1] - (instants[0] if len(instants) > 1 else started)


def clients(url: str, work: Path) -> dict[str, Client]:
    """The commands compared, by name: the floors, then each path."""
    document = work / "document.txt"
    document.write_text(DOCUMENT)
    data = work / "eval_1.json"
    data.write_text(json.dumps([{"index": 0, "input": QUESTION, "answers": ["x"], "context": DOCUMENT}]))
    flags = f"--url {url} --protocol openai --tokenizer bundled:qwen3 --max-memory 16 --max-final 16".split()
    python = [sys.executable, "-m"]
    evaluator = [*python, "mem_agent.eval_ruler_hqa", "--data", str(data), "--output-dir", str(work / "out")]
    evaluator += [*flags, "--no-plot", "--force"]
    run_document = [*python, "mem_agent.run_document", "--question", QUESTION, "--document", str(document), *flags]
    tokenizer_json = str(bundled_qwen3_dir() / "tokenizer.json")
    found: dict[str, Client] = {
        "minimal": Client([sys.executable, str(MINIMAL_CLIENT), url, tokenizer_json]),
        "minimal_load": Client([sys.executable, "-c", _LOAD_CHILD, tokenizer_json], request=False),
    }
    found["evaluator"] = Client(evaluator)
    found["run_document"] = Client([*run_document, "--quiet"])
    for where in ("hook", "hook_in_host"):
        role = "host" if where == "hook_in_host" else "fresh"
        argv = [sys.executable, "-c", _HOOK_CHILD, role, "bundled:qwen3", str(bundled_qwen3_dir())]
        found[where] = Client(argv, request=False)
    return found


FLOORS = {"evaluator": "minimal", "run_document": "minimal", "hook": "minimal_load"}


def run(quick: bool) -> dict:
    rounds = 1 if quick else 5
    times: dict[str, list[float]] = {}
    with InstantServer() as server, tempfile.TemporaryDirectory(prefix="mem_agent_bench_startup_") as folder:
        commands = clients(server.url, Path(folder))

        def measure(name: str) -> float:
            client = commands[name]
            if client.request:
                return first_request_s(server, client.argv, dict(os.environ))
            return ready_s(client.argv, dict(os.environ))

        names = list(commands)
        for name in names:  # warm the page cache: the first run of a command reads its files from disk
            measure(name)
        for round_index in range(rounds):
            for name in names[round_index % len(names) :] + names[: round_index % len(names)]:
                times.setdefault(name, []).append(measure(name))
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "server": "instant aiohttp server on loopback (answers at once), in the benchmark process",
        "rounds": rounds,
        "target_s": TARGET_S,
        "host_target_s": HOST_TARGET_S,
        "first_request_s": {name: [round(value, 3) for value in values] for name, values in times.items()},
        "median_s": {name: round(value, 3) for name, value in medians.items()},
        "over_floor": {path: round(medians[path] / medians[floor], 2) for path, floor in FLOORS.items()},
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
