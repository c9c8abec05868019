"""The viewer shows every suite truthfully: each question scored by its suite's headline metric as
its results line holds it (never by a trajectory record's HQA-style score), partial credit as its
number, one table per suite naming its own metric, filters keyed by suite, and older summary.json
files read as the suite contract's cells. The run is tests/support/suite_folders.py's (its
docstring lists every question and its outcome)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mem_agent import view
from mem_agent.evaluation.reporting import EvalFileReport, write_reports
from mem_agent.observability.run_folders import load_run
from mem_agent.observability.suite_tables import suite_tables
from support.browser import PageText, render
from support.suite_folders import older_summary, suites_folder

OUTCOMES = {
    ("50", "0"): "right",
    ("50", "1"): "wrong",
    ("50", "2"): "failed",
    ("niah_single_1_8192", "0"): "right",
    ("niah_single_1_8192", "1"): "wrong",
    ("niah_multivalue_8192", "0"): "partial",
    ("niah_multivalue_8192", "1"): "right",
    ("qa_1_16384", "0"): "right",
    ("longbench_hotpotqa", "0"): "partial",
    ("longbench_hotpotqa", "1"): "wrong",
}
_ITEM = re.compile(
    r'<details class="item"[^>]*>\s*<summary><span class="badge (\w+)">([^<]*)</span>'
    r'<span class="group">(\w+) · #(\d+)</span>.*?<span class="row">(.*?)</span></summary>',
    re.S,
)


def _page_items(html: str) -> dict[tuple[str, str], tuple[str, str, dict[str, str]]]:
    """(label, id) -> (outcome, badge, the collapsed row's facts) of every question on the page."""
    return {
        (label, item): (outcome, badge, dict(re.findall(r'<span class="k">([^<]*)</span> ([^<]*)</span>', row)))
        for outcome, badge, label, item, row in _ITEM.findall(html)
    }


def _items_data(html: str) -> list[dict]:
    return json.loads(re.search(r'<script type="application/json" id="items-data">(.*?)</script>', html, re.S)[1])


def _write(run_dir: Path, page: Path, *flags: str) -> str:
    assert view.main([str(run_dir), "-o", str(page), *flags]) == 0
    return page.read_text(encoding="utf-8")


@pytest.mark.parametrize("trajectories", [True, False], ids=["with-trajectories", "results-only"])
def test_each_question_is_scored_by_its_suites_metric_from_its_results_line(tmp_path, trajectories):
    """niah_multivalue #0 found 1 of 4 values: string_match_all 0.25 on its results line, sub_em 1
    on its trajectory record. It is partial 0.25 either way, and its row names string_match_all;
    an older RULER line's share under `sub_em` is shown as string_match_all."""
    run_dir = suites_folder(tmp_path / "eval", trajectories=trajectories)
    items = _page_items(_write(run_dir, tmp_path / "page.html"))
    assert {key: outcome for key, (outcome, _, _) in items.items()} == OUTCOMES
    _, badge, row = items[("niah_multivalue_8192", "0")]
    assert (badge, row["string_match_all"]) == ("partial 0.25", "0.25") and "sub_em" not in row
    assert items[("niah_single_1_8192", "0")][2]["string_match_all"] == "1.00"
    assert items[("qa_1_16384", "0")][2]["sub_em"] == "1.00"
    _, badge, row = items[("longbench_hotpotqa", "0")]
    assert (badge, row["qa_f1"]) == ("partial 0.40", "0.40") and "sub_em" not in row
    assert items[("longbench_hotpotqa", "1")][1] == "wrong: empty"
    assert items[("50", "0")][2]["sub_em"] == "1.00"


def test_a_trajectory_keeps_its_memories_but_never_its_own_score(tmp_path):
    """The record still brings the memories; the facts list the results line's scores only."""
    run = load_run(suites_folder(tmp_path / "eval"))
    record = run.groups["niah_multivalue_8192"][0]
    assert record.scores == {"string_match_all": 0.25, "strict": 0.0}
    assert [turn.kind for turn in record.turns] == ["memory", "memory", "final"]


def test_one_trajectory_file_is_scored_by_the_results_file_beside_it(tmp_path):
    """`view trajectories_<label>.jsonl` alone: its results file beside it decides the scores."""
    run_dir = suites_folder(tmp_path / "eval")
    items = _page_items(_write(run_dir / "trajectories_niah_multivalue_8192.jsonl", tmp_path / "page.html"))
    assert {key: badge for key, (_, badge, _) in items.items()} == {
        ("niah_multivalue_8192", "0"): "partial 0.25",
        ("niah_multivalue_8192", "1"): "right",
    }


def _as_text(tables) -> list[tuple[str, list[str], list[list[str]]]]:
    return [
        (t.suite, t.header, [[c.text + (f" ({c.note})" if c.note else "") for c in row] for row in t.rows])
        for t in tables
    ]


EXPECTED_TABLES = [
    (
        "ruler_hqa",
        ["docs", "items", "failed", "ctx tokens", "sub_em", "em", "f1", "strict"],
        [["50", "3", "1", "6,000", "33.3", "33.3", "33.3", "33.3"]],
    ),
    (
        "ruler",
        ["split", "metric", "8K", "16K"],
        [
            ["niah_single_1", "string_match_all", "50.0 (2 items · 0 failed)", "-"],
            ["niah_multivalue", "string_match_all", "62.5 (2 items · 0 failed)", "-"],
            ["qa_1", "sub_em", "-", "100.0 (1 item · 0 failed)"],
        ],
    ),
    (
        "longbench",
        ["task", "items", "failed", "empty", "ctx tokens", "qa_f1"],
        [["hotpotqa", "2", "0", "1", "6,000", "40.0"]],
    ),
]


def test_every_suite_has_its_own_table_naming_its_own_metric(tmp_path):
    """RULER-HQA per length, RULER as a split x length grid (score, items, failed per cell; '-'
    where not run), LongBench a row per task; each page title names its suite and metric."""
    run_dir = suites_folder(tmp_path / "eval")
    assert _as_text(suite_tables(load_run(run_dir).summary)) == EXPECTED_TABLES
    html = _write(run_dir, tmp_path / "page.html")
    assert re.findall(r'<table class="summary" data-suite="(\w+)">', html) == ["ruler_hqa", "ruler", "longbench"]
    titles = re.findall(r"<h2>([^<]*)</h2>\s*<table", html)
    assert [title.split(" · ")[0] for title in titles] == ["RULER-HQA", "RULER", "LongBench QA"]
    assert "sub_em" not in titles[1] and "qa_f1" in titles[2]


def test_an_older_summary_shows_the_same_tables(tmp_path):
    """A summary.json from before the suite contract (RULER cells under "ruler", their score in
    sub_em; RULER-HQA cells without suite) gives the same RULER-HQA and RULER tables; its questions
    keep their outcomes."""
    run_dir = suites_folder(tmp_path / "eval")
    older_summary(run_dir)
    assert _as_text(suite_tables(load_run(run_dir).summary)) == EXPECTED_TABLES[:2]  # it had no LongBench cell
    items = _page_items(_write(run_dir, tmp_path / "page.html"))
    assert {key: outcome for key, (outcome, _, _) in items.items()} == OUTCOMES


def test_the_summary_the_evaluator_writes_gives_every_suite_its_table(tmp_path):
    """summary.json as our evaluator's report writes it (RULER-HQA and RULER cells, one run) is read
    into the same tables: vt by string_match_all, qa_1 by sub_em, each at its length."""
    reports = []
    for label, score in (("50", 40.0), ("vt_8192", 75.0), ("vt_16384", 25.0), ("qa_1_8192", 50.0)):
        (tmp_path / f"results_{label}.jsonl").write_text("")
        summary = {"items": 2, "completed": 2, "failed": 0, "missing": 0, "sub_em": score, "em": 0.0, "f1": 0.0}
        summary |= {"strict": 0.0, "mean_context_tokens": 900.0, "reused": 0}
        reports.append(EvalFileReport(label, tmp_path / f"eval_{label}.json", summary))
    write_reports(reports, tmp_path, [{"mode": "memagent"}], plot=False)
    tables = _as_text(suite_tables(load_run(tmp_path).summary))
    assert [(suite, header) for suite, header, _ in tables] == [
        ("ruler_hqa", ["docs", "items", "failed", "ctx tokens", "sub_em", "em", "f1", "strict"]),
        ("ruler", ["split", "metric", "8K", "16K"]),
    ]
    assert tables[1][2] == [
        ["vt", "string_match_all", "75.0 (2 items · 0 failed)", "25.0 (2 items · 0 failed)"],
        ["qa_1", "sub_em", "50.0 (2 items · 0 failed)", "-"],
    ]


def test_the_filters_key_each_question_with_its_suite(tmp_path):
    """The page's JSON block keys each question by suite, `suite/task` and `suite/length`, and the
    filters offer exactly those keys; the outcome filter offers partial."""
    html = _write(suites_folder(tmp_path / "eval"), tmp_path / "page.html")
    keys = [(entry["task"], entry["length"], entry["outcome"]) for entry in _items_data(html)]
    assert keys[:3] == [("ruler_hqa/hotpotqa", "ruler_hqa/50", o) for o in ("right", "wrong", "failed")]
    assert keys[5] == ("ruler/niah_multivalue", "ruler/8192", "partial")
    assert keys[8] == ("longbench/hotpotqa", "", "partial")
    options = {
        name: re.findall(r'<option value="([^"]*)"', select)
        for name, select in re.findall(r'<select id="(\w+)">(.*?)</select>', html, re.S)
    }
    assert options["outcome"] == ["all", "right", "partial", "wrong", "failed"]
    assert options["task"] == [
        "all",
        "ruler_hqa/hotpotqa",
        "ruler",
        "ruler/niah_single_1",
        "ruler/niah_multivalue",
        "ruler/qa_1",
        "longbench/hotpotqa",
    ]
    assert options["length"] == ["all", "ruler_hqa/50", "ruler/8192", "ruler/16384"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--only", "partial"], [("niah_multivalue_8192", "0"), ("longbench_hotpotqa", "0")]),
        (["--lengths", "8192"], [(label, i) for label in ("niah_single_1_8192", "niah_multivalue_8192") for i in "01"]),
        (["--lengths", "qa_1_16384", "50", "--only", "right"], [("50", "0"), ("qa_1_16384", "0")]),
    ],
)
def test_only_and_lengths_choose_by_suite_outcome_label_or_length(tmp_path, flags, expected):
    html = _write(suites_folder(tmp_path / "eval"), tmp_path / "page.html", *flags)
    assert list(_page_items(html)) == expected


def test_a_length_no_section_has_is_exit_2(tmp_path, capsys):
    run_dir = suites_folder(tmp_path / "eval")
    assert view.main([str(run_dir), "-o", str(tmp_path / "page.html"), "--lengths", "4096"]) == 2
    assert "--lengths 4096" in capsys.readouterr().err


def _visible(dom: str) -> list[tuple[str, str]]:
    pattern = r'<details class="item"([^>]*)>\s*<summary><span class="badge \w+">[^<]*</span>'
    pattern += r'<span class="group">(\w+) · #(\d+)<'
    return [(label, item) for attrs, label, item in re.findall(pattern, dom) if "hidden" not in attrs]


def test_the_page_filters_by_suite_task_length_and_partial_in_chromium(tmp_path):
    """In a real browser: a link opens the page filtered to one suite, one split, one length or the
    partial answers, the script runs to its end, and the tables are on screen."""
    page = tmp_path / "page.html"
    _write(suites_folder(tmp_path / "eval"), page)
    ruler = render(page, tmp_path / "profile", fragment="task=ruler&length=ruler/8192", screenshot=tmp_path / "s.png")
    assert ruler.console == []
    parsed = PageText()
    parsed.feed(ruler.dom)
    assert parsed.body_attrs.get("data-ready") == "1" and parsed.tags["table"] == 3
    assert _visible(ruler.dom) == [(label, i) for label in ("niah_single_1_8192", "niah_multivalue_8192") for i in "01"]
    split = render(page, tmp_path / "profile", fragment="task=ruler/qa_1")
    assert _visible(split.dom) == [("qa_1_16384", "0")]
    partial = render(page, tmp_path / "profile", fragment="outcome=partial")
    assert _visible(partial.dom) == [("niah_multivalue_8192", "0"), ("longbench_hotpotqa", "0")]
    assert '<span id="shown">2</span>' in partial.dom
