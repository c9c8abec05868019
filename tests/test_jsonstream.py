"""Streaming JSON arrays: items come out one at a time, whatever their size, with errors that say where."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest

from mem_agent.common.jsonstream import DataFormatError, iter_json_array, main, write_json_array_atomic

ITEMS = [
    {"index": i, "context": "x" * (i * 97), "answers": ["a", "b"], "n": [1.5, True, None, 12345678901234]}
    for i in range(40)
]


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 4096, 1 << 20])
def test_items_of_any_size_stream_out_unchanged(tmp_path, block_bytes):
    path = tmp_path / "items.json"
    assert write_json_array_atomic(path, iter(ITEMS)) == len(ITEMS)
    assert list(iter_json_array(path, block_bytes=block_bytes)) == ITEMS


def test_numbers_come_out_as_json_gives_them(tmp_path):
    """Floats as float and integers as int (never Decimal), whatever block cuts them."""
    path = tmp_path / "numbers.json"
    numbers = [1, 22, 333, 4444, 55555, -6.5e3, 0.1, 2**70]
    path.write_text(json.dumps(numbers))
    for block_bytes in (1, 2, 3, 1 << 16):
        items = list(iter_json_array(path, block_bytes=block_bytes))
        assert items == numbers and [type(item) for item in items] == [type(n) for n in numbers]


def test_an_empty_array_and_compact_layout_both_work(tmp_path):
    empty, compact = tmp_path / "empty.json", tmp_path / "compact.json"
    empty.write_text("  [ ]  ")
    compact.write_text('[{"a":1},{"a":2}]')
    assert list(iter_json_array(empty)) == []
    assert list(iter_json_array(compact)) == [{"a": 1}, {"a": 2}]


def test_memory_stays_near_one_item(tmp_path):
    """Reading 30 items of 200 KB each never holds much more than one of them (plus one block)."""
    path = tmp_path / "big.json"
    write_json_array_atomic(path, ({"context": "y" * 200_000, "i": i} for i in range(30)))
    tracemalloc.start()
    try:
        for item in iter_json_array(path, block_bytes=4096):
            assert len(item["context"]) == 200_000
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 200_000, f"peak {peak} bytes for a {path.stat().st_size}-byte file"


# (content, the item named, the byte offset named: where the parser stopped or the file's end)
BAD_FILES = [
    ('{"a": 1}', None, None),
    ("", None, "0"),
    ("   \n", None, "4"),
    ('[{"a": 1}, {"a": "cut', "item 1", "21"),
    ('[{"a": 1}, {"a": tru}, {"a": 3}]', "item 1", "0-"),
    ('[{"a": 1} {"a": 2}]', "item 1", "0-"),
    ('[{"a": 1}]\n[{"a": 2}]', None, "0-"),
    ("[] x", None, "0-"),
]


@pytest.mark.parametrize(("content", "item", "offset"), BAD_FILES)
def test_bad_files_name_the_file_the_item_and_where(tmp_path, content, item, offset):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(DataFormatError) as error:
        list(iter_json_array(path, block_bytes=64))
    message = str(error.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert item is None or item in message
    assert offset is None or f"byte {offset}" in message or f"bytes {offset}" in message


def test_an_error_deep_in_a_large_file_names_the_block_it_is_in(tmp_path):
    path = tmp_path / "large.json"
    items = [{"context": "z" * 10_000, "i": i} for i in range(50)]
    text = json.dumps(items).replace('"i": 37}', '"i": 37,}')  # one bad item
    path.write_text(text)
    bad_at = text.index('"i": 37,}')
    with pytest.raises(DataFormatError, match="item 37") as error:
        list(iter_json_array(path, block_bytes=4096))
    start, end = (int(n) for n in str(error.value).split("bytes ")[1].split(" ")[0].split("-"))
    assert start <= bad_at < end and end - start <= 4096


def test_non_utf8_and_missing_files_are_data_errors(tmp_path):
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'[{"a": "caf\xe9"}]')
    with pytest.raises(DataFormatError, match="UTF-8") as error:
        list(iter_json_array(latin, block_bytes=4))
    assert str(latin) in str(error.value) and "byte 11" in str(error.value)  # the bad byte, \xe9
    with pytest.raises(DataFormatError) as error:
        list(iter_json_array(tmp_path / "absent.json"))
    assert str(tmp_path / "absent.json") in str(error.value)


def test_a_failed_write_leaves_no_file_behind(tmp_path):
    path = tmp_path / "out.json"

    def items():
        yield {"a": 1}
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError):
        write_json_array_atomic(path, items())
    assert list(tmp_path.iterdir()) == []


def test_check_command_counts_items_and_reports_missing_fields(tmp_path, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps([{"context": "c", "input": "q", "answers": ["a"]}] * 3))
    bad.write_text(json.dumps([{"context": "c", "input": "q"}]))
    assert main(["--check", str(good), "--require-keys", "context,input,answers"]) == 0
    assert capsys.readouterr().out.strip() == "3"
    assert main(["--check", str(bad), "--require-keys", "context,input,answers"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "item 0" in err and "answers" in err


def test_written_files_get_the_usual_permissions_not_private_temp_ones(tmp_path):
    """Eval files are read by other processes and users; the temp file's 0600 must not stick."""
    path = tmp_path / "shared.json"
    write_json_array_atomic(path, [{"a": 1}])
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
