"""Benchmark 3: tokenise-and-chunk of a long context versus one raw fast-tokenizer encode.

Our path (`mem_agent.tokenization.tokenizer.encode` to an int32 array, then `plan_chunks` and a pass over every
chunk view) against the bare `tokenizers` encode of the same text, best of three each, side by
side. Then our path's time from 7K to 900K tokens, with the fitted slope (seconds per million
tokens) and R^2 of a straight line, to show the cost is linear in length.
"""

from __future__ import annotations

import random
import time

import numpy as np

from mem_agent.agent.chunking import plan_chunks
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, encode, load_tokenizer

CHUNK_TOKENS = 5000
WORDS = (
    "the river company was founded in town by an engineer who later directed a film about the season of "
    "the league and published a novel on the mountain bridge festival record school station county"
).split()


def long_text(tokenizer, target_tokens: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    words = [rng.choice(WORDS) + ("." if rng.random() < 0.08 else "") for _ in range(target_tokens)]
    text = " ".join(words)
    tokens = len(encode(tokenizer, text))
    return text[: int(len(text) * target_tokens / tokens)]


def best_of(function, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def ours(tokenizer, text: str) -> int:
    plan = plan_chunks(encode(tokenizer, text), CHUNK_TOKENS)
    return sum(int(plan.chunk(i)[-1]) for i in range(plan.num_chunks))  # touch every chunk


def raw(tokenizer, text: str) -> int:
    return len(tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids)


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    slope, intercept = np.polyfit(xs, ys, 1)
    predicted = np.polyval([slope, intercept], xs)
    residual = float(np.sum((np.asarray(ys) - predicted) ** 2))
    total = float(np.sum((np.asarray(ys) - np.mean(ys)) ** 2))
    return float(slope), float(intercept), 1.0 - residual / total if total else 1.0


def run(quick: bool) -> dict:
    tokenizer = load_tokenizer(BUNDLED_QWEN3)
    sizes = [7_000, 28_000, 112_000] if quick else [7_000, 28_000, 112_000, 450_000, 900_000]
    full = long_text(tokenizer, sizes[-1])
    texts = {size: full[: int(len(full) * size / sizes[-1])] for size in sizes}
    largest = texts[sizes[-1]]
    raw_s = best_of(lambda: raw(tokenizer, largest))
    ours_s = best_of(lambda: ours(tokenizer, largest))
    series = [
        (len(encode(tokenizer, texts[size])), best_of(lambda size=size: ours(tokenizer, texts[size]))) for size in sizes
    ]
    slope, _, r2 = linear_fit([tokens for tokens, _ in series], [seconds for _, seconds in series])
    return {
        "context_tokens": series[-1][0],
        "raw_encode_s": round(raw_s, 3),
        "tokenize_and_chunk_s": round(ours_s, 3),
        "ratio": round(ours_s / raw_s, 3),
        "series": [{"tokens": tokens, "seconds": round(seconds, 4)} for tokens, seconds in series],
        "seconds_per_million_tokens": round(slope * 1e6, 3),
        "r2": round(r2, 4),
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
