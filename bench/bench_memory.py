"""Benchmark 4: peak memory of the evaluator on an eval_6400-sized file, 128 questions in flight.

The file is synthetic (made here, like RULER-HQA's eval_6400.json: 128 questions of 6400
documents, ~900K tokens each, ~450 MB) and the server is the latency-model stand-in in its own
process, so the peak RSS measured (the evaluator process alone, from wait4) is the client's. It is
reported next to the file size and to what the same token ids would take as Python lists
(8-byte pointer + 28-byte int object per token).
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from mem_agent.common.jsonstream import write_json_array_atomic
from mem_agent.evaluation.results import read_results
from mem_agent.serving.processes import free_port, start_process, wait_healthy

PYTHON_LIST_BYTES_PER_TOKEN = 8 + 28
WORDS = [
    "river", "company", "founded", "born", "town", "album", "film", "director", "season", "league",
    "station", "county", "published", "novel", "engineer", "bridge", "mountain", "festival", "record", "school",
]  # fmt: skip


def make_eval_file(path: Path, questions: int, documents: int, seed: int = 0) -> int:
    """RULER-HQA-shaped items with ~140-token documents; returns the file size in bytes."""
    rng = random.Random(seed)
    paragraphs = [
        f"Entity {i}\n" + " ".join(rng.choice(WORDS) + ("." if rng.random() < 0.1 else "") for _ in range(115))
        for i in range(4000)
    ]

    def items():
        for index in range(questions):
            chosen = rng.choices(paragraphs, k=documents)
            context = "\n\n".join(f"Document {i}:\n{text}" for i, text in enumerate(chosen, start=1))
            yield {
                "index": index,
                "input": f"Which entity founded town {index}?",
                "answers": ["Entity 7"],
                "context": context,
                "num_docs": documents,
            }

    write_json_array_atomic(path, items())
    return path.stat().st_size


@contextlib.contextmanager
def latency_server(work: Path) -> Iterator[int]:
    """The latency-model HTTP stand-in (64 tokens a turn, 5 ms) in its own process, healthy; its port."""
    port = free_port()
    server = start_process(
        "latency server",
        [sys.executable, "-m", "bench.latency_server", "--port", str(port), "--tokens", "64", "--delay-ms", "5"],
        work / "latency_server.log",
    )
    try:
        wait_healthy(server, f"http://127.0.0.1:{port}/health", timeout_s=60)
        yield port
    finally:
        server.stop()


def run(quick: bool) -> dict:
    questions, documents = (8, 400) if quick else (128, 6400)
    with tempfile.TemporaryDirectory(prefix="mem_agent_bench_memory_") as folder:
        work = Path(folder)
        data = work / f"eval_{documents}.json"
        started = time.monotonic()
        file_bytes = make_eval_file(data, questions, documents)
        build_s = time.monotonic() - started
        with latency_server(work) as port:
            argv = [
                sys.executable,
                "-m",
                "mem_agent.eval_ruler_hqa",
                "--data",
                str(data),
                "--output-dir",
                str(work / "out"),
            ]
            argv += ["--url", f"http://127.0.0.1:{port}", "--protocol", "vllm", "--tokenizer", "bundled:qwen3"]
            argv += ["--questions-in-flight", "128", "--concurrency", "256", "--max-memory", "64", "--max-final", "16"]
            argv += ["--no-plot"]
            started = time.monotonic()
            evaluator = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(evaluator.pid, 0)
            eval_s = time.monotonic() - started
        records = read_results(work / "out" / f"results_{documents}.jsonl")
    tokens = sum(int(r.get("context_tokens", 0)) for r in records)
    requests = sum(int(r.get("num_chunks", 0)) + 1 for r in records)  # a memory turn per chunk, then the answer
    peak = usage.ru_maxrss * 1024
    return {
        "server": "latency-model HTTP stand-in (64 tokens per turn, 5 ms), its own process",
        "questions": questions,
        "documents_per_question": documents,
        "questions_in_flight": 128,
        "exit_status": os.waitstatus_to_exitcode(status),
        "items_completed": sum(r.get("status") == "completed" for r in records),
        "file_gib": round(file_bytes / 2**30, 3),
        "context_tokens_total": tokens,
        "mean_context_tokens": round(tokens / max(len(records), 1)),
        "peak_rss_gib": round(peak / 2**30, 3),
        "python_lists_gib": round(tokens * PYTHON_LIST_BYTES_PER_TOKEN / 2**30, 3),
        "build_file_s": round(build_s, 1),
        "evaluation_s": round(eval_s, 1),
        "requests": requests,
        "requests_per_s": round(requests / eval_s, 1),
        "context_tokens_per_s": round(tokens / eval_s),
        "evaluator_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
