"""The package's rooms keep to the layers docs/architecture.md draws.

The layer table on that page is the rule, and this test reads it from there, so the page and the
code cannot drift apart: a module imports only from its own room or a room of a lower layer; the
top-level modules are entry points (hooks the trainers load, commands users run), which import
rooms and never one another, save the `mem-agent` dispatcher, which loads the command it is asked
for by the module name in its COMMANDS; nothing else imports an entry point; no two modules import
each other, however indirectly; and no two modules share a file name, so a name in a traceback or
a review names one file. Imports inside functions and under TYPE_CHECKING count too: a lazy import
is still an edge a reader has to follow, and so is a dispatcher's import by name.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem_agent import cli

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "examples" / "mem_agent"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DISPATCHER = "mem_agent.cli"
# The dispatcher's edges: the command modules it imports by name, and `python -m mem_agent`'s to it.
DISPATCH_EDGES = {DISPATCHER: set(cli.COMMANDS.values()), "mem_agent.__main__": {DISPATCHER}}


def layer_table() -> dict[str, int]:
    """room -> layer number, from the '| layer | rooms | ...' table of docs/architecture.md."""
    rooms: dict[str, int] = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\|\s*(\d+)\s*\|([^|]+)\|", line)
        if match:
            for room in re.findall(r"`([a-z_]+)/`", match.group(2)):
                rooms[room] = int(match.group(1))
    return rooms


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("mem_agent", *parts))


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, known: set[str]) -> Iterator[str]:
    """The package modules `path` imports, at any depth of its code."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from mem_agent.agent import workflow` imports the module mem_agent.agent.workflow
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name.startswith("mem_agent."):
                yield name


def room_of(module: str) -> str | None:
    """The room a module lives in; None for a top-level entry point (and the package itself)."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()):
        return parts[1]
    return None


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    edges = {name: {other for other in imported(path, known) if other != name} for name, path in found.items()}
    for name, commands in DISPATCH_EDGES.items():
        edges[name] |= commands
    return edges


def test_the_page_names_every_room_and_no_other():
    """A room without a layer (or a layer without a room) means the page and the tree disagree."""
    on_disk = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").is_file()}
    assert set(layer_table()) == on_disk


@pytest.mark.parametrize("module", sorted(graph()))
def test_imports_go_down_the_layers(module: str):
    layers = layer_table()
    room = room_of(module)
    wrong = []
    for other in sorted(graph()[module]):
        other_room = room_of(other)
        if other_room is None and other != "mem_agent" and other not in DISPATCH_EDGES.get(module, ()):
            wrong.append(f"{other} is an entry point: move what is shared into a room")
        elif room and other_room and other_room != room and layers[other_room] >= layers[room]:
            wrong.append(f"{other} ({other_room}, layer {layers[other_room]}) is not below {room} ({layers[room]})")
    assert not wrong, f"{module}: " + "; ".join(wrong)


def test_the_dispatchers_commands_are_entry_points_and_it_is_imported_by_none():
    """What the dispatcher may import by name is a top-level module, or a launch the scripts run
    (`launch/`, which an entry point may import as it may any room); only `__main__` imports it."""
    assert all(room_of(command) in (None, "launch") for command in DISPATCH_EDGES[DISPATCHER])
    assert [name for name, edges in graph().items() if DISPATCHER in edges] == ["mem_agent.__main__"]


def test_no_two_modules_share_a_file_name():
    """`compare.py` in two places means two files a reader can confuse; rooms choose other names
    (`__init__.py` and `__main__.py` are Python's names, not ours)."""
    names = Counter(path.name for path in PACKAGE.rglob("*.py") if path.name not in ("__init__.py", "__main__.py"))
    assert sorted(name for name, count in names.items() if count > 1) == []


def test_no_import_circles():
    edges = graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)):
            pytest.fail("import circle: " + " -> ".join(cycle))


def test_the_checker_sees_a_lazy_upward_import(tmp_path: Path):
    """The walk reaches imports inside functions, so a lazy import cannot hide an upward edge."""
    source = tmp_path / "probe.py"
    source.write_text("def f():\n    from mem_agent.host.flags import check_host_args\n")
    assert "mem_agent.host.flags" in set(imported(source, {"mem_agent.host.flags", "mem_agent.host"}))
