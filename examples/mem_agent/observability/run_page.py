"""A run as one offline HTML page: the work of `python -m mem_agent.view` (the page itself is
viewer.py's, the run's records run_folders.py's).

The limits and the output path are checked before the run is read, so a mistyped flag costs
nothing on a large run; what the page leaves out is said on the page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mem_agent.common.paths import check_output_path
from mem_agent.common.usage import UsageError
from mem_agent.observability.page_selection import ViewChoice, check_choice
from mem_agent.observability.run_folders import load_run
from mem_agent.observability.viewer import ViewLimits, is_page, write_page

__all__ = ["PageRequest", "write_run_page"]


@dataclass(frozen=True)
class PageRequest:
    """A trajectory file, an evaluation folder or a training folder, and the page to write."""

    run: Path
    output: Path
    limits: ViewLimits
    choice: ViewChoice = field(default_factory=ViewChoice)
    force: bool = False  # replace an existing file that is not a page of ours


def write_run_page(request: PageRequest) -> None:
    """Write the page and print what it holds. UsageError: an output that is a folder, an input or a
    run's data file, an existing file not ours (without force), a run that cannot be read, or a choice
    it cannot meet (an unknown outcome or length); OSError: the page could not be written. The limits
    are positive (view's flags)."""
    if request.output.is_dir():
        raise UsageError(f"--output {request.output} is a folder, not a file")
    check_output_path(request.output, _inputs(request.run), flag="--output", ours=is_page, force=request.force)
    run = load_run(request.run)
    check_choice(run, request.choice)
    size, shown = write_page(run, request.output, request.limits, request.choice)
    print(
        f"{request.output}: {shown} of {len(run.records)} questions of {run.kind} run {run.path} ({size / 1e6:.2f} MB)"
    )


def _inputs(run: Path) -> list[Path]:
    """What the page is made from: the records file, or every file of the run folder."""
    run = Path(run)
    if run.is_dir():
        return [path for path in run.rglob("*") if path.is_file()]
    return [run]
