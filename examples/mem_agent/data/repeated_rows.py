"""Rows that repeat an earlier row of the input, found and named, and dropped unless kept.

A file joined with itself, or a row pasted twice, would put one question twice into a training
set (trained on twice as often) or an eval file (counted twice in its accuracy), and nothing in
the output would show it. A row repeats another when its content is the same: the question, the
answers and the documents (the id and the position are not content: a copy made by hand often
renumbers them). prepare-data and build-long-context drop such a row by default and keep it with
`--keep-repeats`; either way the summary names how many there were and the first of them.

Rows are compared by a 128-bit BLAKE2 digest of their content, so memory grows by 16 bytes and
the place of each first row, not by the row: the 90K-row HotpotQA train set is about 10 MB.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

SHOWN = 3  # repeats named one by one in the summary; the rest are counted


def content_key(content: Any) -> bytes:
    """A digest of `content` (strings, numbers and tuples or dataclasses of them): equal content,
    equal key. repr() quotes every string, so no two contents share a text."""
    return hashlib.blake2b(repr(content).encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass
class Repeats:
    """The rows seen so far by their content, and the ones that repeated an earlier one."""

    keep: bool  # --keep-repeats: a repeated row is written all the same
    first: dict[bytes, str] = field(default_factory=dict)  # content key -> where the row was first
    named: list[str] = field(default_factory=list)  # "row 5 repeats row 0", the first SHOWN of them
    count: int = 0

    def is_dropped(self, content: Any, where: str) -> bool:
        """Record the row at `where`; True when it repeats an earlier one and is to be left out."""
        key = content_key(content)
        earlier = self.first.get(key)
        if earlier is None:
            self.first[key] = where
            return False
        self.count += 1
        if len(self.named) < SHOWN:
            self.named.append(f"{where} repeats {earlier}")
        return not self.keep

    def summary(self) -> str | None:
        """One line for the command's report, or None when no row repeated another."""
        if not self.count:
            return None
        more = f"; and {self.count - len(self.named)} more" if self.count > len(self.named) else ""
        what = "kept (--keep-repeats)" if self.keep else "left out (--keep-repeats keeps them)"
        rows = "row repeats" if self.count == 1 else "rows repeat"
        return f"{self.count} {rows} an earlier row, {what}: {'; '.join(self.named)}{more}"
