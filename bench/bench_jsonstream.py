"""Benchmark 8: reading a large eval file item by item: throughput and peak memory of each reader.

An eval file is one JSON array (RULER-HQA's eval_6400.json: 128 items of about 3.5 MB, ~450 MB),
read by the evaluator, the data checks and the eval-file builder. Side by side, each in its own
process, in rotating order over `rounds`, on one synthetic file of that size (bench_memory's
items, 4000 documents each):

- `ours`: `mem_agent.common.jsonstream.iter_json_array`, what the package reads eval files with
  (ijson's C backend in 4 MiB blocks, the numbers turned into what `json` gives);
- `ijson`: `ijson.items(handle, "item")` alone, in its own 64 KiB blocks: why ours sets the block;
- `json_load`: `json.load` of the whole file, the reader that needs no library, for its memory.

Each child reads every item and touches its context; the time is measured inside the child, from
opening the file to the last item (the interpreter's start is left out), and so is its peak RSS
(its VmHWM). MB/s is the file's size over that time (medians of the rounds); the ratios are taken
between medians of the same run.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.bench_memory import make_eval_file

READERS = ("ours", "ijson", "json_load")
_CHILD = """
import json, sys, time
reader, path = sys.argv[1], sys.argv[2]
started = time.monotonic()
if reader == "ours":
    from mem_agent.common.jsonstream import iter_json_array
    items = iter_json_array(path)
elif reader == "ijson":
    import ijson
    handle = open(path, "rb")
    items = ijson.items(handle, "item", use_float=True)
else:
    with open(path, encoding="utf-8") as handle:
        items = json.load(handle)
count = characters = 0
for item in items:
    count += 1
    characters += len(item["context"])
seconds = time.monotonic() - started
status = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]  # this process's peak RSS, in KiB
print(json.dumps({"seconds": seconds, "items": count, "characters": characters, "peak_kib": int(status)}))
"""


def read_once(reader: str, path: Path) -> dict:
    """One child reading the whole file: its own time, the items it saw, and its peak RSS.

    The peak is the child's VmHWM, read by itself: wait4's ru_maxrss would carry this process's
    own RSS over the exec (Linux keeps the larger of the two), hiding any peak below it.
    """
    done = subprocess.run([sys.executable, "-c", _CHILD, reader, str(path)], capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{reader} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    result = json.loads(done.stdout)
    result["peak_rss_mib"] = result.pop("peak_kib") / 1024
    return result


def run(quick: bool) -> dict:
    import ijson

    questions, documents, rounds = (8, 400, 1) if quick else (128, 4000, 3)
    runs: dict[str, list[dict]] = {reader: [] for reader in READERS}
    with tempfile.TemporaryDirectory(prefix="mem_agent_bench_jsonstream_") as folder:
        path = Path(folder) / f"eval_{documents}.json"
        size_mb = make_eval_file(path, questions, documents) / 1e6
        for round_index in range(rounds):
            shift = round_index % len(READERS)
            for reader in READERS[shift:] + READERS[:shift]:
                runs[reader].append(read_once(reader, path))
    counts = {run["items"] for results in runs.values() for run in results}
    if counts != {questions}:
        raise RuntimeError(f"the readers saw {sorted(counts)} items, the file holds {questions}")
    seconds = {reader: statistics.median(run["seconds"] for run in results) for reader, results in runs.items()}
    peak = {reader: statistics.median(run["peak_rss_mib"] for run in results) for reader, results in runs.items()}
    return {
        "file_mb": round(size_mb, 1),
        "items": questions,
        "rounds": rounds,
        "ijson_backend": ijson.backend,
        "seconds": {reader: [round(run["seconds"], 3) for run in results] for reader, results in runs.items()},
        "mb_per_s": {reader: round(size_mb / value, 1) for reader, value in seconds.items()},
        "peak_rss_mib": {reader: round(value, 1) for reader, value in peak.items()},
        "ours_time_over_json_load": round(seconds["ours"] / seconds["json_load"], 3),
        "json_load_peak_over_ours": round(peak["json_load"] / peak["ours"], 2),
        "ijson_64k_time_over_ours": round(seconds["ijson"] / seconds["ours"], 2),
    }


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
