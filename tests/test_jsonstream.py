"""Streaming JSON arrays: items come out one at a time, whatever their size, with precise errors."""

from __future__ import annotations

import json

import pytest

from mem_agent.common.jsonstream import (
    DataFormatError,
    count_json_array_items,
    iter_json_array,
    main,
    write_json_array_atomic,
)

ITEMS = [
    {"index": i, "context": "x" * (i * 97), "answers": ["a", "b"], "n": [1.5, True, None, 12345678901234]}
    for i in range(40)
]


@pytest.mark.parametrize("block_chars", [1, 7, 64, 4096, 1 << 20])
def test_items_of_any_size_stream_out_unchanged(tmp_path, block_chars):
    path = tmp_path / "items.json"
    assert write_json_array_atomic(path, iter(ITEMS)) == len(ITEMS)
    assert list(iter_json_array(path, block_chars=block_chars)) == ITEMS


def test_numbers_split_across_blocks_are_read_whole(tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps([1, 22, 333, 4444, 55555, -6.5e3]))
    for block_chars in (1, 2, 3):
        assert list(iter_json_array(path, block_chars=block_chars)) == [1, 22, 333, 4444, 55555, -6.5e3]


def test_an_empty_array_and_compact_layout_both_work(tmp_path):
    empty, compact = tmp_path / "empty.json", tmp_path / "compact.json"
    empty.write_text("  [ ]  ")
    compact.write_text('[{"a":1},{"a":2}]')
    assert list(iter_json_array(empty)) == []
    assert count_json_array_items(compact) == 2


def test_memory_stays_near_one_item(tmp_path):
    """The reader's buffer never holds much more than one item plus one block."""
    path = tmp_path / "big.json"
    write_json_array_atomic(path, ({"context": "y" * 200_000, "i": i} for i in range(30)))
    reader = iter_json_array(path, block_chars=4096)
    for item in reader:
        buffer = reader.gi_frame.f_locals["reader"]
        assert len(buffer.text) < 2 * 200_000 + 8192, "the buffer is cut back after every item"
        assert len(item["context"]) == 200_000


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"a": 1}', "expected a JSON array"),
        ("", "ends early"),
        ('[{"a": 1}, {"a": "cut', "item 1 is cut off"),
        ('[{"a": 1}, {"a": tru}, {"a": 3}]', "item 1: invalid JSON at char"),
        ('[{"a": 1} {"a": 2}]', "after item 0: expected ',' or ']'"),
        ('[{"a": 1}]\n[{"a": 2}]', "unexpected data after the closing ']' at char 11"),
        ("[] x", "unexpected data after the closing ']' at char 3"),
    ],
)
def test_bad_files_name_the_file_and_the_item(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(DataFormatError, match=message) as error:
        list(iter_json_array(path, block_chars=8))
    assert str(path) in str(error.value)


def test_non_utf8_and_missing_files_are_data_errors(tmp_path):
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'[{"a": "caf\xe9"}]')
    with pytest.raises(DataFormatError, match="not UTF-8"):
        list(iter_json_array(latin))
    with pytest.raises(DataFormatError, match="cannot read"):
        list(iter_json_array(tmp_path / "absent.json"))


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
    assert err.count("\n") == 1 and "item 0: missing field(s) answers" in err


def test_written_files_get_the_usual_permissions_not_private_temp_ones(tmp_path):
    """Eval files are read by other processes and users; the temp file's 0600 must not stick."""
    import os

    path = tmp_path / "shared.json"
    write_json_array_atomic(path, [{"a": 1}])
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
