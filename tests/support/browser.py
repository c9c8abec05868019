"""A real headless Chromium (the Debian package) for the viewer's test: the DOM after the page's
script ran, what the page wrote to the console, and a screenshot.

Chromium is required, not optional: scripts/test.sh installs it when it runs as root (as CI
does) and otherwise stops with the command to run, so a missing browser is a failure that says
how to fix it, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

INSTALL_HINT = "apt-get update && apt-get install -y chromium"


def chromium() -> str:
    """The browser's path ($CHROMIUM, default `chromium` on PATH), or a failure naming the install command."""
    name = os.environ.get("CHROMIUM", "chromium")
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found: the viewer test needs Chromium; run as root: {INSTALL_HINT}")
    return found


@dataclass(frozen=True)
class Rendered:
    dom: str  # the document after its scripts ran (--dump-dom)
    console: list[str]  # every console message and uncaught error the page produced


def render(
    page: Path, profile: Path, *, screenshot: Path | None = None, size: str = "1100,900", fragment: str = ""
) -> Rendered:
    """Load `page` from disk with no network, as a person opening the file would (`fragment`: after #)."""
    base = [
        chromium(),
        "--headless",
        "--disable-gpu",
        "--no-sandbox",  # the suite runs as root in CI, where Chromium's sandbox refuses to start
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--hide-scrollbars",
        f"--window-size={size}",
    ]
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    dump = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=False)
    assert dump.returncode == 0, dump.stderr[-2000:]
    console = [line for line in dump.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    if screenshot is not None:
        shot = subprocess.run(
            [*base, f"--screenshot={screenshot}", url], capture_output=True, text=True, timeout=120, check=False
        )
        assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-2000:]
    return Rendered(dump.stdout, console)


class MemoryText(HTMLParser):
    """The text of each `div.memory` as a reader sees it with changes unmarked: deleted words left out."""

    def __init__(self) -> None:
        super().__init__()
        self.memories: list[str] = []
        self.body_attrs: dict[str, str | None] = {}
        self._depth = 0  # open divs inside the current memory div; 0 = not in one
        self._in_del = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "body":
            self.body_attrs = dict(attrs)
        elif tag == "div" and self._depth:
            self._depth += 1
        elif tag == "div" and "memory" in classes and "answer" not in classes:
            self._depth = 1
            self.memories.append("")
        elif tag == "del" and self._depth:
            self._in_del += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._depth:
            self._depth -= 1
        elif tag == "del" and self._in_del:
            self._in_del -= 1

    def handle_data(self, data: str) -> None:
        if self._depth and not self._in_del:
            self.memories[-1] += data


class PageText(HTMLParser):
    """The document's text as a reader sees it (entities decoded), the count of each element, and
    the body's attributes: what a page made of the data it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.text = ""
        self.tags: Counter[str] = Counter()
        self.body_attrs: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        if tag == "body":
            self.body_attrs = dict(attrs)

    def handle_data(self, data: str) -> None:
        self.text += data
