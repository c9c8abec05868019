"""No write follows a link out of a run folder: every writer, given a symbolic link where it would
write (at the file or at a folder inside the run folder), leaves the file the link points to as it
was (content and mode) and says which link it refused; a dangling link creates nothing outside. A
hard-linked lock is refused rather than truncated, a command refuses before it writes its first
output, a FIFO where a run file belongs is refused without waiting on it, and a CSV text cell never
starts a spreadsheet formula (common/guarded_files.py, docs/reliability.md: Hostile inputs).

Real files, real links, the real commands (the evaluator against a real HTTP server, run-eval.sh's
launch, the training log hook as the trainer calls it).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mem_agent import compare, eval_ruler_hqa, train_summary, view
from mem_agent.common.guarded_files import Refused, append_bytes, place_file, write_text_atomic
from mem_agent.common.run_folder import LOCK_NAME, lock_run_folder
from mem_agent.launch.eval_settings import EvalSettings
from mem_agent.launch.evaluate import EvalPlan, launch
from mem_agent.observability import rollout_logging
from mem_agent.observability.host_logging import METRICS_FILE, append_metrics_line
from mem_agent.serving.processes import start_process
from support.deadline import within
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


def test_a_placed_file_never_goes_through_a_link_or_over_a_file(tmp_path, outside):
    """place_file (prepare-eval-data's checked download): a link, dangling or not, or a file at the
    name is refused, each left as it was with the new file still at its own name."""
    ours = tmp_path / "work" / "eval_50.json"
    ours.parent.mkdir()
    ours.write_text("checked")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "theirs.json").write_text("theirs")
    for name, to in (("link.json", outside), ("dangling.json", tmp_path / "outside" / "made.json")):
        link = _link(tmp_path / "run" / name, to)
        with pytest.raises(Refused, match=re.escape(name)):
            place_file(ours, link)
        assert link.is_symlink() and _untouched(outside) and not (tmp_path / "outside" / "made.json").exists()
    with pytest.raises(Refused, match=r"theirs\.json"):
        place_file(ours, tmp_path / "run" / "theirs.json")
    assert (tmp_path / "run" / "theirs.json").read_text() == "theirs" and ours.read_text() == "checked"
    place_file(ours, tmp_path / "run" / "eval_50.json")
    assert (tmp_path / "run" / "eval_50.json").read_text() == "checked" and not ours.exists()


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


def _launch(run_dir: Path, **plan: Any) -> int:
    """run-eval's launch (launch/evaluate.py) of a checked plan whose every command is `true`."""
    settings = EvalSettings(serve_timeout=1, serve_stop_timeout=1)
    return launch(EvalPlan(settings, str(run_dir), ["true"], **plan))


def test_run_eval_launch_refuses_a_lock_that_is_a_link(tmp_path, outside, capsys):
    """run-eval's launch takes the folder's lock before anything starts."""
    for target in (outside, tmp_path / "outside" / "made.txt"):
        run_dir = tmp_path / f"run-{target.name}"
        link = _link(run_dir / LOCK_NAME, target)
        capsys.readouterr()
        assert _launch(run_dir) == 2
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


def test_server_logs_are_never_written_through_a_link(tmp_path, outside, capsys):
    """run-eval.sh's servers log to RUN/servers/NAME.log: a link there, or `servers/` itself a link to
    a folder elsewhere, is refused before any server starts, and nothing is written where it points."""
    run = tmp_path / "run"
    log = _link(run / "servers" / "vllm_server.log", outside)
    with pytest.raises(Refused, match=r"vllm_server\.log"):
        start_process("vllm_server", ["true"], log, log_root=run)
    gpu = [("vllm_server", ["true"], "http://127.0.0.1:9")]
    for serving, plan in (("gpu", {"servers": (gpu,)}), ("cpu", {"stack": ("true",)})):
        run_dir = tmp_path / f"run-{serving}"
        servers = _link(run_dir / "servers", outside.parent)
        capsys.readouterr()
        assert _launch(run_dir, **plan) == 2
        assert _one_line_naming(capsys.readouterr().err, servers)
    assert [p.name for p in outside.parent.iterdir()] == [outside.name] and _untouched(outside)


def test_a_hard_linked_lock_is_refused_and_its_other_name_keeps_every_byte(
    make_eval_files, instant_server, tmp_path, outside, capsys, caplog
):
    """A `.run.lock` that is a second name of someone's file: writing the holder record would
    truncate that file, so the evaluator, run-eval.sh's launch and the training log hook refuse it."""
    data_root = make_eval_files(6, questions=2)
    folders = {name: tmp_path / name for name in ("eval", "launch", "save")}
    for name, folder in folders.items():
        lock = (folder / "trajectories" if name == "save" else folder) / LOCK_NAME
        lock.parent.mkdir(parents=True)
        os.link(outside, lock)
    argv = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(folders["eval"]), "--url"]
    assert eval_ruler_hqa.main([*argv, instant_server, *FAST]) == 2
    assert _one_line_naming(capsys.readouterr().err, folders["eval"] / LOCK_NAME)
    assert _launch(folders["launch"]) == 2
    assert _one_line_naming(capsys.readouterr().err, folders["launch"] / LOCK_NAME)
    with caplog.at_level(logging.ERROR):
        assert rollout_logging._records_folder(SimpleNamespace(save=str(folders["save"]))) is None
    assert LOCK_NAME in caplog.text and "hard-linked" in caplog.text
    assert _untouched(outside) and outside.stat().st_nlink == 4


def _state(path: Path) -> tuple[bytes, int, int]:
    """What a rewrite would change: the content, the inode (an atomic write makes a new one), the mtime."""
    status = path.stat()
    return path.read_bytes(), status.st_ino, status.st_mtime_ns


def test_a_link_at_a_later_output_leaves_the_earlier_outputs_as_they_were(
    tokenizer, make_eval_files, instant_server, tmp_path, outside, capsys
):
    """Every output of a command is checked before the first is written: compare's plot, train_summary's
    plot, the evaluator's plot a link, and compare.json, train_summary.csv, summary.json and the
    results stay as the last run left them."""
    runs = [str(evaluation_run(tokenizer, tmp_path / name, {"6": 2})) for name in ("a", "b")]
    cmp = tmp_path / "cmp"
    assert compare.main([*runs, "--output-dir", str(cmp)]) == 0
    metrics = tmp_path / "train" / METRICS_FILE
    metrics.parent.mkdir()
    metrics.write_text('{"kind": "rollout", "rollout_id": 0, "step": 0, "reward/mean": 0.5}\n')
    assert train_summary.main([str(metrics.parent), "--no-plot"]) == 0
    data_root = make_eval_files(6, questions=2)
    out = tmp_path / "eval"
    argv = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", instant_server]
    assert eval_ruler_hqa.main([*argv, *FAST]) == 0
    earlier = [
        cmp / "compare.json",
        metrics.parent / "train_summary.csv",
        out / "summary.json",
        out / "results_6.jsonl",
    ]
    before = [_state(path) for path in earlier]
    (cmp / "compare.png").unlink()
    plots = [_link(cmp / "compare.png", outside), _link(metrics.parent / "train_summary.png", outside)]
    plots.append(_link(out / "accuracy_vs_length.png", outside))
    capsys.readouterr()
    assert compare.main([*runs, "--output-dir", str(cmp)]) == 2
    assert _one_line_naming(capsys.readouterr().err, plots[0])
    assert train_summary.main([str(metrics.parent)]) == 2
    assert _one_line_naming(capsys.readouterr().err, plots[1])
    assert eval_ruler_hqa.main([*argv, *[flag for flag in FAST if flag != "--no-plot"]]) == 2
    assert _one_line_naming(capsys.readouterr().err, plots[2])
    assert [_state(path) for path in earlier] == before and _untouched(outside)


@pytest.mark.parametrize("name", ["results_6.jsonl", "summary.json"])
def test_a_fifo_where_a_run_file_belongs_is_refused_at_once(
    name, tokenizer, make_eval_files, instant_server, tmp_path, capsys
):
    """Opening a FIFO blocks until someone opens its other end: the evaluator, compare and view refuse
    one in a run folder in one line (exit 2), without waiting on it."""
    data_root = make_eval_files(6, questions=2)
    out = tmp_path / "eval"
    out.mkdir()
    os.mkfifo(out / name)
    runs = [evaluation_run(tokenizer, tmp_path / run, {"6": 2}) for run in ("a", "b")]
    (runs[1] / name).unlink()
    os.mkfifo(runs[1] / name)
    evaluate = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", instant_server]
    commands = [
        (lambda: eval_ruler_hqa.main([*evaluate, *FAST]), out / name),
        (lambda: compare.main([str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")]), runs[1] / name),
        (lambda: view.main([str(runs[1]), "-o", str(tmp_path / "page.html")]), runs[1] / name),
    ]
    for command, fifo in commands:
        capsys.readouterr()
        with within(20):
            assert command() == 2
        assert _one_line_naming(capsys.readouterr().err, fifo)
    assert not (tmp_path / "page.html").exists() and not (tmp_path / "cmp" / "compare.json").exists()


def test_a_csv_text_cell_never_starts_a_formula(tmp_path):
    """train_summary's tables open in spreadsheets: a text cell starting with = + - @ (or a tab or a
    carriage return) is written after an apostrophe, so it shows as text; numbers stay numbers."""
    metrics = tmp_path / METRICS_FILE
    lines = [
        {"kind": "rollout", "rollout_id": 0, "step": 0, "reward/mean": -0.5, "accuracy/em": "@SUM(A1:A9)"},
        {"kind": "eval", "rollout_id": 0, "step": -3, "eval_set": '=HYPERLINK("http://x","y")'},
        {"kind": "eval", "rollout_id": 1, "step": 1, "eval_set": "-2+3"},
        {"kind": "eval", "rollout_id": 2, "step": 2, "eval_set": "\tplain"},
    ]
    metrics.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert train_summary.main([str(tmp_path), "--no-plot"]) == 0
    train = list(csv.DictReader((tmp_path / "train_summary.csv").open()))
    assert train[0]["reward/mean"] == "-0.5" and train[0]["accuracy/em"] == "'@SUM(A1:A9)"
    evals = list(csv.DictReader((tmp_path / "eval_summary.csv").open()))
    assert [row["eval_set"] for row in evals] == ['\'=HYPERLINK("http://x","y")', "'-2+3", "'\tplain"]
    assert evals[0]["step"] == "-3"
