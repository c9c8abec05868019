"""JSON Lines files read by one rule: a line cut by a crash is skipped and named, anything else that
is not what its schema says is one error naming the file, the line and the field.

Runs append one line per finished item or rollout. A writer killed mid-line leaves a cut last line;
the next append starts on a new line (`common/guarded_files.append_bytes`), so after a resume the cut
line sits between complete ones. A cut line is an object that ends before it closes (the parser
runs out of input); it is skipped, and its number is kept so the command can say so. Any other line
that is not JSON, or not the object its reader's schema describes (types, ranges, finite numbers:
a pydantic model), is a LineError: a user's mistake (a file edited or joined by hand), one line,
exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pydantic

from mem_agent.common.guarded_files import read_regular_bytes
from mem_agent.common.usage import UsageError


class LineError(UsageError):
    """A line that is not what its file should hold; the message names file:line and the field."""


@dataclass
class JsonLines:
    path: Path
    rows: list[tuple[int, Any]] = field(default_factory=list)  # (line number, parsed value)
    cut: list[int] = field(default_factory=list)  # numbers of the lines cut by a crash, skipped

    def notes(self) -> list[str]:
        return [f"{self.path}:{number}: skipped a line cut mid-write (a crash)" for number in self.cut]


def read_json_lines(path: Path) -> JsonLines:
    """Every line of `path` parsed; cut lines skipped and counted. OSError: the file cannot be read;
    Refused: it is not a regular file (a FIFO, never waited on)."""
    path = Path(path)
    read = JsonLines(path)
    for number, line, last in _lines(read_regular_bytes(path)):
        if not line.strip():
            continue
        try:
            read.rows.append((number, orjson.loads(line)))
        except orjson.JSONDecodeError:
            if last or is_cut_line(line):
                read.cut.append(number)
                continue
            raise LineError(f"{path}:{number}: not a JSON line") from None
    return read


def _lines(raw: bytes) -> Iterator[tuple[int, bytes, bool]]:
    """(number, line, whether it is a last line with no newline after it)."""
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, start=1):
        yield number, line, number == len(lines) and bool(line)


def is_cut_line(line: bytes) -> bool:
    """Whether `line` is the start of a JSON object that a crash cut: it opens an object and the
    parser runs out of input before the object closes."""
    text = line.decode("utf-8", "replace").rstrip()
    if not text.startswith("{"):
        return False
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return error.pos >= len(text) or error.msg.startswith("Unterminated string")
    return False


def validated(model: type[pydantic.BaseModel], value: Any, where: str) -> Any:
    """`value` checked against `model`; a LineError at `where` (file:line) naming the first bad field."""
    try:
        return model.model_validate(value)
    except pydantic.ValidationError as error:
        raise LineError(f"{where}: {field_problem(error)}") from None


def field_problem(error: pydantic.ValidationError) -> str:
    """The first problem of a validation error, as `field a.b.0: why` (the value left out: it may be huge)."""
    first = error.errors(include_url=False, include_input=False)[0]
    location = ".".join(str(part) for part in first["loc"]) or "(the line)"
    return _printable(f"field {location}: {first['msg']}")


def _printable(text: str) -> str:
    """`text` on one line: a key read from a file may hold a line break or a control character."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
