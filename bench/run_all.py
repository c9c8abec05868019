"""Run every benchmark, print one table of figures against their targets, and write JSON.

    python -m bench.run_all --quick     # small sizes: checks that every benchmark still runs (CI)
    python -m bench.run_all             # full sizes: the figures quoted in docs/benchmarks.md (~15 min, 2 cores)

Each figure is a ratio measured side by side in one run. The benchmarks that need the real server
share one local vLLM CPU stack, started once and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import (
    bench_chunking,
    bench_consistency,
    bench_jsonstream,
    bench_linear,
    bench_memory,
    bench_over_1m,
    bench_overhead,
    bench_scheduling,
    bench_startup,
)
from mem_agent.common.guarded_files import write_text_atomic
from mem_agent.serving.cpu_stack import StackSettings, local_stack

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_OUT = RESULTS_DIR / "latest.json"
NAMES = (
    "chunking", "scheduling", "memory", "overhead", "linear", "startup", "consistency", "jsonstream", "over_1m"
)  # fmt: skip
SHORT_DTYPE = {"bfloat16": "bf16", "float32": "fp32"}


@dataclass(frozen=True)
class Check:
    benchmark: str
    figure: str
    value: float
    target: str
    met: bool


def checks(results: dict) -> list[Check]:
    found: list[Check] = []
    if "overhead" in results:
        ratio = results["overhead"]["ratio"]
        found.append(Check("1 client overhead", "workflow / direct, median per round", ratio, "<= 1.03", ratio <= 1.03))
    if "scheduling" in results:
        for case in results["scheduling"]["cases"]:
            slots = case["slots"]
            over = case["priority_over_bound"]
            found.append(Check("2 scheduling", f"pipelined / lower bound, C={slots}", over, "<= 1.05", over <= 1.05))
            if slots >= 128:
                speedup = case["speedup_vs_lockstep"]
                found.append(
                    Check("2 scheduling", f"lock-step / pipelined, C={slots}", speedup, ">= 1.4", speedup >= 1.4)
                )
    if "chunking" in results:
        chunking = results["chunking"]
        found.append(
            Check("3 chunking", "tokenise+chunk / raw encode", chunking["ratio"], "<= 1.15", chunking["ratio"] <= 1.15)
        )
        found.append(Check("3 chunking", "R^2 of time vs tokens", chunking["r2"], ">= 0.98", chunking["r2"] >= 0.98))
    if "memory" in results:
        peak = results["memory"]["peak_rss_gib"]
        found.append(Check("4 memory", "evaluator peak RSS (GiB)", peak, "<= 2.0", peak <= 2.0))
    if "over_1m" in results:
        peak = results["over_1m"]["memory"]["index_layout"]["peak_rss_gib"]
        found.append(Check("9 over 1M", "peak RSS, 128 x 25600 docs (GiB)", peak, "<= 2.0", peak <= 2.0))
        r2 = results["over_1m"]["time_per_token"]["r2"]
        found.append(Check("9 over 1M", "R^2 of time vs tokens, 7K to 3.5M", r2, ">= 0.98", r2 >= 0.98))
    if "linear" in results:
        r2 = results["linear"]["r2"]
        found.append(Check("5 linear cost", "R^2 of time vs chunks", r2, ">= 0.98", r2 >= 0.98))
    if "startup" in results:
        startup = results["startup"]
        for client in ("evaluator", "run_document"):
            seconds = startup["median_s"][client]
            target = startup["target_s"]
            found.append(
                Check("6 start-up", f"{client}: first request (s)", seconds, f"<= {target}", seconds <= target)
            )
        seconds, target = startup["median_s"]["hook_in_host"], startup["host_target_s"]
        found.append(Check("6 start-up", "hook in a host: agent ready (s)", seconds, f"<= {target}", seconds <= target))
    for dtype, server in results.get("consistency", {}).get("servers", {}).items():
        label = SHORT_DTYPE.get(dtype, dtype)
        ratio, mean, share = server["max_over_tolerance"], server["mean_over_ulp"], server["caught_share"]
        found.append(Check("7 row consistency", f"max |diff| / tolerance, {label}", ratio, "<= 1", ratio <= 1))
        found.append(Check("7 row consistency", f"mean |diff| / ulp, {label}", mean, "<= 1", mean <= 1))
        found.append(Check("7 row consistency", f"corrupted steps caught, {label}", share, "= 1", share == 1))
    if "jsonstream" in results:
        stream = results["jsonstream"]
        ratio, peak = stream["ours_time_over_json_load"], stream["json_load_peak_over_ours"]
        found.append(Check("8 eval file read", "streamed / json.load, time", ratio, "<= 1.2", ratio <= 1.2))
        found.append(Check("8 eval file read", "json.load / streamed, peak RSS", peak, ">= 5", peak >= 5))
    return found


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_gib, 1),
        "python": platform.python_version(),
    }


def _timed(name: str, run: Callable[[], dict]) -> dict:
    started = time.monotonic()
    result = run()
    result["bench_seconds"] = round(time.monotonic() - started, 1)
    print(f"{name}: done in {result['bench_seconds']} s", flush=True)
    return result


def run_benchmarks(quick: bool, only: set[str] | None) -> dict:
    def wanted(name: str) -> bool:
        return only is None or name in only

    results: dict = {}
    for name, module in (
        ("chunking", bench_chunking),
        ("scheduling", bench_scheduling),
        ("memory", bench_memory),
        ("startup", bench_startup),
        ("jsonstream", bench_jsonstream),
        ("over_1m", bench_over_1m),
    ):
        if wanted(name):
            results[name] = _timed(name, lambda module=module: module.run(quick=quick))
    if wanted("overhead") or wanted("linear") or wanted("consistency"):
        with local_stack(StackSettings(run_dir=RESULTS_DIR / "servers")) as stack:
            for name, module in (("overhead", bench_overhead), ("linear", bench_linear)):
                if wanted(name):
                    results[name] = _timed(name, lambda module=module: module.run(stack.router_url, quick=quick))
            if wanted("consistency"):  # the shared stack is its bfloat16 server; it starts a float32 one
                results["consistency"] = _timed("consistency", lambda: bench_consistency.run(stack, quick=quick))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, targets reported but not required")
    parser.add_argument(
        "--only", nargs="+", choices=NAMES, default=None, metavar="NAME", help=f"run only these: {', '.join(NAMES)}"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"JSON results (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    started = time.monotonic()
    results = run_benchmarks(args.quick, set(args.only) if args.only is not None else None)
    found = checks(results)
    if args.quick:
        print("\nquick mode: small sizes, so the figures are rough; the targets apply to the full run")
    print(f"\n{'benchmark':<17} | {'figure':<34} | {'value':>8} | {'target':>8} | met")
    for check in found:
        met = "yes" if check.met else "NO"
        print(f"{check.benchmark:<17} | {check.figure:<34} | {check.value:>8.4g} | {check.target:>8} | {met}")
    for name, result in results.items():
        if "server" in result:
            print(f"{name}: server = {result['server']}")
    if "consistency" in results:
        bench_consistency.print_report(results["consistency"])
    document = {
        "mode": "quick" if args.quick else "full",
        "machine": machine(),
        "seconds": round(time.monotonic() - started, 1),
        "results": results,
        "checks": [check.__dict__ for check in found],
    }
    write_text_atomic(args.out, json.dumps(document, indent=2) + "\n")
    print(f"\nwrote {args.out} ({document['seconds']} s)")
    if args.quick:
        return 0
    return 0 if all(check.met for check in found) else 1


if __name__ == "__main__":
    sys.exit(main())
