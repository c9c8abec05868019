"""Outputs stay inside the folder they were given: a name never leads out of it.

An output given by path (`view -o`) never replaces what a command reads: a path that is one of
its inputs, or that names a run folder's data (results, records, summaries, metrics, the lock),
is refused, and an existing file is replaced only when the command made it (or with --force).
"One of its inputs" is the same file, not the same spelling: the same inode where both exist
(a hard link, a symbolic link, `./a/../in.json`), so `--force` never replaces a command's input.

A run's outputs go to one folder (OUTPUT_ROOT/SAVE_FILE, --output-dir, --out-dir); the names
inside it come from labels and settings. A name that is absolute, holds `..` or a separator, or
starts with a dot would put files elsewhere (or hide them), so every writer resolves its path
through `inside` and refuses one that leaves its folder.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from mem_agent.common.input_files import shown
from mem_agent.common.usage import UsageError


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a file or folder inside another one, or None when it can."""
    if not name:
        return "is empty"
    if "/" in name or "\\" in name:
        return "holds a path separator: give a name, the folder is set elsewhere"
    if name.startswith("."):
        return "starts with a dot (.., or a hidden name)"
    return None


def inside(folder: Path, name: str) -> Path:
    """`folder/name`, once it is known to stay inside `folder` (symbolic links resolved)."""
    problem = name_problem(name)
    target = Path(folder) / name
    if problem is None and not target.resolve().is_relative_to(Path(folder).resolve()):
        problem = "leads out of the folder (a symbolic link?)"
    if problem is not None:
        raise UsageError(f"output name {name!r} {problem}")
    return target


RUN_DATA = (
    "results_*.jsonl",
    "trajectories_*.jsonl",
    "rollout_*.jsonl",
    "metrics.jsonl",
    "summary.json",
    "run.json",
    "eval_*.json",
    ".run.lock",
)  # the names of what a run folder holds as data: never an output given by path


def check_output_path(
    output: Path, inputs: Iterable[Path], *, flag: str, ours: Callable[[Path], bool], force: bool
) -> None:
    """UsageError when writing `output` would replace an input, a run folder's data, or an existing
    file that `ours` does not recognise as this command's (unless `force`)."""
    output = Path(output)
    if any(same_file(output, source) for source in inputs):
        raise UsageError(f"{flag} {output} is the input it reads: choose another file")
    if any(fnmatch.fnmatchcase(output.name, pattern) for pattern in RUN_DATA):
        raise UsageError(f"{flag} {output} is a run folder's data file: choose another name")
    if output.is_file() and not output.is_symlink() and not force and not ours(output):
        raise UsageError(f"{flag} {output} exists and was not written by this command: pass --force to replace it")


def same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file: the same inode where both exist (a hard link, a symbolic
    link, a `..` detour), else the same path once links are resolved."""
    try:
        return Path(first).samefile(second)
    except (OSError, ValueError):
        return Path(first).resolve() == Path(second).resolve()


def refuse_writing_inputs(outputs: Mapping[str, Iterable[Path]], inputs: Mapping[str, Path | None]) -> None:
    """UsageError when an output (by its flag) is one of the files the command reads (by theirs):
    writing it would replace the input, `--force` or not."""
    for output_flag, paths in outputs.items():
        for output in paths:
            for input_flag, source in inputs.items():
                if source is not None and same_file(output, source):
                    raise UsageError(
                        f"{output_flag} {shown(output)} is the file {input_flag} reads: choose another output"
                    )
