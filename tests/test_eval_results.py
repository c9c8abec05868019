"""Results on disk: one line per item after any crash and resume, failures counted as wrong."""

from __future__ import annotations

import json

import pytest

from mem_agent.evaluation.results import ResultStore, read_results, summarize


def _record(item_id: str, status: str = "completed", **metrics: float) -> dict:
    return {"id": item_id, "status": status, **metrics}


def test_results_are_appended_one_line_each_and_read_back(tmp_path):
    store = ResultStore.open(tmp_path / "r.jsonl")
    store.append(_record("a", sub_em=1.0))
    store.append(_record("b", status="failed"))
    assert [r["id"] for r in read_results(store.path)] == ["a", "b"]
    assert store.done == {"a"}, "only completed items need no more work"


def test_resume_keeps_completed_drops_failed_and_repairs_a_cut_last_line(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [json.dumps(_record("a")), json.dumps(_record("b", status="failed")), json.dumps(_record("c"))]
    path.write_text("\n".join(lines) + "\n" + '{"id": "d", "stat')
    store = ResultStore.open(path)
    assert store.done == {"a", "c"}
    assert store.report.repaired_partial_line and store.report.dropped_failed == 1 and store.report.kept == 2
    assert path.read_text().splitlines() == [lines[0], lines[2]]


def test_resume_drops_duplicates_and_garbage_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        "\n".join([json.dumps(_record("a", sub_em=1.0)), json.dumps(_record("a", sub_em=0.0)), "not json", "{}"]) + "\n"
    )
    store = ResultStore.open(path)
    records = read_results(path)
    assert [r["id"] for r in records] == ["a"] and records[0]["sub_em"] == 1.0
    assert store.report.dropped_duplicates == 1 and store.report.dropped_invalid == 2


def test_force_starts_from_an_empty_file(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(_record("a")) + "\n")
    store = ResultStore.open(path, force=True)
    assert store.done == set() and path.read_text() == ""


def test_summary_counts_failed_and_missing_items_as_wrong():
    records = [
        _record("a", sub_em=1.0, em=1.0, f1=1.0, strict=1.0, context_tokens=100),
        _record("b", sub_em=1.0, em=0.0, f1=0.5, strict=0.0, context_tokens=300),
        _record("c", status="failed"),
    ]
    summary = summarize(records, expected=4)
    assert (summary["items"], summary["completed"], summary["failed"], summary["missing"]) == (4, 2, 1, 1)
    assert summary["sub_em"] == pytest.approx(50.0)
    assert summary["em"] == pytest.approx(25.0)
    assert summary["f1"] == pytest.approx(37.5)
    assert summary["strict"] == pytest.approx(25.0)
    assert summary["mean_context_tokens"] == pytest.approx(200.0), "items that never tokenised do not count"


def test_summary_counts_each_item_once_whatever_the_file_holds():
    """Six runs appending to one file gave 180 lines for 30 items: the report must say 30."""
    records = [_record(str(i % 3), sub_em=1.0, context_tokens=100) for i in range(18)]
    records += [_record("3", status="failed"), _record("3", sub_em=0.0), _record("4", status="failed")] * 2
    summary = summarize(records, expected=5)
    assert (summary["items"], summary["completed"], summary["failed"], summary["missing"]) == (5, 4, 1, 0)
    assert summary["sub_em"] == pytest.approx(60.0), "3 right of 5 items, each counted once"


def test_summary_keeps_an_items_completed_line_over_its_failed_ones():
    """The store's rule for a rerun: a completed line is the item's result, wherever it stands."""
    records = [_record("a", status="failed"), _record("a", sub_em=1.0), _record("a", status="failed")]
    assert summarize(records)["completed"] == 1 and summarize(records)["sub_em"] == pytest.approx(100.0)


def test_resume_reports_each_repair_it_made(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [json.dumps(_record("a")), json.dumps(_record("a")), json.dumps(_record("a")), "garbage"]
    path.write_text("\n".join(lines) + "\n" + '{"id": "b", "st')
    repairs = ResultStore.open(path).report.repairs()
    assert repairs == [
        "cut a partial last line (a crash mid-write)",
        "dropped 2 repeated line(s) of items already there",
        "dropped 1 unreadable line(s)",
    ]
    assert ResultStore.open(path).report.repairs() == [], "a repaired file needs no second repair"
