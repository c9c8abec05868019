"""What changed between two consecutive memories, word by word, as escaped HTML.

A memory is rewritten whole every turn, so a character diff drowns the reader in noise and a line
diff marks everything (memories are often one paragraph). Words are the unit a person reads:
the text is split into words and the whitespace between them, difflib aligns the words, and the
whitespace travels with the word before it so the rendered text keeps its own spacing.
"""

from __future__ import annotations

import difflib
import html
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


def diff_html(old: str, new: str) -> tuple[str, DiffCounts]:
    """The new memory as HTML with inserted words in <ins> and removed ones in <del>, and the counts.

    Words are compared without their trailing whitespace, so re-wrapping a memory is not a change.
    Every piece of text is escaped: a memory is model output and may hold markup.
    """
    old_words, new_words = words(old), words(new)
    matcher = difflib.SequenceMatcher(
        a=[w.strip() for w in old_words], b=[w.strip() for w in new_words], autojunk=False
    )
    parts: list[str] = []
    added = removed = 0
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            parts.append(html.escape("".join(new_words[b0:b1])))
            continue
        if tag in ("replace", "delete"):
            removed += a1 - a0
            parts.append(f"<del>{html.escape(''.join(old_words[a0:a1]))}</del>")
        if tag in ("replace", "insert"):
            added += b1 - b0
            parts.append(f"<ins>{html.escape(''.join(new_words[b0:b1]))}</ins>")
    return "".join(parts), DiffCounts(added, removed)
