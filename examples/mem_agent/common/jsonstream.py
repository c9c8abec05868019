"""Stream the items of a top-level JSON array without loading the file.

RULER-HQA's eval_6400.json holds 128 items of about 3.5 MB each (~450 MB). Reading it whole
would cost gigabytes of Python objects; `ijson` (its C backend, yajl2_c) parses the file in blocks
and hands over one item at a time, so memory stays near one item plus one block. The block is
4 MiB, not ijson's 64 KiB: a string that spans many blocks costs the parser time for every block
it spans, and at 64 KiB a 3.5 MB context reads 8 times slower (benchmark 8 in docs/benchmarks.md).

Items are built here from ijson's prefix-free events (`basic_parse`), not by `ijson.items`: its
prefix strings ("item.item.item...") grow with the nesting, so an item nested d deep costs d**2
bytes (2.2 GB at d = 30,000, from a 60 KB file); here a level costs one list entry, and nesting
deeper than MAX_DEPTH is refused. Built here, the items are as quick to read as ijson's (its
Decimals had to be walked again to become floats; here they become floats as they are read).

What ijson does not say, this module adds to every error: the file, the item being read, and
where: the first byte that is not UTF-8 (found by decoding the file again, on that error only),
the file's end for a cut-off file, else the byte range of the block the parser was in.

    python -m mem_agent.common.jsonstream --check eval_50.json --require-keys context,input,answers
        prints the item count, or a one-line error (exit 2) naming the item and the problem
        (run-eval.sh counts its data this way; `python -m mem_agent.evaluation.files` checks an
        eval file by the evaluator's own rules).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import ijson

from mem_agent.common.console import command_parser, command_status
from mem_agent.common.guarded_files import Refused, atomic_output, open_regular

BLOCK_BYTES = 4 << 20
MAX_DEPTH = 512  # bound: nesting levels of an item (data files nest under 10 deep)
_WHITESPACE = b" \t\r\n"


class DataFormatError(ValueError):
    """A data file that is not what it should be; the message names the file and where."""


class _TrackedFile:
    """A binary file that remembers which bytes the last read returned: where a parse error is."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self.start = self.end = 0

    def read(self, size: int = -1) -> bytes:
        block = self._handle.read(size)
        self.start, self.end = self.end, self.end + len(block)
        return block


def iter_json_array(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[Any]:
    """Yield the items of the JSON array in `path` one by one (numbers as int or float, as json does)."""
    path = Path(path)
    with open_data(path) as handle:
        first = _first_significant(handle)
        if first is None:
            raise DataFormatError(f"{path}: ends early at byte {handle.tell()} (truncated file?)")
        if first != b"[":
            raise DataFormatError(f"{path}: expected a JSON array (the file must start with '[')")
        handle.seek(0)
        tracked = _TrackedFile(handle)
        index = 0
        try:
            for item in _items(ijson.basic_parse(tracked, buf_size=block_bytes)):
                yield item
                index += 1
        except _TooDeep:
            raise DataFormatError(
                f"{path}: item {index} is nested deeper than {MAX_DEPTH} levels (bytes {tracked.start}-{tracked.end})"
            ) from None
        except (ijson.JSONError, UnicodeDecodeError) as error:
            raise DataFormatError(_located(path, index, tracked, error)) from None


def open_data(path: Path) -> IO[bytes]:
    """`path` opened to read when it is a regular file (common/guarded_files.py: a FIFO is refused at
    once, never waited on); a DataFormatError naming it when it cannot be read."""
    try:
        return open_regular(path)
    except OSError as error:
        raise DataFormatError(f"{path}: cannot read: {error.strerror}") from None
    except Refused as error:
        raise DataFormatError(str(error)) from None


class _TooDeep(Exception):
    pass


def _items(events: Iterator[tuple[str, Any]]) -> Iterator[Any]:
    """The top-level array's items built from its events, numbers as the json module gives them:
    ijson's Decimal as float, integers of any size as int (its float mode would refuse an integer
    past 64 bits)."""
    containers: list[Any] = []  # the open objects and arrays, outermost first, the top-level array left out
    keys: list[str] = []  # the key each open object's next value goes under
    next(events)  # the top-level array's start_array
    for event, value in events:
        if event == "map_key":
            keys.append(value)
            continue
        if event == "start_map" or event == "start_array":
            containers.append({} if event == "start_map" else [])
            if len(containers) > MAX_DEPTH:
                raise _TooDeep
            continue
        if event == "end_map" or event == "end_array":
            if not containers:  # the top-level array ends: ijson refuses anything after it
                continue
            value = containers.pop()
        elif type(value) is Decimal:
            value = float(value)
        if not containers:
            yield value
        elif type(containers[-1]) is dict:
            containers[-1][keys.pop()] = value
        else:
            containers[-1].append(value)


def _first_significant(handle: IO[bytes]) -> bytes | None:
    while chunk := handle.read(1 << 16):
        stripped = chunk.lstrip(_WHITESPACE)
        if stripped:
            return stripped[:1]
    return None


def _located(path: Path, index: int, tracked: _TrackedFile, error: Exception) -> str:
    """One line: the file, the item, where, and the parser's own reason (its first line)."""
    raw = error.args[0] if error.args else str(error)
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    reason = text.strip().splitlines()[0].strip() if text.strip() else type(error).__name__
    if "premature EOF" in reason:
        return f"{path}: item {index} is cut off at byte {tracked.end}, the end of the file (truncated file?)"
    where = f"bytes {tracked.start}-{tracked.end}"
    if "trailing garbage" in reason:
        return f"{path}: unexpected data after the closing ']' ({where}; {index} items before it)"
    if "UTF8" in reason:
        return f"{path}: {_utf8_error(path) or f'item {index}: not UTF-8 in {where} ({reason})'}"
    if isinstance(error, UnicodeDecodeError):  # ijson decoding a string escape that is not a character
        escape = "a lone surrogate escape such as \\udcff"
        return f"{path}: {_utf8_error(path) or f'item {index}: a string in {where} holds {escape}'}"
    return f"{path}: item {index}: invalid JSON in {where} ({reason})"


def _utf8_error(path: Path) -> str | None:
    """Where `path` stops being UTF-8 (its first bad byte and why), decoding it again from the start."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with open_regular(path) as handle:
        while True:
            block = handle.read(BLOCK_BYTES)
            pending = len(decoder.getstate()[0])  # bytes of a character cut by the last block's edge
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as error:
                return f"not UTF-8 at byte {offset - pending + error.start} ({error.reason})"
            if not block:
                return None
            offset += len(block)


def write_json_array_atomic(path: Path, items: Iterable[Any]) -> int:
    """Write `items` as one JSON array, one item at a time; the file appears only when complete."""
    count = 0
    with atomic_output(Path(path)) as handle:
        handle.write("[")
        for item in items:
            handle.write(",\n" if count else "\n")
            handle.write(json.dumps(item, ensure_ascii=False))
            count += 1
        handle.write("\n]\n")
    return count


def check_file(path: Path, required_keys: Sequence[str]) -> int:
    """The item count of a JSON array file whose every item is an object with `required_keys`."""
    count = 0
    for index, item in enumerate(iter_json_array(path)):
        if not isinstance(item, dict):
            raise DataFormatError(f"{path}: item {index}: expected an object, got {type(item).__name__}")
        missing = [key for key in required_keys if key not in item]
        if missing:
            raise DataFormatError(f"{path}: item {index}: missing field(s) {', '.join(missing)}")
        count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("mem_agent.common.jsonstream", "Validate a JSON array file item by item, streamed.")
    parser.add_argument("--check", type=Path, required=True, help="JSON array file to validate")
    parser.add_argument("--require-keys", default="", help="comma-separated keys every item must have (default: none)")
    args = parser.parse_args(argv)
    keys = [key for key in args.require_keys.split(",") if key]
    return command_status(lambda: print(check_file(args.check, keys)), mistakes=(DataFormatError,))


if __name__ == "__main__":
    raise SystemExit(main())
