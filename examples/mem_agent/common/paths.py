"""Outputs stay inside the folder they were given: a name never leads out of it.

A run's outputs go to one folder (OUTPUT_ROOT/SAVE_FILE, --output-dir, --out-dir); the names
inside it come from labels and settings. A name that is absolute, holds `..` or a separator, or
starts with a dot would put files elsewhere (or hide them), so every writer resolves its path
through `inside` and refuses one that leaves its folder.
"""

from __future__ import annotations

from pathlib import Path

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
