"""Benchmark 7: every training row is what the model saw (real server, both agent modes).

For each server dtype, one host rollout step per agent mode (MEM_MODE=memagent and rememr1)
runs through our hooks (generate, reward, reward_post_process, then the convert) against vLLM's
CPU build behind vllm-router, and every row of the train-data dict is checked by
bench/row_consistency.py: transformers, loading the same weights in the dtype the server logged,
recomputes each response token's logprob given the row's tokens, and compares it with the row's
`rollout_log_probs` (memory turns and final turns apart), beside the structural checks; the
step's mean |diff| must stay within one ulp.

Two servers, the same tiny Qwen3 weights:
- bfloat16, the dtype of the model's config and what vLLM's CPU build serves it in (the stack the
  tests and the other benchmarks use); the transformers reference in float32 is reported too: it
  shows how far the bf16 server is from the exact model (half a bf16 ulp of the logits);
- float32 (`--dtype float32`): a tolerance 8192 times tighter (16 x 2^-23 against 2 x 2^-7), fine enough to see the tiny
  model's faint dependence on its prompt, so a re-tokenised prompt is caught as well.

Then each corruption of bench/row_corruptions.py is applied to every row of the step, and we
print whether the check fails the step and how many of the changed rows it reports on their own.
Rollouts sample (temperature 1.0, top_p 1.0, unseeded: the CPU build crashes on seeded
requests), so every run checks fresh rows.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.row_consistency import ReferenceModel, check_rows, figures, served_dtype, step_check
from bench.row_corruptions import CORRUPTIONS, detection
from bench.row_rollout import TrainRow, rollout_rows
from mem_agent.data import synthetic
from mem_agent.serving.cpu_stack import LocalStack, StackSettings, local_stack

MODES = ("memagent", "rememr1")
FLOAT32_SERVER = ("--dtype", "float32")
RESULTS_DIR = Path(__file__).resolve().parent / "results"
# What each server dtype can resolve: in bfloat16 a re-tokenised prompt moves the tiny model's
# response logprobs by 1e-5 to 1e-3, far below one ulp of its logits (0.0625), so only float32
# is expected to catch it; every other corruption is caught in both (see row_corruptions.py).
EXPECTED = {
    "bfloat16": tuple(name for name in CORRUPTIONS if name != "retokenised_prompt"),
    "float32": tuple(CORRUPTIONS),
}


def _finite(value: float) -> float | None:
    return round(value, 3) if math.isfinite(value) else None  # JSON has no infinity


def server_log(stack: LocalStack) -> Path:
    return next(process.log_path for process in stack.processes if process.name == "vllm-cpu")


def stack_rows(stack: LocalStack, qa_rows: Sequence[dict], n_samples: int) -> list[TrainRow]:
    """The train rows of one rollout step per mode, through the stack's router (vime's protocol)."""
    rows: list[TrainRow] = []
    for mode in MODES:
        rows += rollout_rows(stack.url, stack.model_path, qa_rows, mode=mode, n_samples=n_samples)
    return rows


def measure(stack: LocalStack, qa_rows: Sequence[dict], n_samples: int) -> dict[str, Any]:
    """Rows from the stack, checked against a reference in the server's own dtype; corruptions counted."""
    dtype = served_dtype(server_log(stack))
    started = time.monotonic()
    rows = stack_rows(stack, qa_rows, n_samples)
    rollout_s = time.monotonic() - started
    model = ReferenceModel(stack.model_path, dtype)
    checks = check_rows(model, rows)
    step, table = step_check(checks), figures(checks)
    result: dict[str, Any] = {
        "server_dtype": dtype,
        "rows": len(rows),
        "tokens_compared": step.tokens,
        "failed_rows": step.failed_rows,
        "problems": sorted({problem for check in checks for problem in check.problems})[:10],
        "figures": table,
        "mean_abs_diff": step.mean_abs_diff,
        "mean_over_ulp": step.mean_over_ulp,
        "max_over_tolerance": max(entry["max_over_tolerance"] for entry in table.values()),
        "rollout_s": round(rollout_s, 1),
    }
    if dtype != "float32":  # the exact model beside the served one: differences only, no verdict
        exact = ReferenceModel(stack.model_path, "float32")
        result["float32_reference"] = _plain(figures(check_rows(exact, rows)))
    found = {name: detection(model, rows, name) for name in CORRUPTIONS}
    result["corruptions"] = {
        name: {
            "changed": d.changed,
            "reported": d.reported,
            "step_caught": d.step_caught,
            "step_mean_over_ulp": round(d.step.mean_over_ulp, 3),
            "weakest_ratio": _finite(d.weakest_ratio),
        }
        for name, d in found.items()
    }
    expected = EXPECTED.get(dtype, tuple(CORRUPTIONS))
    result["caught_share"] = sum(found[name].step_caught for name in expected) / len(expected)
    return result


def _plain(figures_table: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Differences only: a reference in another dtype than the server's gives figures, not a verdict."""
    return {
        key: {k: v for k, v in entry.items() if k in ("rows", "tokens", "max_abs_diff", "mean_abs_diff")}
        for key, entry in figures_table.items()
    }


def run(
    stack: LocalStack | None,
    quick: bool,
    *,
    float32_stack: LocalStack | None = None,
    run_dir: Path = RESULTS_DIR / "servers",
) -> dict[str, Any]:
    """Both server dtypes: `stack` (the default bfloat16 one) and a float32 one; either is started
    here when not given (run_all shares its stack; the tests pass their own)."""
    questions, n_samples = (2, 2) if quick else (6, 4)
    qa_rows = synthetic.generate(questions, seed=0)
    servers: dict[str, Any] = {}
    with contextlib.ExitStack() as started:
        if stack is None:
            stack = started.enter_context(local_stack(StackSettings(run_dir=run_dir / "consistency_bf16")))
        servers["bfloat16"] = measure(stack, qa_rows, n_samples)
        if float32_stack is None:
            settings = StackSettings(run_dir=run_dir / "consistency_fp32", extra_vllm_args=FLOAT32_SERVER)
            float32_stack = started.enter_context(local_stack(settings))
        servers["float32"] = measure(float32_stack, qa_rows, n_samples)
    return {
        "server": "vLLM CPU build (tiny Qwen3) behind vllm-router, vime's /inference/v1/generate",
        "questions": questions,
        "samples_per_question": n_samples,
        "servers": servers,
    }


def print_report(result: dict[str, Any]) -> None:
    """The figures per server dtype, mode and row kind, then the corruption counts."""
    for label, server in result["servers"].items():
        print(
            f"\n{label} server (served dtype {server['server_dtype']}): {server['rows']} rows, "
            f"{server['tokens_compared']} tokens compared, {server['failed_rows']} rows failed, "
            f"mean |diff| {server['mean_abs_diff']:.3g} = {server['mean_over_ulp']:.3g} ulp"
        )
        tables = [("reference " + server["server_dtype"], server["figures"])]
        if "float32_reference" in server:
            tables.append(("reference float32 (exact model)", server["float32_reference"]))
        for reference, table in tables:
            print(f"  {reference:<32} | {'rows':>5} | {'tokens':>6} | {'max |diff|':>10} | {'mean |diff|':>11}")
            for key, entry in table.items():
                print(
                    f"  {key:<32} | {entry['rows']:>5} | {entry['tokens']:>6} | "
                    f"{entry['max_abs_diff']:>10.3g} | {entry['mean_abs_diff']:>11.3g}"
                )
        for name, counts in server["corruptions"].items():
            step = "caught" if counts["step_caught"] else "passed"
            print(
                f"  corruption {name:<26} rows reported {counts['reported']:>4}/{counts['changed']:<4} "
                f"step {step} (mean |diff| {counts['step_mean_over_ulp']:.3g} ulp)"
            )


if __name__ == "__main__":
    outcome = run(None, quick="--quick" in sys.argv)
    print_report(outcome)
    print(json.dumps(outcome, indent=2))
