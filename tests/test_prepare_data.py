"""prepare_data: HotpotQA rows into the trainer's JSONL, with counted skips and precise errors."""

from __future__ import annotations

import json
import re

import pytest
from conftest import HOTPOT_SAMPLE

from mem_agent import prepare_data

DOC_HEADER = re.compile(r"^Document (\d+):$", re.MULTILINE)


def _read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_real_hotpot_rows_become_prompt_label_and_metadata(tmp_path, hotpot_rows, capsys):
    output = tmp_path / "train.jsonl"
    assert (
        prepare_data.main(["--input", str(HOTPOT_SAMPLE), "--output", str(output), "--tokenizer", "bundled:qwen3"]) == 0
    )
    rows = _read(output)
    assert len(rows) == len(hotpot_rows)
    for row, source in zip(rows, hotpot_rows, strict=True):
        assert row["prompt"] == source["question"].strip() and row["label"] == source["answer"]
        assert row["metadata"]["ground_truth"] == [source["answer"]] and row["metadata"]["num_docs"] == len(
            source["context"]["title"]
        )
        assert all(f"\n{title}\n" in row["metadata"]["context"] for title in source["context"]["title"])
    out = capsys.readouterr().out
    assert f"wrote {len(hotpot_rows)} rows" in out
    assert re.search(r"context tokens: p50 [\d,]+  p90 [\d,]+  p99 [\d,]+  max [\d,]+", out)


def test_num_docs_adds_other_rows_paragraphs_as_distractors(tmp_path, hotpot_rows):
    output = tmp_path / "train.jsonl"
    argv = ["--input", str(HOTPOT_SAMPLE), "--output", str(output), "--num-docs", "40", "--max-rows", "5"]
    assert prepare_data.main(argv) == 0
    rows = _read(output)
    assert len(rows) == 5
    for row, source in zip(rows, hotpot_rows, strict=False):
        assert [int(n) for n in DOC_HEADER.findall(row["metadata"]["context"])] == list(range(1, 41))
        assert all(f"\n{title}\n" in row["metadata"]["context"] for title in source["context"]["title"])


def test_jsonl_and_parquet_sources_give_the_same_rows(tmp_path, hotpot_rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl, parquet = tmp_path / "in.jsonl", tmp_path / "in.parquet"
    jsonl.write_text("\n".join(json.dumps(row) for row in hotpot_rows[:6]) + "\n")
    pq.write_table(pa.Table.from_pylist(hotpot_rows[:6]), parquet)
    for source in (jsonl, parquet):
        assert prepare_data.main(["--input", str(source), "--output", str(tmp_path / f"{source.suffix}.out")]) == 0
    assert _read(tmp_path / ".jsonl.out") == _read(tmp_path / ".parquet.out")


def test_rows_with_empty_answers_are_skipped_and_counted(tmp_path, hotpot_rows, capsys):
    rows = [dict(row) for row in hotpot_rows[:4]]
    rows[2]["answer"] = ""
    source = tmp_path / "in.json"
    source.write_text(json.dumps(rows))
    assert prepare_data.main(["--input", str(source), "--output", str(tmp_path / "out.jsonl")]) == 0
    assert "skipped 1 rows: empty answer" in capsys.readouterr().out
    assert len(_read(tmp_path / "out.jsonl")) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"question": "q?", "answer": "a", "context": []}\n{"question": "q?", "answer": ', "line 2: invalid JSON"),
        (b'{"question": "q?", "context": []}\n', "line 1: missing field 'answer'"),
        (b'{"question": "q?", "answer": ["a"], "context": []}\n', "line 1: field 'answer' must be a string"),
        (b'{"question": 5, "answer": "a", "context": []}\n', "line 1: field 'question' must be a non-empty string"),
        (b'{"question": "q?", "answer": "caf\xe9", "context": []}\n', "line 1: not UTF-8"),
        (
            b'[{"question": "q?", "answer": "a", "context": [["t", "not a list"]]}]',
            "row 0: field 'context' has a paragraph",
        ),
    ],
)
def test_malformed_rows_are_one_line_errors_and_leave_no_output(tmp_path, capsys, content, message):
    source, output = tmp_path / "bad.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(content)
    assert prepare_data.main(["--input", str(source), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(source) in err and err.count("\n") == 1
    assert not output.exists() and list(tmp_path.iterdir()) == [source], "nothing half-written"


def test_an_unreadable_path_and_a_missing_hub_are_one_line_errors(tmp_path, capsys):
    assert prepare_data.main(["--input", str(tmp_path / "absent.json"), "--output", str(tmp_path / "o.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    argv = ["--hf-dataset", "hotpot_qa", "--hf-config", "distractor", "--output", str(tmp_path / "o.jsonl")]
    assert prepare_data.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("datasets package" in err or "Hugging Face hub" in err)


def test_an_existing_output_is_kept_unless_forced(tmp_path, capsys, hotpot_rows):
    output = tmp_path / "out.jsonl"
    output.write_text("keep me\n")
    argv = ["--input", str(HOTPOT_SAMPLE), "--output", str(output), "--max-rows", "2"]
    assert prepare_data.main(argv) == 2
    assert "pass --force" in capsys.readouterr().err and output.read_text() == "keep me\n"
    assert prepare_data.main([*argv, "--force"]) == 0
    assert len(_read(output)) == 2


def test_a_source_without_usable_rows_keeps_the_old_output(tmp_path, capsys):
    source, output = tmp_path / "in.json", tmp_path / "out.jsonl"
    source.write_text(json.dumps([{"question": "q?", "answer": " ", "context": []}]))
    output.write_text("previous\n")
    assert prepare_data.main(["--input", str(source), "--output", str(output), "--force"]) == 2
    assert "no usable rows" in capsys.readouterr().err and output.read_text() == "previous\n"
