"""The viewer: one offline HTML page per run, showing each memory with what changed since the one
before, the answer against the gold, and training curves; checked in a real headless Chromium."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from mem_agent import view
from mem_agent.observability.run_folders import load_run
from mem_agent.observability.trajectory_records import TrajectoryRecord, TurnRecord, append_records
from mem_agent.observability.viewer import rollout_curves
from mem_agent.observability.word_diff import diff_html, words
from support.browser import MemoryText, render
from support.scripts import PROJECT_ROOT, run_script, write_executable
from support.trajectory_runs import evaluation_run, memories_for, training_run

DOCS_SCREENSHOT = PROJECT_ROOT / "docs" / "images" / "viewer.png"
TEST_SH = PROJECT_ROOT / "scripts" / "test.sh"


def _visible(fragment: str) -> str:
    """What a diff fragment reads as with changes unmarked: deleted words gone, tags gone, entities decoded."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<del>.*?</del>", "", fragment, flags=re.S)))


def test_words_put_back_together_give_the_text():
    text = "  two  spaces\nand a\ttab  "
    assert "".join(words(text)) == text


def test_a_diff_reads_as_the_new_memory_and_counts_the_words_changed():
    """Unmarking a diff leaves the new memory exactly; the markup escapes the model's own '<', '&'."""
    old, new = "the river is long. <b>", "the river is wide. <b> & more"
    fragment, counts = diff_html(old, new)
    assert _visible(fragment) == new
    assert "<del>long. </del>" in fragment and "<ins>wide. </ins>" in fragment
    assert "&lt;b&gt;" in fragment and "<b>" not in fragment.replace("<del>", "").replace("<ins>", "")
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
        (["{tmp}/eval"], "results_50.jsonl is not an evaluator's results file (KeyError"),
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
    assert not re.search(r"\b(src|href)=|@import|url\(", text)  # nothing fetched: works offline

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

    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", screenshot.read_bytes()[16:24])
    assert (width, height) == (1100, 900)


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
    items = re.findall(r'(<details class="item"[^>]*>).*?#(\d+)</span>', dom, flags=re.S)
    return [(re.search(r'data-outcome="(\w+)"', tag).group(1), item) for tag, item in items if 'hidden=""' not in tag]


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


def test_text_that_looks_like_markup_is_shown_never_run(tmp_path):
    """Questions, answers, memories and recall queries are model or user text: every one is escaped,
    so the page's only script is its own and no attribute can be broken out of."""
    evil = '<script>alert(1)</script>" onmouseover="x'
    turns = [
        TurnRecord("memory", 0, evil, False, "stop", 5, 5, 5, recall_query=evil, recalled=evil, state_reward=0.5),
        TurnRecord("final", 1, evil, False, "stop", 5, 5, 5),
    ]
    record = TrajectoryRecord(
        source="eval", item_id=evil, question=evil, ground_truths=[evil], mode="rememr1", status="completed",
        answer=evil, scores={"sub_em": 0.0}, has_box=False, context_tokens=10, dropped_tokens=0, turns=turns,
    )  # fmt: skip
    path = tmp_path / "r.jsonl"
    append_records(path, [record])
    assert view.main([str(path), "-o", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.count("<script>") == 1 and "onmouseover=" not in page.replace("onmouseover=&quot;", "")
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8  # every place it is shown
    assert "state reward +0.500" in page
