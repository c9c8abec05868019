"""What an evaluation shows people: a per-length table, summary.json, and the accuracy curve.

The table and the plot read like the MemAgent paper's: sub_em x 100 per context length, with
EM, F1 and the strict training reward beside it, and the count of failed items (which are scored
as wrong) so that a flaky server can never pass for a weak model or the reverse.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.io_utils import atomic_output, write_text_atomic

SUMMARY_NAME = "summary.json"
PLOT_NAME = "accuracy_vs_length.png"


@dataclass(frozen=True)
class EvalFileReport:
    label: str
    path: Path
    summary: dict[str, Any]


def format_table(reports: Sequence[EvalFileReport]) -> str:
    header = ["docs", "items", "failed", "ctx tokens", "sub_em", "em", "f1", "strict"]
    rows = [
        [
            report.label,
            str(report.summary["items"]),
            str(report.summary["failed"] + report.summary["missing"]),
            f"{report.summary['mean_context_tokens']:,.0f}",
            *(f"{report.summary[metric]:.1f}" for metric in ("sub_em", "em", "f1", "strict")),
        ]
        for report in reports
    ]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [" | ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def write_reports(
    reports: Sequence[EvalFileReport], output_dir: Path, run_facts: dict[str, Any], *, plot: bool = True
) -> None:
    print(format_table(reports), flush=True)
    document = {
        "results": [{"label": r.label, "file": str(r.path), **r.summary} for r in reports],
        "run": run_facts,
    }
    write_text_atomic(output_dir / SUMMARY_NAME, json.dumps(document, indent=2) + "\n")
    if plot:
        plot_accuracy(reports, output_dir / PLOT_NAME)
    print(f"summary: {output_dir / SUMMARY_NAME}" + (f"  plot: {output_dir / PLOT_NAME}" if plot else ""))


def plot_accuracy(reports: Sequence[EvalFileReport], path: Path) -> None:
    """sub_em against mean context tokens on a log axis, each point labelled with its doc count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = sorted((r.summary["mean_context_tokens"], r.summary["sub_em"], r.label) for r in reports)
    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    xs = [max(x, 1.0) for x, _, _ in points]
    axes.plot(xs, [y for _, y, _ in points], marker="o", color="#1f6feb")
    for x, (_, y, label) in zip(xs, points, strict=True):
        axes.annotate(f"{label} docs", (x, y), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    axes.set_xscale("log")
    axes.set_xticks(xs, [_tokens_label(x) for x in xs])
    axes.minorticks_off()
    axes.set_ylim(0, 100)
    axes.set_xlabel("context length (tokens, log scale)")
    axes.set_ylabel("sub_em x 100")
    axes.set_title("Accuracy vs context length (RULER-HQA protocol)")
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    with atomic_output(path, mode="wb") as handle:
        figure.savefig(handle, format="png")
    plt.close(figure)


def _tokens_label(tokens: float) -> str:
    if tokens >= 1e6:
        return f"{tokens / 1e6:.1f}M"
    return f"{tokens / 1e3:.0f}K" if tokens >= 1e3 else f"{tokens:.0f}"
