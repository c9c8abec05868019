"""The synthetic multi-hop QA set: reproducible, HotpotQA-shaped, answerable from its gold paragraphs alone."""

from __future__ import annotations

import json
import re

import pytest

from mem_agent import build_long_context, synthetic_qa
from mem_agent.common.jsonstream import iter_json_array
from mem_agent.data import synthetic as synthetic_data
from support.exits import exit_status

# The two sentence shapes the gold paragraphs state their facts in.
PERSON_FACT = re.compile(r"^(?P<name>.+) \(born (?P<year>\d{4})\) was an? .+ born in the town of (?P<town>.+)\.$")
COMPANY_FACT = re.compile(r"^(?P<name>.+) is an? .+ firm founded in \d{4} by (?P<founder>.+)\.$")


def _gold_facts(row: dict) -> dict[str, str]:
    """Title -> first sentence, for the row's supporting paragraphs only."""
    context = row["context"]
    by_title = dict(zip(context["title"], context["sentences"], strict=True))
    return {title: by_title[title][0] for title in row["supporting_facts"]["title"]}


def _people(facts: dict[str, str]) -> dict[str, tuple[int, str]]:
    found = {}
    for sentence in facts.values():
        if match := PERSON_FACT.match(sentence):
            found[match["name"]] = (int(match["year"]), match["town"])
    return found


def test_the_same_seed_writes_byte_identical_files_and_another_seed_does_not(tmp_path):
    """Demo and CI data are rebuilt from the seed, so a seed must always mean the same file."""
    paths = [tmp_path / f"{name}.json" for name in "abc"]
    for path, seed in zip(paths, ("7", "7", "8"), strict=True):
        assert synthetic_qa.main(["--out", str(path), "--num-questions", "24", "--seed", seed]) == 0
    first, again, other = (path.read_bytes() for path in paths)
    assert first == again and first != other


def test_every_question_has_two_gold_and_eight_distractor_paragraphs_with_distinct_titles():
    """Like HotpotQA's distractor setting: ten paragraphs, two of them supporting, no title twice."""
    for row in synthetic_data.generate(60, seed=11):
        titles = row["context"]["title"]
        gold = row["supporting_facts"]["title"]
        assert len(titles) == 10 and len(set(titles)) == 10
        assert len(gold) == 2 and set(gold) <= set(titles)
        assert len(row["context"]["sentences"]) == 10
        assert row["supporting_facts"]["sent_id"] == [0, 0], "each fact is in the paragraph's first sentence"


def test_all_question_kinds_appear():
    """Bridge, comparison and yes/no questions all occur, typed as HotpotQA types them."""
    rows = synthetic_data.generate(9, seed=0)
    assert {row["type"] for row in rows} == {"bridge", "comparison"}
    assert any(row["answer"] in ("yes", "no") for row in rows)
    assert any(row["type"] == "comparison" and row["answer"] not in ("yes", "no") for row in rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_answer_follows_from_the_two_gold_paragraphs_alone(seed):
    """The answer is derivable from the supporting paragraphs, so a perfect reader can score 100%."""
    for row in synthetic_data.generate(45, seed=seed):
        facts = _gold_facts(row)
        people = _people(facts)
        question, answer = row["question"], row["answer"]
        if row["type"] == "bridge":
            company = next(COMPANY_FACT.match(s) for s in facts.values() if COMPANY_FACT.match(s))
            assert company["name"] in question
            assert people[company["founder"]][1] == answer
        elif answer in ("yes", "no"):
            assert len(people) == 2 and all(name in question for name in people)
            same_town = len({town for _, town in people.values()}) == 1
            assert answer == ("yes" if same_town else "no")
        else:
            assert len(people) == 2 and all(name in question for name in people)
            assert answer == min(people, key=lambda name: people[name][0])


def test_the_long_context_builder_accepts_the_generated_file(tmp_path):
    """What the demo does: generate, then build eval files whose items keep their gold paragraphs."""
    raw, out = tmp_path / "synthetic.json", tmp_path / "out"
    assert synthetic_qa.main(["--out", str(raw), "--num-questions", "12", "--seed", "3"]) == 0
    args = ["--input", str(raw), "--num-docs", "30", "--num-questions", "12", "--out-dir", str(out)]
    assert build_long_context.main(args) == 0
    rows = json.loads(raw.read_text())
    items = list(iter_json_array(out / "eval_30.json"))
    assert len(items) == 12
    for item, row in zip(items, rows, strict=True):
        assert item["input"] == row["question"] and item["answers"] == [row["answer"]]
        assert item["context"].count("\nDocument ") == 29 and item["context"].startswith("Document 1:\n")
        for title in row["supporting_facts"]["title"]:
            assert f":\n{title}\n" in item["context"]


def test_a_non_positive_count_is_a_one_line_error_and_writes_nothing(tmp_path, capsys):
    """A user mistake gets exit status 2 and one line naming the flag, never a traceback or a file."""
    out = tmp_path / "q.json"
    assert exit_status(synthetic_qa.main, ["--out", str(out), "--num-questions", "-3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "--num-questions -3" in err
    assert not out.exists()


def test_an_unwritable_output_is_a_one_line_error(tmp_path, capsys):
    """--out naming a folder is reported by name, and the folder is left as it was."""
    folder = tmp_path / "taken"
    folder.mkdir()
    assert synthetic_qa.main(["--out", str(folder), "--num-questions", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(folder) in err and err.count("\n") == 1
    assert folder.is_dir() and list(tmp_path.iterdir()) == [folder], "no temporary file left behind"


def test_help_names_every_default(capsys):
    """--help is the reference for the flags, so it states each default."""
    with pytest.raises(SystemExit) as exit_info:
        synthetic_qa.main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 128)" in text and "(default: 0)" in text


def test_the_module_says_its_data_is_invented():
    """Nobody should mistake demo numbers on this set for HotpotQA results."""
    doc = synthetic_data.__doc__ or ""
    assert "synthetic" in doc.lower() and "cannot be downloaded" in doc


def test_large_sets_finish_and_never_reuse_a_title():
    """Two-syllable town names run out near 160 questions (this once looped forever); names then grow."""
    rows = synthetic_data.generate(600, seed=0)
    titles = [title for row in rows for title in row["context"]["title"]]
    assert len(titles) == len(set(titles)) == 6000
