"""Every file the package writes goes through one layer, common/guarded_files.py, which refuses a
link, a hard link, a FIFO or a path outside the command's folder (docs/reliability.md, Hostile
inputs). A writer that opens a file any other way would bring those back one call at a time, so this
walk reads every module's syntax tree, as tests/test_architecture.py does for imports, and names each
call that writes a file another way: open() or .open() with a mode that writes, .write_text,
.write_bytes, .touch, os.open with a flag that writes, tempfile's named and unnamed files, a figure's
savefig, shutil's copies and moves, os.replace and os.rename, and .replace/.rename with one argument
(Path's: str.replace takes two). The few calls that must stay are listed below, each with its reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "examples" / "mem_agent"
LAYER = "common/guarded_files.py"

# (module, what it calls) -> why it may.
ALLOWED = {
    ("common/token_file.py", "tempfile.TemporaryFile"): "an unnamed file in a folder the caller chose: it has no name"
    " a link or a second name could take, and the kernel frees it when the descriptor closes",
    ("common/token_file.py", ".tofile"): "writes into that unnamed file's handle",
    ("serving/tiny_model.py", ".save_pretrained"): "transformers writes the tiny model into a fresh private staging"
    " folder (tempfile.mkdtemp: a new name, mode 0700) in the model cache, never a run folder",
    ("serving/tiny_model.py", ".rename"): "moves that staging folder whole into the cache: a crash never leaves"
    " half a model",
    ("observability/rollout_curves.py", ".savefig"): "draws an SVG into an in-memory buffer, not a file",
}

_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_TEMP_FILES = {"mkstemp", "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile"}
_SHUTIL = {"copy", "copy2", "copyfile", "copytree", "move"}
_ALWAYS = {"write_text", "write_bytes", "touch", "savefig", "save_pretrained", "tofile"}


def _writes_mode(node: ast.expr | None) -> bool:
    """Whether an open() mode writes (w, a, x or +); one that is not a literal may, so it counts."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return any(c in node.value for c in "wax+")
    return True


def _mode(call: ast.Call, position: int) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == "mode":
            return keyword.value
    return call.args[position] if len(call.args) > position else None


def _is_devnull(node: ast.expr | None) -> bool:
    """`os.devnull`: the null device, not a file anyone keeps."""
    return isinstance(node, ast.Attribute) and node.attr == "devnull"


def _receiver(func: ast.Attribute) -> str | None:
    return func.value.id if isinstance(func.value, ast.Name) else None


def write_calls(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each call in `source` that writes a file other than through the layer."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func, first = node.func, node.args[0] if node.args else None
        if isinstance(func, ast.Name):
            if func.id == "open" and _writes_mode(_mode(node, 1)) and not _is_devnull(first):
                yield node.lineno, "open"
            elif func.id in _TEMP_FILES:
                yield node.lineno, f"tempfile.{func.id}"
            continue
        if not isinstance(func, ast.Attribute):
            continue
        name, receiver = func.attr, _receiver(func)
        if receiver == "os" and name == "open":
            flags = node.args[1] if len(node.args) > 1 else None
            used = {n.attr for n in ast.walk(flags) if isinstance(n, ast.Attribute)} if flags is not None else set()
            if used & _WRITE_FLAGS and not _is_devnull(first):
                yield node.lineno, "os.open"
        elif name == "open" and isinstance(_mode(node, 0), ast.Constant) and _writes_mode(_mode(node, 0)):
            yield node.lineno, ".open"
        elif name in _ALWAYS:
            yield node.lineno, f".{name}"
        elif name in _TEMP_FILES:
            yield node.lineno, f"tempfile.{name}"
        elif receiver == "shutil" and name in _SHUTIL:
            yield node.lineno, f"shutil.{name}"
        elif receiver == "os" and name in ("replace", "rename", "renames"):
            yield node.lineno, f"os.{name}"
        elif (receiver == "torch" and name == "save") or (receiver in ("np", "numpy") and name.startswith("save")):
            yield node.lineno, f"{receiver}.{name}"
        elif name in ("replace", "rename") and len(node.args) == 1 and not node.keywords and receiver != "dataclasses":
            yield node.lineno, f".{name}"


def _found() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == LAYER:
            continue
        for line, what in write_calls(path.read_text(encoding="utf-8")):
            found.setdefault((module, what), []).append(line)
    return found


def test_every_file_the_package_writes_goes_through_the_guarded_layer():
    found = _found()
    stray = [
        f"{module}:{line}: {what}"
        for (module, what), lines in found.items()
        if (module, what) not in ALLOWED
        for line in lines
    ]
    assert stray == [], "write through mem_agent.common.guarded_files instead:\n" + "\n".join(stray)


def test_every_allowance_is_still_needed():
    """An allowance whose call is gone would let the next such call in unexamined."""
    assert sorted(set(ALLOWED) - set(_found())) == []


def test_the_walk_sees_each_way_of_writing():
    probe = """
import os, shutil, tempfile, dataclasses
open(p, "w"); open(p, mode="ab"); open(p, m); Path(p).open("a"); p.write_text("x"); p.write_bytes(b"")
os.open(p, os.O_WRONLY | os.O_CREAT); tempfile.mkstemp(); tempfile.NamedTemporaryFile(); figure.savefig(p)
shutil.copyfile(a, b); shutil.move(a, b); os.replace(a, b); p.replace(q); p.rename(q); p.touch()
"""
    seen = [what for _, what in write_calls(probe)]
    assert seen.count("open") == 3 and seen.count(".open") == 1 and "os.open" in seen
    assert {".write_text", ".write_bytes", "tempfile.mkstemp", "tempfile.NamedTemporaryFile", ".savefig"} <= set(seen)
    assert {"shutil.copyfile", "shutil.move", "os.replace", ".replace", ".rename", ".touch"} <= set(seen)
    harmless = """
open(p); open(p, "rb"); p.open(); p.open("rb"); os.open(p, os.O_RDONLY); text.replace("a", "b")
dataclasses.replace(record, scores=s); os.dup2(os.open(os.devnull, os.O_WRONLY), 1); store.open(path, force=True)
"""
    assert list(write_calls(harmless)) == []
