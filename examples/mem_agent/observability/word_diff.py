"""What changed between two consecutive memories, word by word, as runs of kept, added and removed text.

A memory is rewritten whole every turn, so a character diff drowns the reader in noise and a line
diff marks everything (memories are often one paragraph). Words are the unit a person reads:
the text is split into words and the whitespace between them, difflib aligns the words, and the
whitespace travels with the word before it so the rendered text keeps its own spacing.
The runs are plain text: the viewer's template marks them up, escaping every one.

difflib's matcher is quadratic or worse on repetitive text (measured: 1,000 alternating words take
14 s, 16,384 repeated words 105 s), and a memory is model output of any size. So the words both
memories start and end with are matched first (linear: the common case of a memory that grows or
changes in one place), and only the span between them is aligned by difflib, when it holds at most
MAX_ALIGNED words squared; a larger span is shown as removed and added whole, and the counts say
that it was not aligned (`capped`), which the page shows.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_WORD = re.compile(r"\S+\s*|\s+")


MAX_ALIGNED = 40_000  # old words x new words of the changed span that difflib aligns (~0.2 s at worst)


@dataclass(frozen=True)
class DiffCounts:
    added: int  # words in the new memory that the old one did not have at that place
    removed: int
    capped: bool = False  # the changed span was too large to align: shown as removed and added whole


def words(text: str) -> list[str]:
    """`text` cut into words, each with the whitespace after it; joined they give `text` back."""
    return _WORD.findall(text)


def diff_words(old: str, new: str) -> tuple[list[tuple[str, str]], DiffCounts]:
    """The new memory as (kind, text) runs, kind "same", "del" or "ins", and the word counts.

    Joined, the "same" and "ins" runs give `new` back; "del" runs are words of `old` it dropped.
    Words are compared without their trailing whitespace, so re-wrapping a memory is not a change.
    """
    old_words, new_words = words(old), words(new)
    old_keys, new_keys = [w.strip() for w in old_words], [w.strip() for w in new_words]
    head = _common_length(old_keys, new_keys)
    tail = _common_length(old_keys[head:][::-1], new_keys[head:][::-1])
    old_end, new_end = len(old_keys) - tail, len(new_keys) - tail
    runs: list[tuple[str, str]] = []
    if head:
        runs.append(("same", "".join(new_words[:head])))
    middle_old, middle_new = old_keys[head:old_end], new_keys[head:new_end]
    capped = len(middle_old) * len(middle_new) > MAX_ALIGNED
    if capped:
        opcodes = [("replace", 0, len(middle_old), 0, len(middle_new))]
    else:
        opcodes = difflib.SequenceMatcher(a=middle_old, b=middle_new, autojunk=False).get_opcodes()
    added = removed = 0
    for tag, a0, a1, b0, b1 in opcodes:
        a0, a1, b0, b1 = a0 + head, a1 + head, b0 + head, b1 + head
        if tag == "equal":
            runs.append(("same", "".join(new_words[b0:b1])))
            continue
        if tag in ("replace", "delete") and a1 > a0:
            removed += a1 - a0
            runs.append(("del", "".join(old_words[a0:a1])))
        if tag in ("replace", "insert") and b1 > b0:
            added += b1 - b0
            runs.append(("ins", "".join(new_words[b0:b1])))
    if tail:
        runs.append(("same", "".join(new_words[new_end:])))
    return runs, DiffCounts(added, removed, capped)


def _common_length(first: list[str], second: list[str]) -> int:
    """How many items the two lists start with in common."""
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count
