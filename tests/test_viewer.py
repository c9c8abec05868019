"""The viewer: one offline HTML page per run, showing each memory with what changed since the one
before, the answer against the gold, and training curves; checked in a real headless Chromium."""

from __future__ import annotations

import json
import re
import struct
import sys
from pathlib import Path

import pytest

from mem_agent import view
from mem_agent.observability.rollout_curves import CURVES, rollout_curves
from mem_agent.observability.run_folders import RunView, load_run
from mem_agent.observability.trajectory_records import SCHEMA, TrajectoryRecord, TurnRecord
from mem_agent.observability.viewer import ViewLimits, write_page
from mem_agent.observability.word_diff import diff_words, words
from support.browser import MemoryText, PageText, render
from support.scripts import PROJECT_ROOT, run_script, write_executable
from support.trajectory_runs import evaluation_run, memories_for, training_run

DOCS_SCREENSHOT = PROJECT_ROOT / "docs" / "images" / "viewer.png"
TEST_SH = PROJECT_ROOT / "scripts" / "test.sh"


def test_words_put_back_together_give_the_text():
    text = "  two  spaces\nand a\ttab  "
    assert "".join(words(text)) == text


def test_a_diff_reads_as_the_new_memory_and_counts_the_words_changed():
    """The kept and added runs give the new memory back exactly; the dropped ones are the old words."""
    old, new = "the river is long. <b>", "the river is wide. <b> & more"
    runs, counts = diff_words(old, new)
    assert "".join(text for kind, text in runs if kind != "del") == new
    assert ("del", "long. ") in runs and ("ins", "wide. ") in runs
    assert (counts.added, counts.removed) == (3, 1)


def test_rollout_curves_are_the_means_of_each_rollouts_records(tokenizer, tmp_path):
    run = load_run(training_run(tokenizer, tmp_path / "train", rollouts=3, per_rollout=4))
    curves = rollout_curves(run.records)
    assert curves["accuracy (strict)"] == ([0.0, 1.0, 2.0], [0.25, 0.5, 0.75])
    assert curves["reward (mean)"][1] == [0.25, 0.5, 0.75]
    assert curves["turns per trajectory"][1] == [3.0, 4.0, 5.0]  # chunks + the final turn
    assert curves["memory turns cut (share)"][1] == [1 / 2, 1 / 3, 1 / 4]  # the last memory of each is cut


def test_an_evaluation_without_trajectories_shows_answers_and_says_how_to_see_memories(tokenizer, tmp_path, capsys):
    run_dir = evaluation_run(tokenizer, tmp_path / "eval", {"50": 2}, trajectories=False)
    out = tmp_path / "page.html"
    assert view.main([str(run_dir), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "run with --save-trajectories to see memories" in page
    assert page.count('<details class="item"') == 3 and "no turn records for this question" in page
    assert "Accuracy by length" in page and "<td>66.7</td>" in page
    assert "<svg" not in page  # an evaluation has no curves over rollouts


def test_a_large_run_is_capped_and_the_page_says_so(tokenizer, tmp_path):
    run_dir = evaluation_run(tokenizer, tmp_path / "eval", {"50": 9, "100": 9}, questions=4)
    out = tmp_path / "page.html"
    assert view.main([str(run_dir), "-o", str(out), "--max-items", "3", "--max-turns", "4"]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.count('<details class="item"') == 3
    assert "showing 3 of 8 questions (--max-items 3)" in page
    assert "5 memory turns not shown (--max-turns 4)" in page
    assert re.findall(r'class="group">(\w+)', page) == ["50", "50", "100"]  # both lengths represented


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nowhere"], "nowhere does not exist"),
        (["{tmp}"], "is not a run: expected a trajectory .jsonl file"),
        (["{tmp}", "--max-items", "0"], "--max-items 0 must be a positive integer"),
        (["{tmp}/bad.jsonl"], "bad.jsonl:1: schema None is not"),
        (["{tmp}/eval"], "results_50.jsonl:1: field id"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "bad.jsonl").write_text('{"question": "q"}\n')
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "results_50.jsonl").write_text('{"question": "no id"}\n')
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    assert view.main([*argv, "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_the_page_works_offline_in_chromium_and_shows_every_memory(tokenizer, tmp_path):
    """In a real browser: the script runs to its end with no console message, every memory of every
    question reads exactly as written once deleted words are hidden, and the page loads nothing."""
    run_dir = training_run(tokenizer, tmp_path / "train", rollouts=3, per_rollout=4)
    page = tmp_path / "train.html"
    assert view.main([str(run_dir), "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    references = re.findall(r'(?:src|href)="([^"]*)"|url\(([^)]*)\)', text)
    assert all(target.startswith("#") for pair in references for target in pair if target)  # in-page only
    assert "@import" not in text  # nothing fetched: works offline

    screenshot = tmp_path / "viewer.png"
    rendered = render(page, tmp_path / "profile", screenshot=screenshot)
    assert rendered.console == []
    parsed = MemoryText()
    parsed.feed(rendered.dom)
    assert parsed.body_attrs.get("data-ready") == "1"  # the script reached its last line
    # Latest rollout first; within a rollout, questions in order; each has chunks = 2 + rollout.
    expected = [m for rollout in (2, 1, 0) for index in range(4) for m in memories_for(index, 2 + rollout)]
    assert parsed.memories == expected
    assert re.search(r'<span id="shown">12</span>', rendered.dom)
    assert text.count("<svg") == 1 and all(name in text for name in CURVES)  # the curves, drawn by matplotlib

    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", screenshot.read_bytes()[16:24])
    assert (width, height) == (1100, 900)


def test_a_training_page_without_matplotlib_shows_everything_but_the_curves(tokenizer, tmp_path, monkeypatch):
    """Plots need the eval extra; without it the page still holds every question and names the extra."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    run_dir = training_run(tokenizer, tmp_path / "train", rollouts=2, per_rollout=2)
    assert view.main([str(run_dir), "-o", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "<svg" not in page and "mem-agent[eval]" in page
    assert page.count('<details class="item"') == 4


def test_a_link_opens_the_page_filtered_in_chromium(tokenizer, tmp_path):
    """The page's own filter, run by the browser: #outcome=wrong hides every right answer, and a
    text filter narrows to the questions that contain it."""
    run_dir = evaluation_run(tokenizer, tmp_path / "eval", {"50": 2, "100": 3}, questions=4)
    page = tmp_path / "eval.html"
    assert view.main([str(run_dir), "-o", str(page)]) == 0
    wrong = render(page, tmp_path / "profile", fragment="outcome=wrong")
    assert wrong.console == []
    assert _shown(wrong.dom) == [("wrong", "1"), ("wrong", "3"), ("wrong", "1"), ("wrong", "3")]
    assert '<span id="shown">4</span>' in wrong.dom
    one = render(page, tmp_path / "profile", fragment="filter=question%203")
    assert _shown(one.dom) == [("wrong", "3"), ("wrong", "3")]


def _shown(dom: str) -> list[tuple[str, str]]:
    """(outcome, item id) of each question the page left visible, in page order."""
    pattern = r'(<details class="item"[^>]*>)\s*<summary><span class="badge (\w+)">.*?#(\d+)</span>'
    items = re.findall(pattern, dom, flags=re.S)
    return [(outcome, item) for tag, outcome, item in items if 'hidden=""' not in tag]


def test_the_docs_screenshot_is_a_small_png():
    """docs/images/viewer.png is what the docs show of the page: present, a PNG, under 300 KB."""
    data = DOCS_SCREENSHOT.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 300_000


def _id_reporting(uid: int, folder: Path) -> Path:
    """A folder with an `id` that reports `uid`, so both branches run whoever runs the suite."""
    write_executable(folder / "id", f"#!/usr/bin/env bash\necho {uid}\n")
    return folder


@pytest.mark.parametrize(("uid", "expected"), [(0, "install"), (1000, "stop")])
def test_the_test_command_installs_chromium_as_root_and_otherwise_names_the_command(tmp_path, uid, expected):
    """scripts/test.sh, dry run, with no browser: root (as CI runs) installs Debian's chromium and
    goes on; anyone else gets one line with the command to run, and nothing is set up or run."""
    env = {"DRY_RUN": "1", "VENV": str(tmp_path / "venv"), "CHROMIUM": "no-such-browser"}
    result = run_script(TEST_SH, env, "-x", bin_dirs=[_id_reporting(uid, tmp_path / "bin")], timeout=60)
    lines = [line.strip() for line in result.stdout.splitlines()]
    if expected == "install":
        assert result.returncode == 0, result.stderr
        assert lines[:2] == ["apt-get update", "env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium"]
        assert lines[-1] == f"{tmp_path / 'venv'}/bin/python -m pytest -x"  # then the suite, whole
    else:
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == (
            "error: no-such-browser not found; the tests need Chromium:"
            " sudo apt-get update && sudo apt-get install -y chromium\n"
        )


def test_the_test_command_leaves_an_installed_chromium_alone(tmp_path):
    browser = write_executable(tmp_path / "bin" / "my-chromium", "#!/usr/bin/env bash\nexit 0\n")
    env = {"DRY_RUN": "1", "VENV": str(tmp_path / "venv"), "CHROMIUM": str(browser), "SKIP_LINT": "1"}
    result = run_script(TEST_SH, env, bin_dirs=[_id_reporting(0, tmp_path / "ids")], timeout=60)
    assert result.returncode == 0 and "apt-get" not in result.stdout
    assert result.stdout.splitlines()[-1].strip() == f"{tmp_path / 'venv'}/bin/python -m pytest"


def test_the_test_command_refuses_a_dry_run_other_than_0_or_1(tmp_path):
    result = run_script(TEST_SH, {"DRY_RUN": "yes", "VENV": str(tmp_path / "venv")}, timeout=60)
    assert result.returncode == 2 and result.stderr == "error: DRY_RUN=yes must be 0 or 1 (nothing was run)\n"


def _markup(field: str) -> str:
    """Text that would run script, load an image and add an element if a page let it through."""
    return (
        f'<script>document.body.dataset.ran="{field}"</script>'
        f'<img src="x" onerror="document.body.dataset.ran=\'{field}\'"><b class="{field}">{field}</b>" x="'
    )


TEXT_FIELDS = ("item_id", "question", "mode", "status", "answer", "error")
NUMBER_FIELDS = ("context_tokens", "dropped_tokens", "rollout_id", "reward", "advantage")
TURN_TEXT_FIELDS = ("text", "recall_query", "recalled")
TURN_NUMBER_FIELDS = ("step", "memory_tokens", "state_reward")


def _hostile_record() -> dict:
    record = {field: _markup(field) for field in (*TEXT_FIELDS, *NUMBER_FIELDS, "source", "eval_set", "group_index")}
    record |= {"schema": SCHEMA, "ground_truths": [_markup("gold")], "scores": {"sub_em": _markup("score")}}
    record |= {"has_box": False, "extra": {"note": _markup("extra")}}
    memory = {field: _markup(f"memory_{field}") for field in (*TURN_TEXT_FIELDS, *TURN_NUMBER_FIELDS)}
    memory |= {"kind": "memory", "cut": False, "finish_reason": _markup("finish"), "prompt_tokens": 5}
    memory |= {"response_tokens": _markup("memory_response_tokens"), "advantage": None}
    final = {**memory, "kind": "final", "text": _markup("final_text"), "response_tokens": _markup("final_tokens")}
    record["turns"] = [memory, final]
    return record


@pytest.mark.parametrize(
    "field", ["context_tokens", "rollout_id", "scores.sub_em", "turns.0.step", "turns.1.response_tokens"]
)
def test_markup_where_a_number_belongs_is_refused_when_read_naming_the_field(tmp_path, capsys, field):
    record = {field: _markup(field) for field in TEXT_FIELDS} | {"source": "eval", "schema": SCHEMA}
    record |= {
        "ground_truths": [],
        "scores": {"sub_em": 1.0},
        "has_box": False,
        "context_tokens": 1,
        "dropped_tokens": 0,
    }
    turn = {"kind": "memory", "step": 0, "text": "m", "cut": False, "finish_reason": "stop", "prompt_tokens": 1}
    record["turns"] = [
        turn | {"response_tokens": 1, "memory_tokens": 1},
        turn | {"kind": "final", "response_tokens": 1},
    ]
    record["turns"][1]["memory_tokens"] = 1
    *parents, last = field.split(".")
    holder = record
    for part in parents:
        holder = holder[int(part)] if part.isdigit() else holder[part]
    holder[last] = _markup(field)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert view.main([str(path), "-o", str(tmp_path / "page.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"r.jsonl:1: field {field}" in err
    assert not (tmp_path / "page.html").exists()


def test_markup_in_any_field_of_a_record_is_shown_as_text_and_never_runs(tmp_path):
    """Records are model output and files anyone may edit: markup in every text field, and in the
    fields that should hold numbers (a record made in memory, past the reader that refuses them: the
    page's own guarantee, autoescaping), reads on the page as the text it is, in a real browser; no
    script but the page's own runs, no element of it is made, and no console message appears."""
    data = _hostile_record()
    record = TrajectoryRecord(**{**data, "turns": [TurnRecord(**turn) for turn in data["turns"]]})
    run = RunView("records", tmp_path / "r.jsonl", [record], {f"rollout {record.rollout_id}": [record]})
    write_page(run, tmp_path / "page.html", ViewLimits())

    rendered = render(tmp_path / "page.html", tmp_path / "profile")
    assert rendered.console == []
    page = PageText()
    page.feed(rendered.dom)
    assert page.body_attrs.get("data-ready") == "1" and "data-ran" not in page.body_attrs
    assert page.tags["script"] == 2 and page.tags["img"] == 0 and page.tags["b"] == 0  # the page's own JSON and script
    shown = [*TEXT_FIELDS, *NUMBER_FIELDS, "gold", "score", "final_text", "final_tokens"]
    shown += [f"memory_{field}" for field in (*TURN_TEXT_FIELDS, *TURN_NUMBER_FIELDS)]
    assert [field for field in shown if _markup(field) not in page.text] == []
