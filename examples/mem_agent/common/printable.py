"""Values as a terminal shows them: a setting or flag a person typed never reaches the terminal raw.

A value can hold control characters (`ESC[2J` clears the screen, BEL rings, a carriage return
rewrites the line it is on), and the lines that echo values back (a dry run's commands, a settings
report, a refusal naming `NAME=value`) would let them act. Each C0 character, DEL and each C1
character is shown as `\\xNN` instead; everything else (paths, unicode letters) stays as it is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def printable(text: str, limit: int | None = None) -> str:
    """`text` with its control characters escaped; cut to about `limit` characters, marked `...`."""
    if limit is not None and len(text) > limit:
        text = text[:limit] + "..."
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def shell_line(words: Iterable[object]) -> str:
    """A command as one copy-pasteable shell line (`shlex.join`), a word holding control characters
    in bash's `$'...'` quoting (as `printf %q` writes it), so the line shows them escaped and pasted
    back it runs with the same words."""
    return " ".join(_shell_word(str(word)) for word in words)


def _shell_word(word: str) -> str:
    if not _CONTROL.search(word):
        return shlex.quote(word)
    return "$'" + printable(word.replace("\\", "\\\\").replace("'", "\\'")) + "'"
