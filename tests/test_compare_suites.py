"""compare and the paper comparison over every suite: each cell (suite, task, length) two runs share
is paired by its own headline metric, each suite gets one pooled average, a suite in one run only
is named and not paired, a RULER-only run is compared, and an older summary.json (RULER cells under
`ruler`) is read as the current shape. Beside a published table: the run's and the paper's item
counts and intervals, the difference, and whether the run read the paper's files."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from mem_agent import compare
from mem_agent.evaluation.cell_scores import wilson_interval
from mem_agent.evaluation.paper_beside import beside_run
from mem_agent.evaluation.paper_tables import load_tables
from mem_agent.evaluation.summary_file import read_summary
from support.suite_runs import Cell, suite_run


def _cells(hqa, single, qa, longbench=None) -> list[Cell]:
    cells = [
        Cell("ruler_hqa", "hotpotqa", 50, "sub_em", hqa),
        Cell("ruler", "niah_single_1", 8192, "string_match_all", single),
        Cell("ruler", "qa_1", 8192, "sub_em", qa),
    ]
    return cells + ([Cell("longbench", "hotpotqa", None, "qa_f1", longbench)] if longbench else [])


def _compare(tmp_path, *runs, extra=()) -> tuple[int, dict]:
    out = tmp_path / "cmp"
    code = compare.main([*map(str, runs), "--output-dir", str(out), *extra])
    numbers = json.loads((out / "compare.json").read_text()) if (out / "compare.json").is_file() else {}
    return code, numbers


def test_every_shared_cell_is_paired_by_its_own_metric_with_an_average_per_suite(tmp_path, capsys):
    """A holds LongBench too: it is named as A's only, and not paired. The RULER average pools
    the six shared items of both splits; no row averages across suites."""
    a = suite_run(tmp_path / "a", _cells([1, 1, 1, 0], [1, 1, 0.5, 0.25], [1, 0], longbench=[0.5, 0.5]))
    b = suite_run(tmp_path / "b", _cells([1, 0, 0, 0], [1, 0, 0.5, 0.25], [0, 0]))
    code, numbers = _compare(tmp_path, a, b)
    assert code == 0
    rows = [(p["suite"], p["label"], p["metric"], p["questions"]) for p in numbers["pairs"]]
    assert rows == [
        ("ruler_hqa", "50", "sub_em", 4),
        ("ruler_hqa", "average", "sub_em", 4),
        ("ruler", "niah_single_1_8192", "string_match_all", 4),
        ("ruler", "qa_1_8192", "sub_em", 2),
        ("ruler", "average", "headline", 6),
    ]
    differences = {(p["suite"], p["label"]): p["difference"] for p in numbers["pairs"]}
    assert differences[("ruler_hqa", "50")] == pytest.approx(50.0)
    assert differences[("ruler", "niah_single_1_8192")] == pytest.approx(25.0)
    assert differences[("ruler", "average")] == pytest.approx(100 * 2 / 6)  # (1 + 1) over six items
    average = numbers["pairs"][-1]
    assert (average["first_items"], average["first_all"]) == (6, pytest.approx((68.75 * 4 + 50.0 * 2) / 6))
    assert numbers["suites"] == {
        "memagent: a": ["ruler_hqa", "ruler", "longbench"],
        "memagent: b": ["ruler_hqa", "ruler"],
    }
    assert numbers["cells"]["memagent: a"]["longbench_hotpotqa"]["metric"] == "qa_f1"
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: ")]
    assert [line for line in warnings if "longbench" in line and "memagent: a" in line]
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:4] == b"\x89PNG"


def test_partial_credit_counts_as_its_number_and_a_higher_score_is_a_disagreement(tmp_path):
    a = suite_run(tmp_path / "a", [Cell("ruler", "niah_multivalue", 8192, "string_match_all", [0.25, 1, 0])])
    b = suite_run(tmp_path / "b", [Cell("ruler", "niah_multivalue", 8192, "string_match_all", [0, 1, None])])
    code, numbers = _compare(tmp_path, a, b)
    assert code == 0
    assert numbers["pairs"][0]["questions"] == 2 and numbers["pairs"][0]["difference"] == pytest.approx(12.5)
    assert numbers["disagreements"][0]["ids"] == {
        "niah_multivalue_8192": ["0"]
    }  # 0.25 above 0; 0 is not above a failure
    assert numbers["disagreements"][1]["ids"] == {}


def test_a_ruler_only_run_is_compared_not_refused(tmp_path):
    a = suite_run(tmp_path / "a", _cells([], [1, 1], [1, 1])[1:])
    b = suite_run(tmp_path / "b", _cells([], [1, 0], [0, 1])[1:])
    code, numbers = _compare(tmp_path, a, b)
    assert code == 0
    assert {p["suite"] for p in numbers["pairs"]} == {"ruler"} and numbers["pairs"][-1]["questions"] == 4


def test_an_item_answered_with_nothing_leaves_the_pair(tmp_path):
    """MemAgent's mean leaves an empty answer out; so does the pair."""
    a = suite_run(tmp_path / "a", [Cell("ruler_hqa", "hotpotqa", 50, "sub_em", [1, 0, 1], empty=frozenset({1}))])
    b = suite_run(tmp_path / "b", [Cell("ruler_hqa", "hotpotqa", 50, "sub_em", [0, 0, 1])])
    code, numbers = _compare(tmp_path, a, b)
    assert code == 0 and numbers["pairs"][0]["questions"] == 2 and numbers["pairs"][0]["difference"] == 50.0


def test_an_older_summary_with_ruler_cells_apart_is_read_as_the_current_shape(tmp_path):
    """RULER cells under `ruler` with string_match_all written as sub_em, results lines likewise:
    read as ruler cells with their own metric, and paired with a current run of the same scores."""
    cells = _cells([1, 0], [1, 0.5], [1, 0])
    old = suite_run(tmp_path / "old", cells, old_shape=True)
    new = suite_run(tmp_path / "new", cells)
    read = {cell["label"]: cell for cell in read_summary(old / "summary.json")["results"]}
    assert read["niah_single_1_8192"]["suite"] == "ruler" and read["niah_single_1_8192"]["task"] == "niah_single_1"
    assert read["niah_single_1_8192"]["metric"] == "string_match_all"
    assert read["niah_single_1_8192"]["string_match_all"] == 75.0
    assert (read["qa_1_8192"]["metric"], read["50"]["suite"], read["50"]["length"]) == ("sub_em", "ruler_hqa", 50)
    code, numbers = _compare(tmp_path, old, new)
    assert code == 0
    assert all(p["difference"] == 0.0 for p in numbers["pairs"]) and len(numbers["pairs"]) == 5
    assert numbers["cells"]["memagent: old"]["niah_single_1_8192"]["value"] == 75.0


@pytest.mark.parametrize("metric", ["ruler_average", "headline"])
def test_the_ruler_average_table_is_set_beside_a_ruler_run(tmp_path, metric):
    """The run's average at 8K is the unweighted mean of its splits (75 and 50); the figure gives
    no item count, so the paper's interval is n/a, and no file hash is known."""
    run = suite_run(tmp_path / "r", _cells([], [1, 0.5], [1, 0])[1:])
    argv = ["--paper", "memagent-v1-ruler-average:RL-MemAgent-7B", "--metric", metric]
    assert compare.main([str(run), *argv, "--output-dir", str(tmp_path / "out")]) == 0
    (table,) = json.loads((tmp_path / "out" / "paper_comparison.json").read_text())
    column = table["lengths"]["8192"]
    assert column["runs"] == {"memagent: r": 62.5} and column["run_items"] == {"memagent: r": 4}
    low, high = column["run_interval"]["memagent: r"]
    assert low <= 62.5 <= high
    assert column["paper"] == {"RL-MemAgent-7B": 93.03} and column["paper_items"] is None
    assert column["paper_interval"] == {"RL-MemAgent-7B": None}
    assert column["difference"] == {"memagent: r": {"RL-MemAgent-7B": pytest.approx(62.5 - 93.03)}}
    assert column["run_files"] == {"memagent: r": "unknown"}


def test_the_hqa_table_shows_both_counts_and_intervals(tmp_path):
    run = suite_run(tmp_path / "h", [Cell("ruler_hqa", "hotpotqa", 50, "sub_em", [1, 1, 1, 0, None])])
    argv = ["--paper", "memagent-v1-ruler-hqa:RL-MemAgent-7B"]
    assert compare.main([str(run), *argv, "--output-dir", str(tmp_path / "out")]) == 0
    (table,) = json.loads((tmp_path / "out" / "paper_comparison.json").read_text())
    column = table["lengths"]["50"]
    assert column["runs"] == {"memagent: h": 60.0} and column["run_items"] == {"memagent: h": 5}  # a failure is 0
    assert column["paper_items"] == 128 and table["paper_items_source"]
    low, high = column["paper_interval"]["RL-MemAgent-7B"]
    assert (low, high) == pytest.approx(wilson_interval(82.03, 128)) and low < 82.03 < high
    assert column["difference"]["memagent: h"]["RL-MemAgent-7B"] == pytest.approx(60.0 - 82.03)


def test_the_files_check_compares_the_recorded_sha256_with_the_published_one(tmp_path):
    cells = [Cell("ruler_hqa", "hotpotqa", 50, "sub_em", [1, 0]).summary()]
    table = replace(load_tables()["memagent-v1-ruler-hqa"], data_sha256={"50": "a" * 64})
    lines = lambda label: [{"id": "0", "status": "completed", "sub_em": 1.0}, {"id": "1", "status": "completed"}]  # noqa: E731
    files = [
        beside_run([(table, table.rows)], cells, lines, facts)[0]["run"]["50"]["files"]
        for facts in ({"data_sha256": {"50": "a" * 64}}, {"data_sha256": {"50": "b" * 64}}, {})
    ]
    assert files == ["same", "different", "unrecorded"]


def test_wilson_interval_of_a_known_mean():
    low, high = wilson_interval(50.0, 128)
    assert low == pytest.approx(100 - high) and (low, high) == pytest.approx((41.46, 58.54), abs=0.01)
    assert wilson_interval(0.0, 128)[0] == 0.0 and np.isclose(wilson_interval(100.0, 128)[1], 100.0)


def test_a_cell_whose_metric_is_out_of_range_is_refused_naming_the_file(tmp_path, capsys):
    a = suite_run(tmp_path / "a", _cells([1], [1], [1]))
    b = suite_run(tmp_path / "b", _cells([1], [1], [1]))
    document = json.loads((b / "summary.json").read_text())
    document["results"][1]["string_match_all"] = 150.0
    (b / "summary.json").write_text(json.dumps(document))
    code, _ = _compare(tmp_path, a, b)
    err = capsys.readouterr().err
    assert code == 2 and "summary.json" in err and "string_match_all" in err and err.count("\n") == 1
