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
from support.exits import exit_status
from support.scripts import PROJECT_ROOT, run_script, write_executable
from support.trainer_rows import trainer_rows
from support.training_folder import hooked_training_run
from support.trajectory_runs import evaluation_run, memories_for, training_run

DOCS_SCREENSHOT = PROJECT_ROOT / "docs" / "images" / "viewer.png"
TEST_SH = PROJECT_ROOT / "scripts" / "test.sh"
SAMPLE_OF_4 = {"MEM_TRAJECTORY_COUNT": "4"}


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


@pytest.fixture(scope="module")
def rows(synthetic_rows) -> list[dict]:
    return trainer_rows(synthetic_rows, 2)


@pytest.mark.usefixtures("fresh_settings")
def test_training_curves_are_the_runs_own_figures_and_never_the_sample(tokenizer, rows, tmp_path):
    """A real hooked run where one question is always wrong: 2 of 8 trajectories right (0.25) per
    rollout. The sample of 4 is picked half right, so its share is 0.5; the curves draw 0.25, and
    the page labels the records as a sample."""
    save = hooked_training_run(tokenizer, rows, tmp_path / "train", [0, 1], hard=[rows[0]["prompt"]], **SAMPLE_OF_4)
    run = load_run(save)
    assert [r.scores.get("strict") for r in run.records].count(1.0) == len(run.records) / 2 == 4  # the sample
    memories = [[t for t in r.turns if t.kind == "memory"] for r in run.records]
    assert all(
        turns[0].chunk_start == 0 and turns[-1].chunk_end == r.context_tokens
        for r, turns in zip(run.records, memories, strict=True)
    )
    curves = rollout_curves(run.rollout_metrics)
    assert curves["accuracy (strict)"] == ([0.0, 1.0], [0.25, 0.25])
    assert curves["groups without reward contrast (share)"][1] == [0.5, 0.5]  # the hard question's group
    page = tmp_path / "train.html"
    assert view.main([str(save), "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.count("<svg") == 1 and all(name in text for name in CURVES)
    assert 'id="sample-heading"' in text


@pytest.mark.usefixtures("fresh_settings")
def test_a_training_page_keeps_a_prompts_trajectories_together_with_its_groups_rewards(tokenizer, rows, tmp_path):
    """In Chromium: per rollout, the sampled trajectories sit by prompt group, each row names its
    group with the rewards of all 4 of the group's trajectories (recorded or not): the hard
    question's group has no contrast, the other has; and the page has no console message."""
    save = hooked_training_run(tokenizer, rows, tmp_path / "train", [0, 1], hard=[rows[0]["prompt"]], **SAMPLE_OF_4)
    page = tmp_path / "train.html"
    assert view.main([str(save), "-o", str(page)]) == 0
    screenshot = tmp_path / "viewer.png"
    rendered = render(page, tmp_path / "profile", screenshot=screenshot, size="1100,1300")
    assert rendered.console == []
    groups = re.findall(
        r'class="group">rollout (\d+) · #\d+</span>.*?class="prompt-group">([^<]*)<', rendered.dom, re.S
    )
    assert [rollout for rollout, _ in groups] == ["1"] * 4 + ["0"] * 4  # the latest rollout first
    lines = [line for _, line in groups[:4]]
    assert lines == sorted(lines)  # a group's trajectories together
    assert {line.split(" · ")[0]: line.split(" · ", 1)[1] for line in lines} == {
        "group 0": "rewards 0 0 0 0 · spread 0.00 · no contrast",
        "group 1": "rewards 1 0 1 0 · spread 1.00 · contrast",
    }
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_evaluation_page_opens_with_its_settings_and_rows_show_what_triage_needs(tokenizer, tmp_path):
    """The settings line from summary.json, and per collapsed row the gold, the boxed answer, the
    score, the chunks and the cut memories; sorting by chunks, in Chromium, puts the longer first."""
    facts = {
        "mode": "memagent",
        "model": "tiny",
        "config": {"chunk_tokens": 512, "max_memory_tokens": 64, "max_final_tokens": 32},
        "sampling": {"temperature": 0.7, "top_p": 0.95},
        "data_sha256": {"50": "ab" * 32},
        "corpus_sha256": {"100": "cd" * 32},
    }
    run_dir = evaluation_run(tokenizer, tmp_path / "eval", {"50": 2, "100": 3}, questions=2, facts=facts)
    page = tmp_path / "eval.html"
    assert view.main([str(run_dir), "-o", str(page)]) == 0
    rendered = render(page, tmp_path / "profile", fragment="sort=chunks")
    assert rendered.console == []
    settings = dict(re.findall(r"<div><dt>([^<]*)</dt><dd>([^<]*)</dd></div>", rendered.dom))
    assert settings == {
        "model": "tiny",
        "mode": "memagent",
        "chunk tokens": "512",
        "memory limit": "64",
        "answer limit": "32",
        "temperature": "0.7",
        "top_p": "0.95",
        "sha256 eval_50": "ab" * 6,
        "sha256 corpus of eval_100": "cd" * 6,
    }
    rows = re.findall(
        r'class="group">(\w+) · #(\d+)</span>.*?<span class="row">(.*?)</span></summary>', rendered.dom, re.S
    )
    assert [(label, item) for label, item, _ in rows] == [("100", "0"), ("100", "1"), ("50", "0"), ("50", "1")]
    facts_of = {
        (label, item): dict(re.findall(r'<span class="k">([^<]*)</span> ([^<]*)</span>', row))
        for label, item, row in rows
    }
    assert facts_of[("100", "1")] == {
        "gold": "answer1",
        "answer": "nothing",
        "sub_em": "0.00",
        "chunks": "3",
        "cut memories": "1",
    }
    assert facts_of[("50", "0")]["answer"] == "answer0" and facts_of[("50", "0")]["sub_em"] == "1.00"


def test_a_training_folder_without_metrics_draws_no_curve_from_its_records(tokenizer, tmp_path):
    run_dir = training_run(tokenizer, tmp_path / "train", rollouts=2, per_rollout=2)
    assert view.main([str(run_dir), "-o", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "<svg" not in page and "metrics.jsonl" in page and page.count('<details class="item"') == 4


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


def _failing(run_dir: Path, label: str, item: str) -> None:
    """Mark one result as failed, as the evaluator writes a question whose server gave up."""
    path = run_dir / f"results_{label}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line["id"] == item:
            line |= {"status": "failed", "error": "server gave up", "sub_em": 0.0}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _items(page: Path) -> list[tuple[str, str, str]]:
    """(outcome, length, id) of every question on the page, in page order."""
    text = page.read_text(encoding="utf-8")
    return re.findall(r'<span class="badge (\w+)">.*?class="group">(\w+) · #(\d+)<', text)


def test_a_capped_page_keeps_failures_first_then_wrong_answers_and_ids_sort_as_numbers(tokenizer, tmp_path):
    """12 questions, 4 wrong (ids 0, 3, 6, 9), id 5 failed: a cap of 6 keeps the failure, every
    wrong answer and one right one, in numeric id order, and a note names the flag."""
    run_dir = evaluation_run(
        tokenizer, tmp_path / "eval", {"50": 2}, questions=12, trajectories=False, right=lambda i: i % 3
    )
    _failing(run_dir, "50", "5")
    page = tmp_path / "page.html"
    assert view.main([str(run_dir), "-o", str(page), "--max-items", "6"]) == 0
    assert _items(page) == [
        ("wrong", "50", "0"),
        ("right", "50", "1"),
        ("wrong", "50", "3"),
        ("failed", "50", "5"),
        ("wrong", "50", "6"),
        ("wrong", "50", "9"),
    ]
    assert "--max-items 6" in page.read_text(encoding="utf-8")
    assert view.main([str(run_dir), "-o", str(page)]) == 0
    assert [item for _, _, item in _items(page)] == [str(i) for i in range(12)]  # 2 before 10


def test_only_lengths_and_ids_choose_the_questions_on_the_page(tokenizer, tmp_path):
    run_dir = evaluation_run(tokenizer, tmp_path / "eval", {"50": 2, "100": 3}, questions=4)
    page = tmp_path / "page.html"
    assert view.main([str(run_dir), "-o", str(page), "--only", "wrong"]) == 0
    assert _items(page) == [("wrong", "50", "1"), ("wrong", "50", "3"), ("wrong", "100", "1"), ("wrong", "100", "3")]
    assert view.main([str(run_dir), "-o", str(page), "--lengths", "100", "--only", "right"]) == 0
    assert _items(page) == [("right", "100", "0"), ("right", "100", "2")]
    assert view.main([str(run_dir), "-o", str(page), "--ids", "2", "100:3", "50:9"]) == 0
    assert _items(page) == [("right", "50", "2"), ("right", "100", "2"), ("wrong", "100", "3")]
    assert "50:9" in page.read_text(encoding="utf-8")  # named as not found


@pytest.mark.parametrize("kind", ["evaluation", "training"])
def test_a_length_the_run_does_not_hold_is_one_line_and_exit_2(tokenizer, tmp_path, capsys, kind):
    if kind == "evaluation":
        run_dir = evaluation_run(tokenizer, tmp_path / "eval", {"50": 2}, questions=2)
    else:
        run_dir = training_run(tokenizer, tmp_path / "train", rollouts=1, per_rollout=2)
    assert view.main([str(run_dir), "-o", str(tmp_path / "page.html"), "--lengths", "75"]) == 2
    err = capsys.readouterr().err
    assert "--lengths" in err and err.count("\n") == 1 and not (tmp_path / "page.html").exists()


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
    assert exit_status(view.main, [*argv, "-o", str(tmp_path / "out.html")]) == 2
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

    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", screenshot.read_bytes()[16:24])
    assert (width, height) == (1100, 900)


@pytest.mark.usefixtures("fresh_settings")
def test_a_training_page_without_matplotlib_shows_everything_but_the_curves(tokenizer, rows, tmp_path, monkeypatch):
    """Plots need the eval extra; without it the page still holds every question and names the extra."""
    run_dir = hooked_training_run(tokenizer, rows, tmp_path / "train", [0], evaluate=False, **SAMPLE_OF_4)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
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
    assert re.findall(r"<details[^>]*\bopen\b", wrong.dom) == []  # nothing opens by default
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
