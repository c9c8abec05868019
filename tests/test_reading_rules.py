"""One reading rule for what runs leave on disk: a line cut by a crash is skipped and named, an
append after it starts on a new line, the line of a repeated id that counts is the report's, a
folder a live run holds is refused (compare) or shown as a snapshot (view), and every record,
results line, summary and metrics line is checked when read (one line naming file:line and field).
"""

from __future__ import annotations

import json
import time

import pytest

from mem_agent import compare, train_summary, view
from mem_agent.common.run_folder import LOCK_NAME
from mem_agent.evaluation.results import read_results, summarize
from mem_agent.observability.host_logging import append_metrics_line
from support.folder_holder import start_holder
from support.trajectory_runs import evaluation_run

ROLLOUT = {"kind": "rollout", "step": 0, "reward/mean": 0.5, "accuracy/strict": 0.25}


def test_a_resumed_trainer_appends_after_a_cut_metrics_line_and_train_summary_reads_it(tmp_path, capsys):
    metrics = tmp_path / "trajectories" / "metrics.jsonl"
    append_metrics_line(metrics, ROLLOUT | {"rollout_id": 0})
    with metrics.open("ab") as handle:
        handle.write(b'{"kind": "rollout", "rollout_id": 1, "rew')  # the trainer killed mid-line
    append_metrics_line(metrics, ROLLOUT | {"rollout_id": 1})
    append_metrics_line(metrics, ROLLOUT | {"rollout_id": 2})
    assert train_summary.main([str(tmp_path), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert f"{metrics}:2" in out
    rows = (metrics.parent / "train_summary.csv").read_text().splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"kind": "rollout", "rollout_id": "<b>1</b>"}, "rollout_id"),
        ({"kind": "rollout", "rollout_id": -1}, "rollout_id"),
        ({"kind": "rollout"}, "rollout_id"),
        ([1, 2], "(the line)"),
        ({"kind": "rollout", "rollout_id": 0, "reward/mean": [1]}, "reward/mean"),
    ],
)
def test_a_bad_metrics_line_is_one_line_naming_file_line_and_field(tmp_path, capsys, line, field):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps(ROLLOUT | {"rollout_id": 0}) + "\n" + json.dumps(line) + "\n")
    assert train_summary.main([str(tmp_path), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{metrics}:2" in err and field in err


def test_a_big_number_or_infinity_in_a_metrics_line_is_refused(tmp_path, capsys):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"kind": "rollout", "rollout_id": 0, "reward/mean": 1e999}\n')
    assert train_summary.main([str(tmp_path), "--no-plot"]) == 2
    assert f"{metrics}:1" in capsys.readouterr().err


def _results(folder, lines):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results_6.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_compare_and_the_viewer_keep_the_line_of_a_repeated_id_that_the_report_counts(tokenizer, tmp_path, capsys):
    """Item 0 answered right, then a stray failed line of it (two files joined by hand): the report,
    compare and the page all count the completed line."""
    runs = [evaluation_run(tokenizer, tmp_path / n, {"6": 2}, questions=3, trajectories=False) for n in "ab"]
    path = runs[0] / "results_6.jsonl"
    first = read_results(path)
    with path.open("a") as handle:
        handle.write(json.dumps(first[0] | {"status": "failed", "sub_em": 0.0, "error": "stray-failed-line"}) + "\n")
    lines = read_results(path)
    assert summarize(lines)["completed"] == 3
    assert compare.main([str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")]) == 0
    numbers = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert {pair["questions"] for pair in numbers["pairs"]} == {3}
    page = tmp_path / "page.html"
    assert view.main([str(runs[0]), "-o", str(page)]) == 0
    assert "stray-failed-line" not in page.read_text()


def test_compare_refuses_a_folder_a_live_run_holds_and_view_says_it_shows_a_snapshot(tokenizer, tmp_path, capsys):
    runs = [evaluation_run(tokenizer, tmp_path / name, {"6": 2}, questions=2) for name in ("a", "b")]
    holder = start_holder(runs[0], command="live-run")
    try:
        assert compare.main([str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(runs[0]) in err and str(holder.pid) in err
        assert view.main([str(runs[0]), "-o", str(tmp_path / "page.html")]) == 0
        assert str(holder.pid) in (tmp_path / "page.html").read_text()
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert (runs[0] / LOCK_NAME).exists()
    assert compare.main([str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")]) == 0


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"results": [{"label": "6", "sub_em": "<script>"}]}, "results.0.sub_em"),
        ({"results": [{"label": "6", "items": -3}]}, "results.0.items"),
        ({"results": {"label": "6"}}, "results"),
        ({"results": [{"label": ["6"]}]}, "results.0.label"),
        ({"results": [], "run": {"data_sha256": {"6": 5}}}, "run.data_sha256.6"),
        ([], "(the line)"),
    ],
)
def test_a_bad_summary_is_one_line_naming_the_field(tokenizer, tmp_path, capsys, document, field):
    runs = [evaluation_run(tokenizer, tmp_path / name, {"6": 2}, questions=2) for name in ("a", "b")]
    (runs[0] / "summary.json").write_text(json.dumps(document))
    assert compare.main([str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "summary.json" in err and f"field {field}" in err
    assert view.main([str(runs[0]), "-o", str(tmp_path / "page.html")]) == 2
    assert f"field {field}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"id": "0", "status": "completed", "sub_em": "<b>"}, "sub_em"),
        ({"id": "0", "status": "completed", "sub_em": 7.0}, "sub_em"),
        ({"id": "0", "status": "completed", "context_tokens": -1}, "context_tokens"),
        ({"id": None, "status": "completed"}, "id"),
        ({"id": "0", "status": "completed", "answers": "gold"}, "answers"),
        ({"status": "completed"}, "id"),
    ],
)
def test_a_bad_results_line_is_one_line_naming_file_line_and_field(tokenizer, tmp_path, capsys, line, field):
    runs = [evaluation_run(tokenizer, tmp_path / name, {"6": 2}, questions=2) for name in ("a", "b")]
    path = runs[0] / "results_6.jsonl"
    with path.open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    for command in (
        lambda: compare.main([str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")]),
        lambda: view.main([str(runs[0]), "-o", str(tmp_path / "page.html")]),
    ):
        assert command() == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{path}:3: field {field}" in err
