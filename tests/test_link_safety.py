"""No write follows a link out of a run folder: every writer, given a symbolic link where it would
write, leaves the file the link points to as it was (content and mode) and says which link it
refused; a dangling link creates nothing outside.

Real files, real links, the real commands (the evaluator against a real HTTP server, run-eval.sh's
launch, the training log hook as the trainer calls it).
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mem_agent import compare, eval_ruler_hqa, train_summary, view
from mem_agent.common.guarded_files import Refused, append_bytes, write_text_atomic
from mem_agent.common.run_folder import LOCK_NAME, lock_run_folder
from mem_agent.launch import eval_run
from mem_agent.observability import rollout_logging
from mem_agent.observability.host_logging import METRICS_FILE, append_metrics_line
from support.trajectory_runs import evaluation_run

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm", "--no-plot"]
SECRET = b"someone else's file\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A private file outside every run folder: what a link points to."""
    target = tmp_path / "outside" / "precious.txt"
    target.parent.mkdir()
    target.write_bytes(SECRET)
    target.chmod(0o600)
    return target


def _untouched(target: Path) -> bool:
    return target.read_bytes() == SECRET and stat.S_IMODE(target.stat().st_mode) == 0o600


def _link(at: Path, to: Path) -> Path:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to)
    return at


def _one_line_naming(err: str, link: Path) -> bool:
    return err.count("\n") == 1 and link.name in err


def test_the_lock_is_never_opened_through_a_link(tmp_path, outside):
    link = _link(tmp_path / "run" / LOCK_NAME, outside)
    with pytest.raises(Refused, match=LOCK_NAME), lock_run_folder(tmp_path / "run", command="test"):
        pass
    assert _untouched(outside)
    dangling = _link(tmp_path / "other" / LOCK_NAME, tmp_path / "outside" / "made.txt")
    with pytest.raises(Refused), lock_run_folder(dangling.parent, command="test"):
        pass
    assert not (tmp_path / "outside" / "made.txt").exists()
    assert link.is_symlink()


def test_appends_and_whole_file_writes_refuse_a_link(tmp_path, outside):
    for write in (lambda p: append_bytes(p, b"x\n"), lambda p: write_text_atomic(p, "x")):
        link = _link(tmp_path / f"run{id(write)}" / "data.jsonl", outside)
        with pytest.raises(Refused, match=r"data\.jsonl"):
            write(link)
        assert _untouched(outside) and link.is_symlink()


def test_the_evaluator_refuses_a_lock_or_results_file_that_is_a_link(
    make_eval_files, instant_server, tmp_path, outside, capsys
):
    data_root = make_eval_files(6, questions=2)
    for name in (LOCK_NAME, "results_6.jsonl"):
        out = tmp_path / name.strip(".")
        link = _link(out / name, outside)
        argv = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", instant_server]
        capsys.readouterr()
        assert eval_ruler_hqa.main([*argv, *FAST]) == 2
        assert _one_line_naming(capsys.readouterr().err, link)
        assert _untouched(outside)


def test_run_eval_launch_refuses_a_lock_that_is_a_link(tmp_path, outside, capsys):
    """run-eval.sh takes the folder's lock through `python -m mem_agent.launch eval-run`."""
    for target in (outside, tmp_path / "outside" / "made.txt"):
        run_dir = tmp_path / f"run-{target.name}"
        link = _link(run_dir / LOCK_NAME, target)
        argv = [
            "--python",
            sys.executable,
            "--run-dir",
            str(run_dir),
            "--serving",
            "url",
            "--url",
            "http://127.0.0.1:9",
        ]
        argv += ["--left-to-run", "0", "--serve-timeout", "1", "--stop-timeout", "1", "--", "true"]
        capsys.readouterr()
        assert eval_run.main(argv, os.environ) == 2
        assert _one_line_naming(capsys.readouterr().err, link)
    assert _untouched(outside) and not (tmp_path / "outside" / "made.txt").exists()


def test_the_training_log_hook_writes_nothing_through_a_link(tmp_path, outside, caplog, monkeypatch):
    """A trainer whose SAVE/trajectories/.run.lock or metrics.jsonl is a link records nothing there
    and says so in its log; training goes on."""
    link = _link(tmp_path / "save" / "trajectories" / METRICS_FILE, outside)
    with pytest.raises(Refused):
        append_metrics_line(link, {"kind": "rollout", "rollout_id": 0})
    lock_link = _link(tmp_path / "save2" / "trajectories" / LOCK_NAME, outside)
    args = SimpleNamespace(save=str(tmp_path / "save2"))
    with caplog.at_level(logging.ERROR):
        assert rollout_logging._records_folder(args) is None
    assert str(lock_link) in caplog.text
    assert _untouched(outside)


def test_view_compare_and_train_summary_refuse_an_output_that_is_a_link(tokenizer, tmp_path, outside, capsys):
    run = evaluation_run(tokenizer, tmp_path / "a", {"6": 2})
    other = evaluation_run(tokenizer, tmp_path / "b", {"6": 2})
    page = _link(tmp_path / "pages" / "view.html", outside)
    assert view.main([str(run), "-o", str(page)]) == 2
    assert _one_line_naming(capsys.readouterr().err, page)
    numbers = _link(tmp_path / "cmp" / "compare.json", outside)
    assert compare.main([str(run), str(other), "--output-dir", str(numbers.parent)]) == 2
    assert _one_line_naming(capsys.readouterr().err, numbers)
    metrics = tmp_path / "train" / METRICS_FILE
    metrics.parent.mkdir()
    metrics.write_text('{"kind": "rollout", "rollout_id": 0, "step": 0, "reward/mean": 0.5}\n')
    table = _link(tmp_path / "train" / "train_summary.csv", outside)
    assert train_summary.main([str(metrics.parent), "--no-plot"]) == 2
    assert _one_line_naming(capsys.readouterr().err, table)
    assert _untouched(outside)
