"""The published tables kept as data (evaluation/paper_tables.json) and a run set beside them by
`compare --paper`: the same metric per length, the paper's version named, the protocol differences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem_agent import compare, eval_ruler_hqa
from mem_agent.evaluation.paper_tables import choose_all, load_tables
from mem_agent.evaluation.reporting import EvalFileReport, write_reports

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm", "--no-plot"]


def test_every_table_names_its_source_and_holds_numbers_of_its_own_columns():
    tables = load_tables()
    assert {"memagent-v1-ruler-hqa", "memagent-v1-ruler-average"} <= set(tables)
    for table in tables.values():
        assert table.arxiv and table.version and table.table and table.source
        assert table.protocol["temperature"] == 0.7 and table.protocol["top_p"] == 0.95
        for row in table.rows:
            assert set(row.values) == set(table.columns) and row.mode in ("memagent", "direct")
            assert all(value is None or 0 <= value <= 100 for value in row.values.values())
    hqa = tables["memagent-v1-ruler-hqa"]
    seven = next(row for row in hqa.rows if row.model == "RL-MemAgent-7B")
    assert (seven.values["12800"], seven.values["25600"]) == (75.78, 71.09)
    assert all(row.values["25600"] is None for row in hqa.rows if row.mode == "direct")


def test_the_stated_item_count_agrees_with_every_published_number():
    """128 questions per RULER-HQA length: every published value is a whole number of them."""
    tables = load_tables()
    hqa = tables["memagent-v1-ruler-hqa"]
    assert hqa.items_per_column == 128 and hqa.binary_items and hqa.items_source
    values = [v for row in hqa.rows for v in row.values.values() if v is not None]
    assert all(round(round(v * 1.28) / 1.28, 2) == v for v in values)
    assert tables["memagent-v1-ruler-average"].items_per_column is None


@pytest.fixture(scope="module")
def run_folder(make_eval_files, instant_server, tmp_path_factory) -> Path:
    root = make_eval_files(50, 100, questions=2)
    out = tmp_path_factory.mktemp("paper_run") / "memagent"
    argv = ["--data-root", str(root), "--lengths", "50", "100", "--output-dir", str(out), "--url", instant_server]
    assert eval_ruler_hqa.main([*argv, *FAST]) == 0
    return out


def test_one_run_beside_a_published_row(run_folder, tmp_path):
    out = tmp_path / "compare"
    argv = [str(run_folder), "--paper", "memagent-v1-ruler-hqa:RL-MemAgent-7B", "--output-dir", str(out)]
    assert compare.main(argv) == 0
    (numbers,) = json.loads((out / "paper_comparison.json").read_text())
    assert numbers["version"] == "v1" and numbers["metric"] == "sub_em" and "2507.02259" in numbers["cited"]
    assert list(numbers["lengths"]) == ["50", "100"]
    assert numbers["lengths"]["50"]["paper"] == {"RL-MemAgent-7B": 82.03}
    assert numbers["lengths"]["100"]["paper_column"] == "14K"
    summary = json.loads((run_folder / "summary.json").read_text())
    ours = next(r for r in summary["results"] if r["label"] == "50")["sub_em"]
    assert numbers["lengths"]["50"]["runs"] == {"memagent": ours}
    (differences,) = numbers["protocol_differences"].values()
    assert any(d.startswith("chunk_tokens") for d in differences)
    assert any(d.startswith("max_memory_tokens") for d in differences)
    assert (out / "paper_comparison.png").read_bytes()[:4] == b"\x89PNG"


def test_a_whole_table_beside_two_runs_also_compares_the_runs(run_folder, tmp_path):
    out = tmp_path / "compare"
    assert (
        compare.main(
            [
                str(run_folder),
                str(run_folder),
                "--labels",
                "a",
                "b",
                "--paper",
                "memagent-v1-ruler-hqa",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    (numbers,) = json.loads((out / "paper_comparison.json").read_text())
    assert len(numbers["lengths"]["50"]["paper"]) == 8 and set(numbers["lengths"]["50"]["runs"]) == {"a", "b"}
    assert (out / "compare.json").is_file()


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--paper", "memagent-v9"], "memagent-v9"),
        (["--paper", "memagent-v1-ruler-hqa:Nobody-7B"], "Nobody-7B"),
        (["--paper", "memagent-v1-ruler-hqa", "--metric", "f1"], "--metric"),
        (["--paper", "memagent-v1-ruler-average"], "memagent-v1-ruler-average"),
    ],
)
def test_a_paper_choice_that_cannot_be_honoured_is_refused(run_folder, tmp_path, capsys, argv, named):
    assert compare.main([str(run_folder), *argv, "--output-dir", str(tmp_path / "out")]) == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "out" / "paper_comparison.json").exists()


def test_the_evaluator_sets_its_run_beside_a_published_row(make_eval_files, instant_server, tmp_path):
    root = make_eval_files(50, 100, questions=2)
    fast = [flag for flag in FAST if flag != "--no-plot"]
    argv = ["--data-root", str(root), "--lengths", "50", "100", "--url", instant_server, *fast]
    beside, alone = tmp_path / "beside", tmp_path / "alone"
    paper = ["--paper", "memagent-v1-ruler-hqa:RL-MemAgent-7B"]
    assert eval_ruler_hqa.main([*argv, "--output-dir", str(beside), *paper]) == 0
    assert eval_ruler_hqa.main([*argv, "--output-dir", str(alone)]) == 0
    (entry,) = json.loads((beside / "summary.json").read_text())["paper"]
    assert entry["table"] == "memagent-v1-ruler-hqa" and "2507.02259" in entry["cited"] and entry["source"]
    assert entry["columns"] == {"50": "7K", "100": "14K"}
    assert entry["rows"] == {"RL-MemAgent-7B": {"50": 82.03, "100": 79.69}}
    assert entry["run"]["50"]["items"] == 2 and entry["run"]["50"]["files"] == "unknown" and entry["paper_items"] == 128
    assert entry["differences"]["RL-MemAgent-7B"]["50"] == pytest.approx(entry["run"]["50"]["value"] - 82.03)
    assert json.loads((alone / "summary.json").read_text())["paper"] == []
    plots = [folder / "accuracy_vs_length.png" for folder in (beside, alone)]
    assert all(plot.read_bytes()[:4] == b"\x89PNG" for plot in plots)
    assert plots[0].read_bytes() != plots[1].read_bytes(), "the published row is drawn"
    # Every item done: the report is rewritten, and the table named this time is the one kept.
    whole = ["--paper", "memagent-v1-ruler-hqa"]
    assert eval_ruler_hqa.main([*argv, "--output-dir", str(beside), *whole]) == 0
    (entry,) = json.loads((beside / "summary.json").read_text())["paper"]
    assert len(entry["rows"]) == 8 and entry["rows"]["RL-MemAgent-14B"] == {"50": 83.59, "100": 82.03}


def test_a_published_ruler_average_is_set_under_the_heat_map(tmp_path, capsys):
    def report(label: str, sub_em: float) -> EvalFileReport:
        (tmp_path / f"results_{label}.jsonl").write_text("")
        summary = {"items": 2, "completed": 2, "failed": 0, "missing": 0, "string_match_all": sub_em}
        summary["mean_context_tokens"] = 9e3
        return EvalFileReport(label, tmp_path / f"eval_{label}.json", summary | {"em": 0.0, "f1": 0.0, "reused": 0})

    reports = [report("vt_8192", 80.0), report("cwe_8192", 40.0), report("vt_16384", 30.0), report("vt_1600", 9.0)]
    # A RULER length that is also a RULER-HQA document count (1600) is not set beside the HQA table.
    papers = choose_all(["memagent-v1-ruler-average:RL-MemAgent-7B", "memagent-v1-ruler-hqa:RL-MemAgent-7B"])
    write_reports(reports, tmp_path, [{"mode": "memagent"}], papers=papers)
    table = {
        cells[0]: cells[1:]
        for line in capsys.readouterr().out.splitlines()
        if " | " in line
        for cells in [[cell.strip() for cell in line.split(" | ")]]
    }
    assert table["split"] == ["1600", "8K", "16K"]
    assert table["average of 2 splits"] == ["9.0", "60.0", "30.0"]
    (published,) = [row for name, row in table.items() if name.startswith("RL-MemAgent-7B (arXiv")]
    assert published == ["-", "93.0", "92.0"]
    ruler_average, hqa = json.loads((tmp_path / "summary.json").read_text())["paper"]
    assert ruler_average["rows"] == {"RL-MemAgent-7B": {"8192": 93.03, "16384": 92.03}}
    assert hqa["table"] == "memagent-v1-ruler-hqa" and hqa["columns"] == {} and hqa["rows"] == {"RL-MemAgent-7B": {}}
    assert (tmp_path / "ruler_heatmap.png").read_bytes()[:4] == b"\x89PNG"


def test_a_paper_the_evaluator_cannot_find_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--data", str(tmp_path / "eval_50.json"), "--output-dir", str(out), "--url", "http://127.0.0.1:9"]
    argv += ["--paper", "memagent-v9", "--paper", "memagent-v1-ruler-hqa:Nobody-7B"]
    assert eval_ruler_hqa.main(argv) == 2
    error = capsys.readouterr().err
    assert "memagent-v9" in error and "Nobody-7B" in error and "Traceback" not in error
    assert not out.exists()
