"""One HTML page per run: what the agent wrote into memory, chunk by chunk, and how it ended.

The page is one self-contained file (inline style, script and SVG; no network, no server), so it
can be mailed, attached to an issue or opened from a cluster's shared disk. A run can hold far
more than a person reads and a browser holds: the page keeps at most `max_items` questions and
`max_turns` memory turns per question, and says on the page what it left out and which flag
shows more. Training curves are drawn from every record, not only the questions shown.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean

from mem_agent.common.atomic_files import write_text_atomic
from mem_agent.observability.page_parts import SCRIPT, STYLE, esc, item_html
from mem_agent.observability.run_folders import RunView
from mem_agent.observability.svg_charts import line_chart
from mem_agent.observability.trajectory_records import TrajectoryRecord


@dataclass(frozen=True)
class ViewLimits:
    max_items: int = 100  # questions on the page
    max_turns: int = 24  # memory turns per question (first and last halves)


def rollout_curves(records: Iterable[TrajectoryRecord]) -> dict[str, tuple[list[float], list[float]]]:
    """Per rollout, over the records kept from it: mean reward, strict accuracy, turns per
    trajectory, memory tokens per memory turn, and the share of memory turns cut by max_tokens."""
    by_rollout: dict[int, list[TrajectoryRecord]] = {}
    for record in records:
        if record.rollout_id is not None:
            by_rollout.setdefault(record.rollout_id, []).append(record)
    names = (
        "reward (mean)",
        "accuracy (strict)",
        "turns per trajectory",
        "memory tokens (mean)",
        "memory turns cut (share)",
    )
    curves: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in names}
    for rollout, group in sorted(by_rollout.items()):
        memories = [turn for record in group for turn in record.turns if turn.kind == "memory"]
        rewards = [r.reward if r.reward is not None else r.scores.get("strict", 0.0) for r in group]
        values = (
            fmean(rewards),
            fmean(r.scores.get("strict", 0.0) for r in group),
            fmean(len(r.turns) for r in group),
            fmean(t.memory_tokens for t in memories) if memories else 0.0,
            fmean(t.cut for t in memories) if memories else 0.0,
        )
        for name, value in zip(names, values, strict=True):
            curves[name][0].append(float(rollout))
            curves[name][1].append(float(value))
    return curves


_SHARES = {"accuracy (strict)", "memory turns cut (share)"}


def select(run: RunView, limit: int) -> list[tuple[str, TrajectoryRecord]]:
    """At most `limit` questions with their group: a training run's latest rollouts first (what a
    person looks at while it trains); an evaluation's lengths in turn, so each length is seen."""
    groups = list(run.groups.items())
    if run.kind == "training":
        ordered = [(name, r) for name, group in reversed(groups) for r in group]
        return ordered[:limit]
    rounds = itertools.zip_longest(*[[(name, r) for r in group] for name, group in groups])
    picked = [pair for row in rounds for pair in row if pair is not None][:limit]
    order = {name: index for index, (name, _) in enumerate(groups)}
    return sorted(picked, key=lambda pair: order[pair[0]])


def render_page(run: RunView, limits: ViewLimits) -> str:
    metric = "strict" if run.kind == "training" or all(r.source == "train" for r in run.records) else "sub_em"
    chosen = select(run, limits.max_items)
    notes = list(run.notes)
    if len(chosen) < len(run.records):
        notes.append(f"showing {len(chosen)} of {len(run.records)} questions (--max-items {limits.max_items})")
    body = [
        f"<h1>mem-agent {esc(run.kind)}: {esc(run.path.name or run.path)}</h1>",
        f'<div class="meta">{esc(run.path)} · {len(run.records)} questions in {len(run.groups)} group(s)'
        f" · right/wrong by {metric} · page made {datetime.now(UTC):%Y-%m-%d %H:%M} UTC</div>",
        *(f'<div class="note">{esc(note)}</div>' for note in notes),
        _overview(run),
        _controls(len(chosen)),
        *(item_html(r, name, metric, limits.max_turns, open_=i == 0) for i, (name, r) in enumerate(chosen)),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>mem-agent {esc(run.kind)}: {esc(run.path.name)}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}<script>{SCRIPT}</script></body></html>\n"
    )


def _overview(run: RunView) -> str:
    curves = rollout_curves(run.records)
    if any(xs for xs, _ in curves.values()):
        charts = "".join(
            line_chart(name, xs, ys, y_range=(0.0, 1.0) if name in _SHARES else None)
            for name, (xs, ys) in curves.items()
        )
        return f'<h2>Over rollouts (the records kept per rollout)</h2><div class="charts">{charts}</div>'
    results = (run.summary or {}).get("results") or []
    if not results:
        return ""
    header = ["docs", "items", "failed", "ctx tokens", "sub_em", "em", "f1", "strict"]
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{esc(cell)}</td>"
            for cell in (
                r.get("label", ""),
                r.get("items", ""),
                int(r.get("failed", 0)) + int(r.get("missing", 0)),
                f"{float(r.get('mean_context_tokens', 0)):,.0f}",
                *(f"{float(r.get(m, 0)):.1f}" for m in ("sub_em", "em", "f1", "strict")),
            )
        )
        + "</tr>"
        for r in results
        if isinstance(r, dict)
    )
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    return f'<h2>Accuracy by length</h2><table class="summary"><tr>{head}</tr>{rows}</table>'


def _controls(count: int) -> str:
    return (
        '<h2>Questions</h2><div class="controls"><input type="search" id="filter" placeholder="filter: question, id,'
        ' gold, answer"><select id="outcome"><option value="all">all</option><option value="right">right</option>'
        '<option value="wrong">wrong</option><option value="failed">failed</option></select>'
        '<button id="expand" type="button">expand all</button><button id="collapse" type="button">collapse all</button>'
        '<label><input type="checkbox" id="changes" checked> mark changes</label>'
        f'<span class="meta"><span id="shown">{count}</span> shown</span></div>'
    )


def write_page(run: RunView, output: Path, limits: ViewLimits) -> int:
    """Write the page whole (a crash leaves the old one or none); returns its size in bytes."""
    text = render_page(run, limits)
    write_text_atomic(output, text)
    return len(text.encode("utf-8"))
