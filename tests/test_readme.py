"""The README's file map is the repository's: one line per tracked file, none missing, none extra.

`git ls-files` is the truth, so a file added, moved or deleted without its line fails here.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter

from conftest import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"


def _file_map_paths() -> list[str]:
    text = README.read_text()
    section = text[text.index("\n## File map\n") :]
    section = section[: section.index("\n## ", 1)]
    return [match.group(1) for match in re.finditer(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)]


def test_the_file_map_has_one_line_for_every_tracked_file():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    listed = _file_map_paths()
    assert [path for path, count in Counter(listed).items() if count > 1] == [], "a file listed twice"
    assert sorted(set(tracked) - set(listed)) == [], "tracked files without a line in the README's file map"
    assert sorted(set(listed) - set(tracked)) == [], "file map lines for files that are not tracked"
