"""The documentation stays true to the repository: every page of docs/ is reachable from README.md,
every link lands, every path and command a page shows exists.

`git ls-files` is the truth for the paths a page names, the headings of the target page for `#anchor` links,
and the `mem-agent` dispatcher's list for the commands, so a file moved, a heading renamed or a
command dropped without its documentation fails here.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT

from mem_agent import cli
from support.train_launch import hook_paths

README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
PACKAGE = PROJECT_ROOT / "examples" / "mem_agent"

FENCE = re.compile(r"^```.*?^```[^\n]*$", flags=re.MULTILINE | re.DOTALL)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`\n]+`")
COMMAND = re.compile(r"python -m (mem_agent(?:\.[a-z_]+)+)\b")
# Paths into this repository that pages name in code spans: top folders, or a room of the package.
REPO_PATH = re.compile(r"`((?:[a-z_]+/)+[\w.-]+\.(?:py|sh|md|toml))`")


def pages() -> list[Path]:
    """README.md and every page directly in docs/ (docs/incoming/ holds drafts, not pages)."""
    return [README, *sorted(DOCS.glob("*.md"))]


def prose(text: str) -> str:
    """The text outside fenced code blocks: a `# comment` in a bash block is not a heading."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, lower-cased, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: Counter[str] = Counter()
    for match in re.finditer(r"^#{1,6} (.+?)\s*$", prose(page.read_text(encoding="utf-8")), flags=re.MULTILINE):
        base = slug(match.group(1))
        found.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(CODE_SPAN.sub("", prose(page.read_text(encoding="utf-8"))))


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: outside the repository
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading with that anchor")
    return broken


def tracked_files() -> list[str]:
    return subprocess.run(
        ["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)}
    unlinked = [page.name for page in sorted(DOCS.glob("*.md")) if page.resolve() not in linked]
    assert unlinked == [], "docs pages no link in README.md reaches"


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(PROJECT_ROOT)))
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path):
    assert links(page), "a page without links is cut off from the rest of the docs"
    assert broken_links(page) == []


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(PROJECT_ROOT)))
def test_every_repository_path_a_page_names_exists(page: Path):
    """`agent/scoring.py` (a room's module) or `tests/support/host/` paths: moved files leave no stale name."""
    roots = _our_roots()
    named = {path for path in REPO_PATH.findall(page.read_text(encoding="utf-8")) if path.split("/")[0] in roots}
    missing = sorted(path for path in named if not (PROJECT_ROOT / path).exists() and not (PACKAGE / path).exists())
    assert missing == []


def _our_roots() -> set[str]:
    """First path parts that name this repository's folders (the authors' `verl/...` paths are theirs)."""
    return {"examples", "tests", "bench", "scripts", "docs"} | {p.name for p in PACKAGE.iterdir() if p.is_dir()}


def test_the_link_checker_sees_a_missing_file_and_a_missing_anchor(tmp_path: Path):
    (tmp_path / "other.md").write_text("# Other\n\n## How settings are checked\n\n```bash\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#how-settings-are-checked) [gone](missing.md) [bad](other.md#not-a-heading)"
        " [self](#page) [web](https://example.com/x)\n\n# Page\n\n`[code](nowhere.md)`\n"
    )
    broken = broken_links(page)
    assert [entry.split(":")[0] for entry in broken] == ["missing.md", "other.md#not-a-heading"]


def shown_commands() -> list[str]:
    return sorted({command for page in pages() for command in COMMAND.findall(page.read_text(encoding="utf-8"))})


def test_the_docs_show_every_command_the_package_has():
    """Each `mem-agent` command is shown as `python -m mem_agent.<module>` on some page, and the
    README's commands table shows it in both forms."""
    readme = README.read_text(encoding="utf-8")
    assert sorted(set(cli.COMMANDS.values()) - set(shown_commands())) == []
    for name, module in cli.COMMANDS.items():
        assert re.search(rf"^\| `mem-agent {name}` \| `python -m {module}` \|", readme, flags=re.MULTILINE), name


@pytest.mark.parametrize("command", shown_commands())
def test_every_command_the_docs_show_runs(command: str):
    """`python -m mem_agent.<module> --help` works for each one shown: a command, or a helper the
    scripts run from its room."""
    shown = subprocess.run([sys.executable, "-m", command, "--help"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: python -m {command}")


def documented_hooks() -> dict[str, str]:
    """flag -> dotted hook path, from the table under '## The hooks' of docs/host-flags.md."""
    text = (DOCS / "host-flags.md").read_text(encoding="utf-8")
    section = text[text.index("\n## The hooks\n") :]
    section = section[: section.index("\n## ", 1)]
    rows = re.findall(r"^\| `(--[a-z-]+)`[^|]*\| `(mem_agent\.[\w.]+)` \|", section, flags=re.MULTILINE)
    return dict(rows)


def test_the_hook_paths_the_docs_show_are_the_launchs_and_resolve():
    """The trainers load hooks by dotted path: a path the docs show must import, and every hook the
    launch passes must be the one the docs show for its flag."""
    hooks = documented_hooks()
    assert hooks, "no hook rows found under '## The hooks'"
    for path in hooks.values():
        module, _, name = path.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name)), path
    passed = {flag: path for flag, path in hook_paths().items() if flag.startswith("--custom-")}
    assert passed and all(hooks.get(flag) == path for flag, path in passed.items()), passed


def ragged_table_rows(text: str) -> list[str]:
    """Table rows whose cell count differs from their header's: an unescaped `|` inside a cell
    (a code span does not protect it) or a lost cell, either of which shifts the columns."""
    ragged = []
    header_cells = 0
    for line in prose(text).splitlines():
        if not line.startswith("|"):
            header_cells = 0
            continue
        cells = len(re.split(r"(?<!\\)\|", line.strip())) - 2
        if not header_cells:
            header_cells = cells
        elif cells != header_cells:
            ragged.append(line)
    return ragged


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(PROJECT_ROOT)))
def test_every_table_row_has_its_headers_number_of_cells(page: Path):
    assert ragged_table_rows(page.read_text(encoding="utf-8")) == []


def test_the_table_check_sees_a_pipe_inside_a_cell():
    table = "| a | b |\n|---|---|\n| `x|y` | z |\n| `x\\|y` | z |\n"
    assert ragged_table_rows(table) == ["| `x|y` | z |"]
