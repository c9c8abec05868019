"""RULER's own files (prepare.py's validation.jsonl, no `context`) are taken apart into the haystack
and the question that were put in (data/ruler_records.py), whatever chat template wraps them and
whether or not their whitespace was collapsed; a prompt of another shape is refused."""

from __future__ import annotations

import json

import pytest

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.data.ruler_records import split_ruler_input
from support.ruler_data import planted_items
from support.ruler_layouts import (
    MODEL_TEMPLATES,
    ruler_question,
    write_memagent_merged,
    write_ruler_own,
    write_ruler_prepare,
)

RULER_FIELDS = ["index", "input", "outputs", "length", "length_w_model_temp", "answer_prefix"]
ITEMS = 3  # more than one, so that vt's and cwe's worked example is another item than the one asked


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("model", sorted(MODEL_TEMPLATES))
@pytest.mark.parametrize("collapse", [False, True], ids=["newlines", "collapsed"])
@pytest.mark.parametrize("split", RULER_SPLITS)
def test_prepare_file_gives_back_the_document_and_question_put_in(tmp_path, synthetic_rows, split, model, collapse):
    """Every item of a prepare.py file yields exactly the haystack it was built from and the
    template's question with its query, never a worked example's."""
    items = planted_items(split, synthetic_rows, ITEMS)
    path = write_ruler_prepare(tmp_path, split, items, model=model, collapse=collapse)
    assert path == tmp_path / split / "validation.jsonl"
    for record, item in zip(_records(path), items, strict=True):
        document, question = split_ruler_input(split, record["input"])
        expected = (item.document, ruler_question(split, item.query))
        assert (document, question) == (tuple(map(_collapsed, expected)) if collapse else expected)


@pytest.mark.parametrize("split", RULER_SPLITS)
def test_prepare_records_keep_ruler_fields_and_niah_char_positions(tmp_path, synthetic_rows, split):
    """The layout the reader meets: RULER's fields in RULER's order, no context; niah's index is
    the first answer's character position in the input (so it can repeat), the others count 0, 1, ..."""
    items = planted_items(split, synthetic_rows, ITEMS)
    records = _records(write_ruler_prepare(tmp_path, split, items))
    for number, record in enumerate(records):
        niah = split.startswith("niah")
        assert list(record) == RULER_FIELDS + (["token_position_answer"] if niah else [])
        assert record["index"] == (record["input"].find(record["outputs"][0]) if niah else number)


def test_niah_single_and_multi_value_questions_are_worded_as_ruler_words_them(synthetic_rows):
    """niah's single-value splits ask in the singular, multi-value ones in the plural; both read."""
    for split, opening in (("niah_single_1", "What is the"), ("niah_multivalue", "What are all the")):
        (item,) = planted_items(split, synthetic_rows, 1)
        assert ruler_question(split, item.query).startswith(opening)


def test_memagent_merged_file_is_one_array_whose_chunks_each_count_from_zero(tmp_path, synthetic_rows):
    """MemAgent's ruler_data_prepare (--chunk_amount 8) merges eight chunks into one JSON array at
    eval_<split>_<length>.json; each chunk numbers its items from 0, so indices repeat."""
    items = planted_items("niah_single_1", synthetic_rows, 20)
    path = write_memagent_merged(tmp_path, "niah_single_1", 8192, items)
    assert path == tmp_path / "eval_niah_single_1_8192.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    assert [record["index"] for record in records] == [0, 1, 2] * 4 + [0, 1] * 4
    assert [record["context"] for record in records] == [item.document for item in items]
    assert list(records[0]) == ["index", "input", "context", "outputs", "answer_prefix", "length"]


def test_ruler_own_file_lies_where_run_sh_puts_it_and_takes_plain_items(tmp_path, synthetic_rows):
    """write_ruler_own: <root>/<length>/data/<split>/validation.jsonl, items as (document, query,
    outputs) or planted, read back as they were put in."""
    items = planted_items("qa_2", synthetic_rows, 2)
    path = write_ruler_own(
        tmp_path, "qa_2", 8192, [(items[0].document, items[0].query, tuple(items[0].outputs)), items[1]]
    )
    assert path == tmp_path / "8192" / "data" / "qa_2" / "validation.jsonl"
    records = _records(path)
    assert [record["index"] for record in records] == [0, 1]
    assert [record["outputs"] for record in records] == [item.outputs for item in items]
    for record, item in zip(records, items, strict=True):
        assert split_ruler_input("qa_2", record["input"]) == (item.document, ruler_question("qa_2", item.query))


@pytest.mark.parametrize(
    ("split", "text"),
    [
        ("niah_single_1", "A plain paragraph that is no prompt at all."),
        ("vt", "I will quiz you about the number afterwards.\nhaystack\nWhat is the special magic number for x"),
        ("qa_1", "Answer the question based on our words alone.\n\nOur question: who?"),
        ("no_such_split", "text"),
    ],
    ids=["no-template", "other-task", "no-context", "unknown-split"],
)
def test_text_of_no_template_is_refused(split, text):
    with pytest.raises(DataFormatError):
        split_ruler_input(split, text)


def test_other_splits_prompt_is_refused(tmp_path, synthetic_rows):
    """A cwe prompt read as niah (or as qa) does not match: the split decides the template."""
    (record,) = _records(write_ruler_prepare(tmp_path, "cwe", planted_items("cwe", synthetic_rows, 1)))
    for split in ("niah_single_1", "qa_2", "fwe"):
        with pytest.raises(DataFormatError):
            split_ruler_input(split, record["input"])
