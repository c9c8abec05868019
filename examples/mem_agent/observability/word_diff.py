"""What changed between two consecutive memories, word by word, as runs of kept, added and removed text.

A memory is rewritten whole every turn, so a character diff drowns the reader in noise and a line
diff marks everything (memories are often one paragraph). Words are the unit a person reads:
the text is split into words and the whitespace between them, difflib aligns the words, and the
whitespace travels with the word before it so the rendered text keeps its own spacing.
The runs are plain text: the viewer's template marks them up, escaping every one.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_WORD = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True)
class DiffCounts:
    added: int  # words in the new memory that the old one did not have at that place
    removed: int


def words(text: str) -> list[str]:
    """`text` cut into words, each with the whitespace after it; joined they give `text` back."""
    return _WORD.findall(text)


def diff_words(old: str, new: str) -> tuple[list[tuple[str, str]], DiffCounts]:
    """The new memory as (kind, text) runs, kind "same", "del" or "ins", and the word counts.

    Joined, the "same" and "ins" runs give `new` back; "del" runs are words of `old` it dropped.
    Words are compared without their trailing whitespace, so re-wrapping a memory is not a change.
    """
    old_words, new_words = words(old), words(new)
    matcher = difflib.SequenceMatcher(
        a=[w.strip() for w in old_words], b=[w.strip() for w in new_words], autojunk=False
    )
    runs: list[tuple[str, str]] = []
    added = removed = 0
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            runs.append(("same", "".join(new_words[b0:b1])))
            continue
        if tag in ("replace", "delete"):
            removed += a1 - a0
            runs.append(("del", "".join(old_words[a0:a1])))
        if tag in ("replace", "insert"):
            added += b1 - b0
            runs.append(("ins", "".join(new_words[b0:b1])))
    return runs, DiffCounts(added, removed)
