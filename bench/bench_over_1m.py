"""Benchmark 9: RULER-HQA beyond a million tokens, in MemAgent's index layout.

Two figures, each beside its reference measured in the same run:

- memory: the evaluator's peak RSS (its own, from `wait4`) over 128 questions of 25600 documents
  (~3.5M tokens each: the corpus's documents average ~137 tokens, as HotpotQA's dev documents do
  at MemAgent's 3.5M), 128 in flight, against the latency stand-in in its own process; beside it
  the same evaluator over a text-layout file of 6400 documents (benchmark 4's file).
- time per token: the client's work for one question (the text rebuilt from the corpus, tokenised,
  spilled, every chunk read back) at 50 to 25600 documents, ~7K to ~3.5M tokens, fitted with a line
  against tokens (R^2, microseconds per token).

The corpus is synthetic, in HotpotQA's layout (rows of ten paragraphs, distinct titles), made here;
the index file is built by our own builder (data/index_files.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bench_chunking import linear_fit
from bench.bench_memory import WORDS, latency_server, make_eval_file
from mem_agent.common.token_file import spill
from mem_agent.data.hotpot_corpus import read_corpus
from mem_agent.data.index_files import write_index_files
from mem_agent.evaluation.results import read_results
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, encode, load_tokenizer

CHUNK_TOKENS = 5000
LINEAR_DOCS = (50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600)


def make_corpus(path: Path, rows: int, seed: int = 0) -> None:
    """HotpotQA-layout rows of ten paragraphs of ~115 words (~137 tokens), every title distinct."""
    rng = random.Random(seed)

    def paragraph(index: int) -> list:
        words = [rng.choice(WORDS) + ("." if rng.random() < 0.1 else "") for _ in range(115)]
        return [f"Entity {index}", [" ".join(words)]]

    data = [
        {"question": f"Which entity founded town {r}?", "answer": f"Entity {r * 10}",
         "context": [paragraph(r * 10 + k) for k in range(10)]}
        for r in range(rows)
    ]  # fmt: skip
    path.write_text(json.dumps(data))


def _evaluate(work: Path, data: Path, port: int, extra: list[str]) -> dict:
    out = work / f"out_{data.parent.name}_{data.stem}"
    argv = [sys.executable, "-m", "mem_agent.eval_ruler_hqa", "--data", str(data), "--output-dir", str(out), *extra]
    argv += ["--url", f"http://127.0.0.1:{port}", "--protocol", "vllm", "--tokenizer", BUNDLED_QWEN3]
    argv += ["--questions-in-flight", "128", "--concurrency", "256", "--max-memory", "64", "--max-final", "16"]
    started = time.monotonic()
    evaluator = subprocess.Popen([*argv, "--no-plot"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(evaluator.pid, 0)
    seconds = time.monotonic() - started
    records = read_results(out / f"results_{data.stem.removeprefix('eval_')}.jsonl")
    tokens = sum(int(r.get("context_tokens", 0)) for r in records)
    return {
        "exit_status": os.waitstatus_to_exitcode(status),
        "items_completed": sum(r.get("status") == "completed" for r in records),
        "mean_context_tokens": round(tokens / max(len(records), 1)),
        "peak_rss_gib": round(usage.ru_maxrss * 1024 / 2**30, 3),
        "evaluation_s": round(seconds, 1),
        "context_tokens_per_s": round(tokens / seconds),
        "evaluator_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
    }


def memory(work: Path, quick: bool, questions: int | None = None) -> dict:
    """The peak RSS of both layouts; `questions` (all in flight) defaults to 128, 8 in quick mode."""
    default, documents, text_documents = (8, 400, 100) if quick else (128, 25600, 6400)
    questions = questions or default
    corpus = work / "hotpotqa_dev.json"
    index_file, text_file = work / f"eval_{documents}.json", work / "text" / f"eval_{text_documents}.json"
    with contextlib.redirect_stdout(io.StringIO()):  # the builder's own table
        write_index_files(corpus, [documents], [index_file], questions, seed=42)
    text_file.parent.mkdir()
    make_eval_file(text_file, questions, text_documents)
    with latency_server(work) as port:
        index = _evaluate(work, index_file, port, ["--corpus", str(corpus)])
        text = _evaluate(work, text_file, port, [])
    return {
        "server": "latency-model HTTP stand-in (64 tokens per turn, 5 ms), its own process",
        "questions": questions,
        "index_layout": {"documents": documents, **index},
        "text_layout": {"documents": text_documents, **text},
        "rss_ratio": round(index["peak_rss_gib"] / max(text["peak_rss_gib"], 1e-9), 2),
        "token_ratio": round(index["mean_context_tokens"] / max(text["mean_context_tokens"], 1), 2),
    }


def time_per_token(work: Path, quick: bool) -> dict:
    """One question's client-side work per length (twice each in quick mode) in a shuffled order."""
    corpus = read_corpus(work / "hotpotqa_dev.json")
    tokenizer = load_tokenizer(BUNDLED_QWEN3)
    sizes = LINEAR_DOCS[:5] if quick else LINEAR_DOCS
    order = list(sizes) * (2 if quick else 1)
    random.Random(3).shuffle(order)
    rng = np.random.default_rng(0)
    points = []
    for documents in order:
        positions = rng.choice(len(corpus), size=documents, replace=False).tolist()
        started = time.perf_counter()
        ids = encode(tokenizer, corpus.render(positions))
        stored = spill(ids, work)
        for start in range(0, len(stored), CHUNK_TOKENS):
            stored[start : start + CHUNK_TOKENS]
        stored.close()
        points.append((documents, int(ids.shape[0]), time.perf_counter() - started))
    slope, intercept, r2 = linear_fit([float(t) for _, t, _ in points], [s for _, _, s in points])
    return {
        "points": [{"documents": d, "tokens": t, "seconds": round(s, 3)} for d, t, s in sorted(points)],
        "microseconds_per_token": round(slope * 1e6, 3),
        "intercept_s": round(intercept, 4),
        "r2": round(r2, 5),
        "largest_tokens": max(t for _, t, _ in points),
    }


def run(quick: bool, questions: int | None = None, *, memory_only: bool = False) -> dict:
    with tempfile.TemporaryDirectory(prefix="mem_agent_bench_over_1m_") as folder:
        work = Path(folder)
        started = time.monotonic()
        make_corpus(work / "hotpotqa_dev.json", rows=800 if quick else 6664)
        result: dict = {"corpus_build_s": round(time.monotonic() - started, 1)}
        if not memory_only:
            result["time_per_token"] = time_per_token(work, quick)
            print(json.dumps(result["time_per_token"]), file=sys.stderr, flush=True)
        result["memory"] = memory(work, quick, questions)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_over_1m", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 documents, 8 questions, five lengths")
    parser.add_argument("--questions", type=int, default=None, help="questions, all in flight (default: 128)")
    parser.add_argument("--memory-only", action="store_true", help="skip the time-per-token fit")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.quick, args.questions, memory_only=args.memory_only), indent=2))


if __name__ == "__main__":
    main()
