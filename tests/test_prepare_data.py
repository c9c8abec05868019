"""prepare_data: HotpotQA-layout rows into the trainer's JSONL, with counted skips and precise errors.

Rows come from our synthetic set, and also from the real HotpotQA sample where it exists (qa_rows):
real rows have no id, leading spaces in their sentences and non-ASCII text, which ours do not.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from mem_agent import prepare_data

DOC_HEADER = re.compile(r"^Document (\d+):$", re.MULTILINE)


def _read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_become_prompt_label_and_metadata(tmp_path, qa_rows, qa_file, capsys):
    output = tmp_path / "train.jsonl"
    assert prepare_data.main(["--input", str(qa_file), "--output", str(output), "--tokenizer", "bundled:qwen3"]) == 0
    rows = _read(output)
    assert len(rows) == len(qa_rows)
    for row, source in zip(rows, qa_rows, strict=True):
        assert row["prompt"] == source["question"].strip() and row["label"] == source["answer"]
        assert row["metadata"]["ground_truth"] == [source["answer"]] and row["metadata"]["num_docs"] == len(
            source["context"]["title"]
        )
        assert all(f"\n{title}\n" in row["metadata"]["context"] for title in source["context"]["title"])
    out = capsys.readouterr().out
    assert f"wrote {len(qa_rows)} rows" in out
    assert re.search(r"context tokens: p50 [\d,]+  p90 [\d,]+  p99 [\d,]+  max [\d,]+", out)


def test_num_docs_adds_other_rows_paragraphs_as_distractors(tmp_path, qa_rows, qa_file):
    output = tmp_path / "train.jsonl"
    argv = ["--input", str(qa_file), "--output", str(output), "--num-docs", "40", "--max-rows", "5"]
    assert prepare_data.main(argv) == 0
    rows = _read(output)
    assert len(rows) == 5
    for row, source in zip(rows, qa_rows, strict=False):
        assert [int(n) for n in DOC_HEADER.findall(row["metadata"]["context"])] == list(range(1, 41))
        assert all(f"\n{title}\n" in row["metadata"]["context"] for title in source["context"]["title"])


def test_jsonl_and_parquet_sources_give_the_same_rows(tmp_path, qa_rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl, parquet = tmp_path / "in.jsonl", tmp_path / "in.parquet"
    jsonl.write_text("\n".join(json.dumps(row) for row in qa_rows[:6]) + "\n")
    pq.write_table(pa.Table.from_pylist(qa_rows[:6]), parquet)
    for source in (jsonl, parquet):
        assert prepare_data.main(["--input", str(source), "--output", str(tmp_path / f"{source.suffix}.out")]) == 0
    assert _read(tmp_path / ".jsonl.out") == _read(tmp_path / ".parquet.out")


def test_rows_with_empty_answers_are_skipped_and_counted(tmp_path, synthetic_rows, capsys):
    rows = [dict(row) for row in synthetic_rows[:4]]
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


def test_an_unreadable_path_and_a_missing_hub_are_one_line_errors(tmp_path, capsys, monkeypatch):
    """No network in tests: the hub is unreachable because huggingface_hub is told it is offline."""
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read at import: set both
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    assert prepare_data.main(["--input", str(tmp_path / "absent.json"), "--output", str(tmp_path / "o.jsonl")]) == 2
    assert f"--input {tmp_path / 'absent.json'}" in capsys.readouterr().err
    argv = ["--hf-dataset", "hotpot_qa", "--hf-config", "distractor", "--output", str(tmp_path / "o.jsonl")]
    assert prepare_data.main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "hotpot_qa" in errors[0]


def test_an_existing_output_is_kept_unless_forced(tmp_path, capsys, synthetic_file):
    output = tmp_path / "out.jsonl"
    output.write_text("keep me\n")
    argv = ["--input", str(synthetic_file), "--output", str(output), "--max-rows", "2"]
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


def _row_id(row: dict, position: int) -> str:
    """The id a row is known by: its own (our synthetic rows have one), else its position (the
    real sample has none)."""
    return str(row.get("id", position))


def _original_layout(row: dict, position: int) -> dict:
    """HotpotQA's own JSON layout: context as [[title, sentences]], supporting facts as [[title, id]]."""
    context = [[t, s] for t, s in zip(row["context"]["title"], row["context"]["sentences"], strict=True)]
    facts = [[t, i] for t, i in zip(row["supporting_facts"]["title"], row["supporting_facts"]["sent_id"], strict=True)]
    fields = {"_id": _row_id(row, position), "question": row["question"], "answer": row["answer"]}
    return {**fields, "context": context, "supporting_facts": facts}


def test_the_original_hotpotqa_layout_gives_the_same_rows_as_the_hub_layout(tmp_path, qa_rows):
    """Both layouts of the same questions must produce byte-identical training rows."""
    hub, original = tmp_path / "hub.json", tmp_path / "original.json"
    hub.write_text(json.dumps(qa_rows[:8]))
    original.write_text(json.dumps([_original_layout(row, i) for i, row in enumerate(qa_rows[:8])]))
    for source in (hub, original):
        argv = ["--input", str(source), "--output", str(tmp_path / f"{source.stem}.jsonl"), "--num-docs", "20"]
        assert prepare_data.main(argv) == 0
    assert (tmp_path / "hub.jsonl").read_bytes() == (tmp_path / "original.jsonl").read_bytes()
    ids = [row["metadata"]["id"] for row in _read(tmp_path / "hub.jsonl")]
    assert ids == [_row_id(row, i) for i, row in enumerate(qa_rows[:8])]


def test_the_token_percentiles_are_those_of_the_written_contexts(tmp_path, tokenizer, qa_file, capsys):
    from mem_agent.tokenization.tokenizer import encode

    output = tmp_path / "train.jsonl"
    argv = ["--input", str(qa_file), "--output", str(output), "--max-rows", "9", "--tokenizer", "bundled:qwen3"]
    assert prepare_data.main(argv) == 0
    lengths = sorted(len(encode(tokenizer, row["metadata"]["context"])) for row in _read(output))
    found = re.search(r"p50 ([\d,]+) .* max ([\d,]+)", capsys.readouterr().out)
    assert found and int(found[1].replace(",", "")) == lengths[4] and int(found[2].replace(",", "")) == lengths[-1]


def test_a_filler_pool_too_small_for_num_docs_is_reported_and_recorded_per_row(tmp_path, synthetic_rows, capsys):
    """Rows never claim more documents than they hold: metadata.num_docs counts what was written."""
    few, alone = tmp_path / "few.json", tmp_path / "alone.json"
    few.write_text(json.dumps(synthetic_rows[:3]))  # 30 distinct paragraphs: fillers must repeat
    alone.write_text(json.dumps(synthetic_rows[:1]))  # no other question's paragraphs at all
    assert prepare_data.main(["--input", str(few), "--output", str(tmp_path / "few.jsonl"), "--num-docs", "100"]) == 0
    assert "0 rows have fewer than 100 documents, 3 reuse fillers" in capsys.readouterr().out
    argv = ["--input", str(alone), "--output", str(tmp_path / "alone.jsonl"), "--num-docs", "100"]
    assert prepare_data.main(argv) == 0
    assert "1 rows have fewer than 100 documents, 0 reuse fillers" in capsys.readouterr().out
    for name, expected in (("few", 100), ("alone", 10)):
        for row in _read(tmp_path / f"{name}.jsonl"):
            assert row["metadata"]["num_docs"] == len(DOC_HEADER.findall(row["metadata"]["context"])) == expected


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("json_not_utf8", "not UTF-8"),
        ("bad_parquet", "cannot read as parquet"),
        ("no_pyarrow", "needs pyarrow"),
        ("bad_tokenizer", "--tokenizer"),
        ("output_is_folder", "is a folder"),
    ],
)
def test_unusable_inputs_and_outputs_are_one_line_errors(tmp_path, capsys, monkeypatch, setup, message):
    source, output, extra = tmp_path / "in.json", tmp_path / "out.jsonl", []
    source.write_text(json.dumps([{"question": "q?", "answer": "a", "context": [["t", ["s."]]]}]))
    if setup == "json_not_utf8":
        source.write_bytes(b'[{"question": "caf\xe9?", "answer": "a", "context": []}]')
    elif setup in ("bad_parquet", "no_pyarrow"):
        source = tmp_path / "in.parquet"
        source.write_bytes(b"PAR1 this is not parquet")
        if setup == "no_pyarrow":
            monkeypatch.setitem(sys.modules, "pyarrow", None)
            monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    elif setup == "bad_tokenizer":
        (tmp_path / "empty_model").mkdir()
        extra = ["--tokenizer", str(tmp_path / "empty_model")]
    else:
        output.mkdir()
    assert prepare_data.main(["--input", str(source), "--output", str(output), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("error: ")
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob(".*.partial"))
