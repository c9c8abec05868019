"""Outputs never replace inputs: `view -o` refuses a path it reads or a run folder's data file, and
replaces an existing file only when it is a page of ours (or with --force), keeping its mode."""

from __future__ import annotations

import stat

import pytest

from mem_agent import view
from support.trajectory_runs import evaluation_run


@pytest.fixture
def run(tokenizer, tmp_path):
    return evaluation_run(tokenizer, tmp_path / "run", {"6": 2})


@pytest.mark.parametrize("name", ["results_6.jsonl", "trajectories_6.jsonl", "summary.json"])
def test_view_refuses_an_output_that_is_what_it_reads(run, capsys, name):
    before = (run / name).read_bytes()
    assert view.main([str(run), "-o", str(run / name)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err
    assert (run / name).read_bytes() == before
    records = run / "trajectories_6.jsonl"
    assert view.main([str(records), "-o", str(records)]) == 2
    assert records.read_bytes() == (run / "trajectories_6.jsonl").read_bytes()


def test_view_refuses_a_run_data_name_anywhere(run, tmp_path, capsys):
    assert view.main([str(run), "-o", str(tmp_path / "elsewhere" / "metrics.jsonl")]) == 2
    assert "metrics.jsonl" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere" / "metrics.jsonl").exists()


def test_an_existing_file_is_replaced_only_when_ours_or_forced_and_keeps_its_mode(run, tmp_path, capsys):
    private = tmp_path / "notes.html"
    private.write_text("my notes\n")
    private.chmod(0o600)
    assert view.main([str(run), "-o", str(private)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force" in err and str(private) in err
    assert private.read_text() == "my notes\n"
    assert view.main([str(run), "-o", str(private), "--force"]) == 0
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and "mem-agent" in private.read_text()
    assert view.main([str(run), "-o", str(private)]) == 0, "a page of ours is replaced without --force"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
