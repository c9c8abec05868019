"""Benchmark 6: start-up, from process start to the first request at an instant server.

A user who runs the evaluator or `run_document` waits for everything the process does before its
first request: the interpreter, imports, the tokenizer, the prompt templates, reading the data. The
server here answers at once (an aiohttp app on loopback, in this process, that records when each
request arrives), so what is measured is the client alone. Side by side, in rotating order:

- `minimal`: `bench/minimal_client.py`, a bare script that loads tokenizer.json with `tokenizers`,
  builds one prompt by hand and sends it with the standard library: the floor any client pays;
- `run_document` and `evaluator` (`eval_ruler_hqa`, one question of a one-chunk document), each
  with the default tokenizer loader (the light one: no torch);
- full mode only, `evaluator_transformers`: the evaluator with `MEM_TOKENIZER=transformers`, the
  loader it used before (it imports torch), for the before/after comparison.

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
from pathlib import Path

from aiohttp import web

from mem_agent.tokenization.tokenizer import bundled_qwen3_dir

TARGET_S = 1.5
MINIMAL_CLIENT = Path(__file__).resolve().parent / "minimal_client.py"
ANSWER_IDS = [59, 79075, 90, 54, 92]  # a few ordinary ids; the client only needs a well-formed reply
QUESTION = "Who built the bridge?"
DOCUMENT = "The bridge over the river was built in 1901 by a company founded in the town.\n" * 20  # one chunk


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


def first_request_s(server: InstantServer, argv: list[str], env: dict[str, str]) -> float:
    """Seconds from starting `argv` to its first request's arrival; the command must succeed."""
    server.arrivals.clear()
    started = time.monotonic()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0 or not server.arrivals:
        raise RuntimeError(f"{argv[1:3]} exited {done.returncode} after {len(server.arrivals)} requests: {done.stderr}")
    return server.arrivals[0] - started


def commands(url: str, work: Path, with_transformers: bool) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The clients compared, each as (argv, environment)."""
    document = work / "document.txt"
    document.write_text(DOCUMENT)
    data = work / "eval_1.json"
    data.write_text(json.dumps([{"index": 0, "input": QUESTION, "answers": ["x"], "context": DOCUMENT}]))
    flags = f"--url {url} --protocol openai --tokenizer bundled:qwen3 --max-memory 16 --max-final 16".split()
    env = {**os.environ, "MEM_TOKENIZER": "auto"}
    python = [sys.executable, "-m"]
    evaluator = [*python, "mem_agent.eval_ruler_hqa", "--data", str(data), "--output-dir", str(work / "out")]
    evaluator += [*flags, "--no-plot", "--force"]
    run_document = [*python, "mem_agent.run_document", "--question", QUESTION, "--document", str(document), *flags]
    minimal = [sys.executable, str(MINIMAL_CLIENT), url, str(bundled_qwen3_dir() / "tokenizer.json")]
    clients = {
        "minimal": (minimal, env),
        "run_document": ([*run_document, "--quiet"], env),
        "evaluator": (evaluator, env),
    }
    if with_transformers:
        clients["evaluator_transformers"] = (evaluator, {**env, "MEM_TOKENIZER": "transformers"})
    return clients


def run(quick: bool) -> dict:
    rounds = 1 if quick else 5
    times: dict[str, list[float]] = {}
    with InstantServer() as server, tempfile.TemporaryDirectory(prefix="mem_agent_bench_startup_") as folder:
        clients = commands(server.url, Path(folder), with_transformers=not quick)
        names = list(clients)
        for name in names:  # warm the page cache: the first run of a command reads its files from disk
            first_request_s(server, *clients[name])
        for round_index in range(rounds):
            for name in names[round_index % len(names) :] + names[: round_index % len(names)]:
                times.setdefault(name, []).append(first_request_s(server, *clients[name]))
    medians = {name: statistics.median(values) for name, values in times.items()}
    result: dict = {
        "server": "instant aiohttp server on loopback (answers at once), in the benchmark process",
        "rounds": rounds,
        "target_s": TARGET_S,
        "first_request_s": {name: [round(value, 3) for value in values] for name, values in times.items()},
        "median_s": {name: round(value, 3) for name, value in medians.items()},
        "evaluator_over_minimal": round(medians["evaluator"] / medians["minimal"], 2),
        "run_document_over_minimal": round(medians["run_document"] / medians["minimal"], 2),
    }
    if "evaluator_transformers" in medians:
        result["transformers_over_light"] = round(medians["evaluator_transformers"] / medians["evaluator"], 2)
    return result


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
