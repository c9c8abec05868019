"""Stream the items of a top-level JSON array without loading the file.

RULER-HQA's eval_6400.json holds 128 items of about 3.5 MB each (~450 MB). Reading it whole
would cost gigabytes of Python objects; this reader decodes one item at a time from a sliding
buffer, so memory stays near one item plus one block.

    python -m mem_agent.common.jsonstream --check eval_50.json --require-keys context,input,answers
        prints the item count, or a one-line error (exit 2) naming the item and the problem
        (run-eval.sh counts its data this way; `python -m mem_agent.evaluation.files` checks an
        eval file by the evaluator's own rules).
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mem_agent.common.atomic_files import atomic_output

BLOCK_CHARS = 1 << 20
_WHITESPACE = " \t\r\n"
_LOOKAHEAD = 64
_NUMBER_ENDS = ",]}" + _WHITESPACE


class DataFormatError(ValueError):
    """A data file that is not what it should be; the message names the file and where."""


def iter_json_array(path: Path, block_chars: int = BLOCK_CHARS) -> Iterator[Any]:
    """Yield the items of the JSON array in `path` one by one."""
    path = Path(path)
    decoder = json.JSONDecoder()
    try:
        handle = path.open("rb")  # decoded here, so that a bad byte is reported by its byte offset
    except OSError as error:
        raise DataFormatError(f"{path}: cannot read: {error.strerror}") from None
    with handle:
        reader = _Buffer(handle, block_chars, path)
        if reader.next_significant() != "[":
            raise DataFormatError(f"{path}: expected a JSON array (the file must start with '[')")
        reader.position += 1
        index = 0
        if reader.next_significant() == "]":
            reader.position += 1
            reader.expect_end()
            return
        while True:
            yield reader.decode_item(decoder, index)
            index += 1
            separator = reader.next_significant()
            if separator == "]":
                reader.position += 1
                reader.expect_end()
                return
            if separator != ",":
                raise DataFormatError(f"{path}: after item {index - 1}: expected ',' or ']' at char {reader.offset}")
            reader.position += 1


class _Buffer:
    def __init__(self, handle, block_chars: int, path: Path) -> None:
        self.handle = handle
        self.block_chars = block_chars
        self.path = path
        self.text = ""
        self.position = 0
        self.consumed = 0  # characters dropped from the front of `text`
        self.bytes_read = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    @property
    def offset(self) -> int:
        return self.consumed + self.position

    def _read_more(self) -> bool:
        # Grow geometrically, so an item many blocks long is re-scanned O(log n) times, not O(n).
        raw = self.handle.read(max(self.block_chars, len(self.text) - self.position))
        pending = len(self.decoder.getstate()[0])  # bytes of a character cut by the last block's edge
        try:
            block = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as error:
            at = self.bytes_read - pending + error.start
            raise DataFormatError(f"{self.path}: not UTF-8 at byte {at} ({error.reason})") from None
        self.bytes_read += len(raw)
        if not block:
            if raw:
                return self._read_more()  # the block held only part of a character
            return False
        self.consumed += self.position
        self.text = self.text[self.position :] + block
        self.position = 0
        return True

    def next_significant(self) -> str:
        while True:
            while self.position < len(self.text) and self.text[self.position] in _WHITESPACE:
                self.position += 1
            if self.position < len(self.text):
                return self.text[self.position]
            if not self._read_more():
                raise DataFormatError(f"{self.path}: ends early at char {self.offset} (truncated file?)")

    def expect_end(self) -> None:
        """Only whitespace may follow the closing bracket: two arrays glued together are not one."""
        while True:
            while self.position < len(self.text) and self.text[self.position] in _WHITESPACE:
                self.position += 1
            if self.position < len(self.text):
                raise DataFormatError(f"{self.path}: unexpected data after the closing ']' at char {self.offset}")
            if not self._read_more():
                return

    def _may_continue(self, item: Any, end: int) -> bool:
        if end >= len(self.text):
            return True
        is_number = isinstance(item, int | float) and not isinstance(item, bool)
        return is_number and self.text[end] not in _NUMBER_ENDS

    def decode_item(self, decoder: json.JSONDecoder, index: int) -> Any:
        self.next_significant()  # raw_decode does not skip leading whitespace
        while True:
            try:
                item, end = decoder.raw_decode(self.text, self.position)
            except json.JSONDecodeError as error:
                # An error at the buffer's end (or an open string) means the item continues in
                # the next block; anywhere else it is bad JSON, reported without reading further.
                at_end = error.pos >= len(self.text) - 1 or error.msg.startswith("Unterminated")
                if (at_end or error.pos >= len(self.text) - _LOOKAHEAD) and self._read_more():
                    continue
                if at_end:
                    raise DataFormatError(f"{self.path}: item {index} is cut off (truncated file?)") from None
                where = self.consumed + error.pos
                raise DataFormatError(f"{self.path}: item {index}: invalid JSON at char {where}: {error.msg}") from None
            if self._may_continue(item, end) and self._read_more():
                continue  # a number cut by the block edge ("12" of "12.5e3") continues in the next block
            self.position = end
            return item


def count_json_array_items(path: Path) -> int:
    return sum(1 for _ in iter_json_array(path))


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
    parser = argparse.ArgumentParser(
        prog="python -m mem_agent.common.jsonstream", description="Validate a JSON array file item by item, streamed."
    )
    parser.add_argument("--check", type=Path, required=True, help="JSON array file to validate")
    parser.add_argument("--require-keys", default="", help="comma-separated keys every item must have (default: none)")
    args = parser.parse_args(argv)
    try:
        print(check_file(args.check, [key for key in args.require_keys.split(",") if key]))
    except DataFormatError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
