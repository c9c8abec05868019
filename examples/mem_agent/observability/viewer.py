"""One HTML page per run: what the agent wrote into memory, chunk by chunk, and how it ended.

The page is one self-contained file (style, script and the curves' SVG inlined; no network, no
server), so it can be mailed, attached to an issue or opened from a cluster's shared disk. It is
rendered from a Jinja2 template with autoescaping on (`page/viewer.html.j2`, with `viewer.css`
and `viewer.js` beside it, shipped as package data): every value from a run reaches the page
escaped, and what the script reads goes in as one JSON block (`tojson`), never as built strings.

A run can hold far more than a person reads and a browser holds: the page keeps at most
`max_items` questions (failures first, page_selection.py) and `max_turns` memory turns per
question, and says on the page what it left out and which flag shows more. A training run's
curves are its own per-rollout figures over every trajectory (metrics.jsonl), never the
trajectory records, which are a sample picked half right and half wrong; the page says so
wherever it counts them.
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mem_agent.common.guarded_files import open_regular, write_text_atomic
from mem_agent.common.usage import UsageError
from mem_agent.observability.page_filters import filter_options, item_keys, metric_line
from mem_agent.observability.page_parts import item_view, row_line
from mem_agent.observability.page_selection import ViewChoice, metric_of, select
from mem_agent.observability.page_settings import run_settings
from mem_agent.observability.rollout_curves import curves_svg, rollout_curves
from mem_agent.observability.suite_tables import suite_tables

if TYPE_CHECKING:
    from pathlib import Path

    import jinja2

    from mem_agent.observability.run_folders import RunView

PAGE_MARK = b'<meta name="generator" content="mem-agent view">'  # in the head of every page we write
PAGE_FILES = "page"  # the folder of this package that holds the template, the style and the script


@dataclass(frozen=True)
class ViewLimits:
    max_items: int = 100  # questions on the page
    max_turns: int = 24  # memory turns per question (first and last halves)


@functools.cache
def _environment() -> jinja2.Environment:
    import jinja2
    from markupsafe import Markup

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("mem_agent.observability", PAGE_FILES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    folder = importlib.resources.files("mem_agent.observability").joinpath(PAGE_FILES)
    # The style and the script are this package's own files, inlined whole (never parsed as templates).
    environment.globals["static"] = lambda name: Markup(folder.joinpath(name).read_text(encoding="utf-8"))
    return environment


def render_page(run: RunView, limits: ViewLimits, choice: ViewChoice | None = None) -> str:
    selection = select(run, choice or ViewChoice(), limits.max_items)
    notes = list(run.notes) + selection.notes
    charts, chart_note = _charts(run)
    metrics = [metric_of(run, name) for name, _ in selection.chosen]
    items = [
        item_view(record, name, metric, limits.max_turns)
        for (name, record), metric in zip(selection.chosen, metrics, strict=True)
    ]
    page = {
        "kind": run.kind,
        "name": run.path.name or str(run.path),
        "path": str(run.path),
        "questions": len(run.records),
        "groups": len(run.groups),
        "sampled": run.kind == "training",
        "metric": metric_line(run),
        "made": f"{datetime.now(UTC):%Y-%m-%d %H:%M}",
        "notes": notes + chart_note,
        "settings": run_settings(run.summary),
        "charts": charts,
        "tables": [] if charts else suite_tables(run.summary),
        "filters": filter_options(run),
    }
    items_data = [
        {
            "outcome": item.outcome,
            "search": item.search,
            "tokens": item.row.context_tokens,
            "score": item.row.score,
            "chunks": item.row.chunks,
            "cut": item.row.cut,
            **item_keys(run, item.group),
        }
        for item in items
    ]
    rows = [row_line(item.row, metric) for item, metric in zip(items, metrics, strict=True)]
    template = _environment().get_template("viewer.html.j2")
    return template.render(page=page, items=zip(items, rows, strict=True), items_data=items_data, shown=len(items))


def _charts(run: RunView) -> tuple[Any, list[str]]:
    """The curves' SVG (markup matplotlib wrote from numbers) and a note when it cannot be drawn."""
    curves = rollout_curves(run.rollout_metrics)
    if not any(xs for xs, _ in curves.values()):
        return None, []
    if importlib.util.find_spec("matplotlib") is None:
        return None, ["curves over rollouts need matplotlib: pip install 'mem-agent[eval]'"]
    from markupsafe import Markup

    return Markup(curves_svg(curves)), []


def write_page(run: RunView, output: Path, limits: ViewLimits, choice: ViewChoice | None = None) -> tuple[int, int]:
    """Write the page whole (a crash leaves the old one or none); returns its size in bytes and the
    number of questions it holds."""
    text = render_page(run, limits, choice)
    write_text_atomic(output, text)
    return len(text.encode("utf-8")), text.count('<details class="item"')


def is_page(path: Path) -> bool:
    """Whether `path` is a page this viewer wrote (its mark in the first KiB): one it may replace."""
    try:
        with open_regular(path) as handle:
            return PAGE_MARK in handle.read(1024)
    except (OSError, UsageError):
        return False
