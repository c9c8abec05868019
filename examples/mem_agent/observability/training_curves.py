"""A training run's reward and accuracy per rollout, as a CSV table and a PNG plot.

Read from `SAVE/trajectories/metrics.jsonl`, which the rollout log hook appends once per rollout
(and once per eval set per evaluation): every trajectory of every rollout is counted there, as
the hook counts it for the logger. The trajectory records are not used for this: they are a
sample drawn to hold correct and wrong trajectories alike, so their accuracy says nothing about
the run's. A rollout logged twice (a run resumed from a checkpoint redoes the rollouts after it)
keeps its last line. Each line is checked (MetricsLine: the rollout id a non-negative integer,
every figure a finite number); a line cut by a crash is skipped and named.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pydantic

from mem_agent.common.guarded_files import check_outputs, write_figure_png, write_text_atomic
from mem_agent.common.jsonl_lines import read_json_lines, validated
from mem_agent.common.usage import UsageError
from mem_agent.observability.host_logging import METRICS_FILE
from mem_agent.observability.train_records import TRAJECTORY_DIR

TRAIN_COLUMNS = (
    "rollout_id",
    "step",
    "trajectories",
    "reward/mean",
    "reward/std",
    "accuracy/strict",
    "accuracy/sub_em",
    "accuracy/em",
    "accuracy/f1",
    "turns/mean",
    "memory_tokens/mean",
    "memory/cut_share",
    "answer/box_share",
    "answer/cut_share",
    "zero_contrast/group_share",
    "zero_contrast/trajectory_share",
    "status/failed",
    "status/aborted",
)
EVAL_COLUMNS = ("rollout_id", "step", "eval_set", "trajectories", "accuracy/strict", "accuracy/sub_em", "accuracy/em")


class MetricsLine(pydantic.BaseModel):
    """One line of metrics.jsonl as the log hook writes it; figures are the extra fields."""

    model_config = pydantic.ConfigDict(extra="allow", allow_inf_nan=False)

    kind: str
    rollout_id: Annotated[int, pydantic.Field(ge=0)]
    step: int | None = None
    eval_set: str | None = None

    @pydantic.model_validator(mode="after")
    def _figures_are_finite(self) -> MetricsLine:
        for name, value in (self.model_extra or {}).items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name} is not a finite number")
            if not isinstance(value, int | float | str | bool | None):
                raise ValueError(f"{name} is a {type(value).__name__}, not a number")
        if self.kind == "eval" and self.eval_set is None:
            raise ValueError("an eval line names its eval_set")
        return self


@dataclass
class RunMetrics:
    source: Path
    rollouts: list[dict[str, Any]]  # one per rollout id, in rollout order
    evals: list[dict[str, Any]]  # one per (rollout id, eval set)


def find_metrics(run_dir: Path) -> Path:
    """`RUN/trajectories/metrics.jsonl` for a training run folder (--save), or `RUN/metrics.jsonl`."""
    for candidate in (run_dir / TRAJECTORY_DIR / METRICS_FILE, run_dir / METRICS_FILE):
        if candidate.is_file():
            return candidate
    raise UsageError(
        f"{run_dir}: no {TRAJECTORY_DIR}/{METRICS_FILE} (the rollout log hook writes it when the trainer"
        " has --save and --custom-rollout-log-function-path mem_agent.rollout_log.log_rollout)"
    )


def read_run(run_dir: Path) -> RunMetrics:
    path = find_metrics(Path(run_dir))
    rollouts: dict[int, dict[str, Any]] = {}
    evals: dict[tuple[int, str], dict[str, Any]] = {}
    try:
        lines = read_json_lines(path)
    except OSError as error:
        raise UsageError(f"{path}: cannot be read: {error.strerror}") from None
    for note in lines.notes():
        print(f"note: {note}")
    for number, value in lines.rows:
        entry = validated(MetricsLine, value, f"{path}:{number}").model_dump()
        if entry["kind"] == "rollout":
            rollouts[entry["rollout_id"]] = entry
        elif entry["kind"] == "eval":
            evals[(entry["rollout_id"], entry["eval_set"])] = entry
    if not rollouts:
        raise UsageError(f"{path}: no rollout metrics yet")
    return RunMetrics(path, [rollouts[k] for k in sorted(rollouts)], [evals[k] for k in sorted(evals)])


def table_csv(entries: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for entry in entries:
        writer.writerow([_cell(entry.get(column)) for column in columns])
    return buffer.getvalue()


# A spreadsheet reads a cell that starts with one of these as a formula (=HYPERLINK(...), a DDE call);
# a text cell that does is written after an apostrophe, which shows it as the text it is (OWASP's rule).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # a number, negative ones too, stays a number
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def write_summary(run: RunMetrics, output_dir: Path, *, plot: bool = True) -> list[Path]:
    """train_summary.csv (and eval_summary.csv, and train_summary.png); returns what was written.
    Every output is checked before the first is written: a refused one leaves the others as they were."""
    written = [output_dir / "train_summary.csv"]
    if run.evals:
        written.append(output_dir / "eval_summary.csv")
    if plot:
        written.append(output_dir / "train_summary.png")
    check_outputs(written)
    write_text_atomic(written[0], table_csv(run.rollouts, TRAIN_COLUMNS))
    if run.evals:
        write_text_atomic(written[1], table_csv(run.evals, EVAL_COLUMNS))
    if plot:
        draw(run, written[-1])
    return written


@dataclass(frozen=True)
class CurvesRequest:
    """The trainer's --save folder (or its trajectories/ folder) and where the tables go."""

    run_dir: Path
    output_dir: Path | None  # default: the folder holding metrics.jsonl
    plot: bool


def summarize_training_run(request: CurvesRequest) -> None:
    """Write the tables (and the plot) and print the last rollout's reward and accuracy.
    UsageError: no metrics file, or one without a rollout yet."""
    run = read_run(request.run_dir)
    written = write_summary(run, request.output_dir or run.source.parent, plot=request.plot)
    last = run.rollouts[-1]
    print(
        f"{len(run.rollouts)} rollouts (last: {last['rollout_id']}, reward {last.get('reward/mean', 0.0):.3f},"
        f" strict {100 * last.get('accuracy/strict', 0.0):.1f}%, sub_em {100 * last.get('accuracy/sub_em', 0.0):.1f}%)"
    )
    for path in written:
        print(f"wrote {path}")


def draw(run: RunMetrics, path: Path) -> None:
    write_figure_png(summary_figure(run), path)


def summary_figure(run: RunMetrics) -> Any:
    """Reward (mean, with a +-1 std band) and accuracy per rollout; eval sets as marked lines. Every
    line has markers, so a run of one rollout still shows its points; the band stays inside the
    reward's range ([0, 1] when every mean lies there, as the strict answer reward does), where a
    +-1 std band of 0/1 rewards would otherwise reach -0.2 and 1.2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    ids = [entry["rollout_id"] for entry in run.rollouts]
    figure, (reward_axes, accuracy_axes) = plt.subplots(2, 1, figsize=(7.0, 6.0), dpi=120, sharex=True)
    mean = [float(entry.get("reward/mean", 0.0)) for entry in run.rollouts]
    std = [float(entry.get("reward/std", 0.0)) for entry in run.rollouts]
    low, high = (0.0, 1.0) if all(0.0 <= m <= 1.0 for m in mean) else (-math.inf, math.inf)
    reward_axes.plot(ids, mean, color="tab:blue", marker="o", markersize=4, label="reward mean (per trajectory)")
    lows = [max(low, m - s) for m, s in zip(mean, std, strict=True)]
    highs = [min(high, m + s) for m, s in zip(mean, std, strict=True)]
    band = "± 1 std" + (" (within 0..1)" if high == 1.0 else "")
    if len(ids) == 1:  # a band of one point has no width: a bar shows it
        reward_axes.vlines(ids, lows, highs, color="tab:blue", alpha=0.3, linewidth=6, label=band)
    else:
        reward_axes.fill_between(ids, lows, highs, color="tab:blue", alpha=0.15, label=band)
    reward_axes.set_ylabel("reward")
    reward_axes.legend(loc="best", fontsize="small")
    reward_axes.grid(alpha=0.3)
    for name, color in (("strict", "tab:red"), ("sub_em", "tab:green")):
        values = [100.0 * float(entry.get(f"accuracy/{name}", 0.0)) for entry in run.rollouts]
        accuracy_axes.plot(ids, values, color=color, marker="o", markersize=4, label=f"train {name}")
    for eval_set in sorted({entry["eval_set"] for entry in run.evals}):
        points = [entry for entry in run.evals if entry["eval_set"] == eval_set]
        accuracy_axes.plot(
            [entry["rollout_id"] for entry in points],
            [100.0 * float(entry.get("accuracy/sub_em", 0.0)) for entry in points],
            marker="o",
            linestyle="--",
            label=f"eval {eval_set} sub_em",
        )
    accuracy_axes.set_xlabel("rollout")
    accuracy_axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    if len(ids) == 1:  # matplotlib's default margin around one x is +-0.05: whole rollouts around it instead
        accuracy_axes.set_xlim(ids[0] - 1, ids[0] + 1)
    accuracy_axes.set_ylabel("accuracy (%)")
    accuracy_axes.set_ylim(-3, 103)
    accuracy_axes.legend(loc="best", fontsize="small")
    accuracy_axes.grid(alpha=0.3)
    figure.suptitle(f"training summary: {run.source.parent.parent.name or run.source.parent.name}")
    figure.tight_layout()
    return figure
