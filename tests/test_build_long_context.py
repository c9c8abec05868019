"""RULER-HQA-shaped files from our synthetic set (and the real HotpotQA sample where present) and 2Wiki rows."""

from __future__ import annotations

import json
import re

import pytest

from mem_agent import build_long_context, synthetic_qa
from mem_agent.common.jsonstream import iter_json_array
from mem_agent.data import synthetic as synthetic_data
from mem_agent.data.qa_rows import iter_rows

DOC_HEADER = re.compile(r"^Document (\d+):$", re.MULTILINE)


def _build(tmp_path, input_path, *extra: str) -> int:
    return build_long_context.main(["--input", str(input_path), "--out-dir", str(tmp_path / "out"), *extra])


@pytest.mark.parametrize("num_docs", [20, 100])
def test_every_item_holds_its_own_paragraphs_and_exactly_n_numbered_documents(tmp_path, qa_rows, qa_file, num_docs):
    assert _build(tmp_path, qa_file, "--num-docs", str(num_docs), "--num-questions", "12") == 0
    items = list(iter_json_array(tmp_path / "out" / f"eval_{num_docs}.json"))
    assert len(items) == 12
    for item, row in zip(items, qa_rows, strict=False):
        assert item["input"] == row["question"].strip() and item["answers"] == [row["answer"]]
        assert item["num_docs"] == num_docs
        assert [int(n) for n in DOC_HEADER.findall(item["context"])] == list(range(1, num_docs + 1))
        titles = [block.split("\n")[1] for block in item["context"].split("\n\n") if block.startswith("Document ")]
        assert set(row["context"]["title"]) <= set(titles), "all of the question's own paragraphs are there"
        assert len(titles) == len(set(titles)), "no paragraph twice while the pool is large enough"


def test_same_seed_gives_identical_bytes_and_another_seed_another_order(tmp_path, synthetic_file):
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        assert _build(tmp_path / name, synthetic_file, "--num-docs", "30", "--num-questions", "5", "--seed", seed) == 0
    a, b, c = ((tmp_path / n / "out" / "eval_30.json").read_bytes() for n in "abc")
    assert a == b and a != c


def test_fewer_documents_than_own_paragraphs_keeps_the_gold_ones(tmp_path, qa_rows, qa_file):
    assert _build(tmp_path, qa_file, "--num-docs", "2", "--num-questions", "3") == 0
    for item, row in zip(iter_json_array(tmp_path / "out" / "eval_2.json"), qa_rows, strict=False):
        titles = {block.split("\n")[1] for block in item["context"].split("\n\n")}
        assert titles == set(row["supporting_facts"]["title"])


def test_a_small_pool_is_reused_and_reported(tmp_path, capsys):
    raw = tmp_path / "tiny.json"
    raw.write_text(json.dumps(synthetic_data.generate(2, seed=3)))
    assert _build(tmp_path, raw, "--num-docs", "50", "--num-questions", "2") == 0
    table = capsys.readouterr().out
    assert re.search(r"\|\s+2 \| .*eval_50\.json", table), "both questions reused the 20-paragraph pool"
    item = next(iter_json_array(tmp_path / "out" / "eval_50.json"))
    assert len(DOC_HEADER.findall(item["context"])) == 50


def test_two_wiki_rows_in_their_own_layout_are_accepted(tmp_path):
    rows = [
        {
            "_id": f"w{i}",
            "question": f"Who directed film {i}?",
            "answer": f"Director {i}",
            "context": [[f"Film {i}", [f"Film {i} was directed by Director {i}."]], [f"Other {i}", ["Filler."]]],
            "supporting_facts": [[f"Film {i}", 0]],
        }
        for i in range(4)
    ]
    raw = tmp_path / "2wiki.jsonl"
    raw.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    assert _build(tmp_path, raw, "--num-docs", "5", "--num-questions", "4") == 0
    items = list(iter_json_array(tmp_path / "out" / "eval_5.json"))
    assert [item["answers"] for item in items] == [[f"Director {i}"] for i in range(4)]
    assert all("Document 5:" in item["context"] for item in items)


def test_two_wiki_sentences_without_leading_spaces_are_joined_by_one_space(tmp_path):
    """2Wiki strips its sentences; gluing them ("shows.She") would hand the model words that do not exist."""
    rows = [
        {
            "_id": f"w{i}",
            "question": f"Who designed label {i}?",
            "answer": f"Maker {i}",
            "context": [[f"Label {i}", [f"Label {i} was designed by Maker {i}.", "She showed it in Paris."]]],
            "supporting_facts": [[f"Label {i}", 0]],
        }
        for i in range(3)
    ]
    raw = tmp_path / "2wiki.json"
    raw.write_text(json.dumps(rows))
    assert _build(tmp_path, raw, "--num-docs", "3", "--num-questions", "3") == 0
    for i, item in enumerate(iter_json_array(tmp_path / "out" / "eval_3.json")):
        assert f"Label {i} was designed by Maker {i}. She showed it in Paris." in item["context"]


def test_rows_with_empty_answers_are_skipped_and_counted(tmp_path, capsys):
    rows = synthetic_data.generate(3, seed=1)
    rows[1]["answer"] = "  "
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(rows))
    assert _build(tmp_path, raw, "--num-docs", "10") == 0
    assert "1 rows skipped (empty answer)" in capsys.readouterr().out
    assert len(list(iter_json_array(tmp_path / "out" / "eval_10.json"))) == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"question": "q?", "context": {"title": [], "sentences": []}}]', "row 0: missing field 'answer'"),
        ('[{"question": "q?", "answer": 3, "context": []}]', "row 0: field 'answer' must be a string"),
        ('[{"answer": "a", "context": []}]', "row 0: field 'question' must be a non-empty string"),
        ('[{"question": "q?", "answer": "a", "context": "text"}]', "row 0: missing field 'context'"),
        ('{"question": "q?", "answer": "a", "context": []}\n{"question": ', "line 2: invalid JSON"),
        ('{"question": "q?", "context": []}\n', "line 1: missing field 'answer'"),
    ],
)
def test_bad_rows_are_one_line_errors_naming_file_row_and_field(tmp_path, capsys, content, message):
    raw = tmp_path / "bad.json"
    raw.write_text(content)
    assert _build(tmp_path, raw, "--num-docs", "5") == 2
    err = capsys.readouterr().err
    assert message in err and str(raw) in err and err.count("\n") == 1
    assert not (tmp_path / "out" / "eval_5.json").exists(), "nothing half-written"


def test_existing_outputs_are_kept_unless_forced(tmp_path, capsys, synthetic_file):
    assert _build(tmp_path, synthetic_file, "--num-docs", "12", "--num-questions", "2") == 0
    before = (tmp_path / "out" / "eval_12.json").read_bytes()
    assert _build(tmp_path, synthetic_file, "--num-docs", "12", "--num-questions", "3") == 2
    assert "pass --force" in capsys.readouterr().err
    assert (tmp_path / "out" / "eval_12.json").read_bytes() == before
    assert _build(tmp_path, synthetic_file, "--num-docs", "12", "--num-questions", "3", "--force") == 0
    assert len(list(iter_json_array(tmp_path / "out" / "eval_12.json"))) == 3


def test_synthetic_questions_are_deterministic_and_answerable_from_their_gold_paragraphs():
    first, again, other = (
        synthetic_data.generate(30, seed=5),
        synthetic_data.generate(30, seed=5),
        synthetic_data.generate(30, seed=6),
    )
    assert first == again and first != other
    for row in first:
        gold = [
            "".join(sentences)
            for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True)
            if title in row["supporting_facts"]["title"]
        ]
        assert len(gold) == 2 and len(row["context"]["title"]) == 10
        if row["answer"] not in ("yes", "no"):
            assert any(row["answer"] in text for text in gold), row


def test_synthetic_set_is_accepted_by_the_row_reader(tmp_path):
    raw = tmp_path / "synthetic.json"
    assert synthetic_qa.main(["--out", str(raw), "--num-questions", "9"]) == 0
    parsed = [row for row, _ in iter_rows(raw)]
    assert len(parsed) == 9 and all(row is not None and len(row.supporting_titles) == 2 for row in parsed)


def test_input_that_cannot_fill_n_documents_is_refused_not_written_short(tmp_path, capsys):
    """With one question there is nothing to fill with; an item must never claim N documents and hold fewer."""
    raw = tmp_path / "one.json"
    raw.write_text(json.dumps(synthetic_data.generate(1, seed=0)))
    assert _build(tmp_path, raw, "--num-docs", "10") == 0, "its own ten paragraphs are enough"
    assert _build(tmp_path, raw, "--num-docs", "11") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "question 0 has no paragraphs of other questions to fill 11 documents" in err
    assert not (tmp_path / "out" / "eval_11.json").exists()


@pytest.mark.parametrize("blocker", ["file", "folder"])
def test_an_unwritable_output_is_a_one_line_error(tmp_path, capsys, blocker):
    """An --out-dir that is a file, or a folder where eval_<N>.json should go, is named without a traceback."""
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(synthetic_data.generate(3, seed=0)))
    out = tmp_path / "out"
    if blocker == "file":
        out.write_text("")
    else:
        (out / "eval_12.json").mkdir(parents=True)
    assert _build(tmp_path, raw, "--num-docs", "12", "--force") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and str(out) in err
