"""An I/O failure (a full disk, stood in for by a file-size limit in a child process) is one line
and exit status 1; what was written stays, and the same command run again resumes and finishes.
The evaluator stops at the first result it cannot write: the items in flight are cancelled, no
other item is started, so nothing is evaluated that could not be kept."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mem_agent import eval_ruler_hqa
from mem_agent.evaluation.results import read_results
from mem_agent.evaluation.reuse import RECORD_NAME
from support.instant_server import InstantServer
from support.trajectory_runs import evaluation_run

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm", "--no-plot"]
# One chunk per item (a 6-document item is ~280 tokens): each item is two requests, a memory turn
# and the final turn, and one question at a time: what a stopped run sent is countable.
ONE_AT_A_TIME = [*FAST, "--chunk-tokens", "4096", "--questions-in-flight", "1"]
REQUESTS_PER_ITEM = 2


@pytest.fixture
def server() -> Iterator[InstantServer]:
    app = InstantServer().start()
    yield app
    app.stop()


def _limited(module: str, argv: list[str], limit_bytes: int | None) -> subprocess.CompletedProcess[str]:
    """`python -m module argv` whose files may not grow past `limit_bytes` (EFBIG, as ENOSPC would)."""
    code = (
        "import resource, runpy, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"limit = {limit_bytes!r}\n"
        "if limit is not None: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
        f"sys.argv = [{module!r}, *{argv!r}]\n"
        f"runpy.run_module({module!r}, run_name='__main__')\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_an_evaluation_that_runs_out_of_disk_stops_in_one_line_and_resumes(make_eval_files, server, tmp_path):
    """The line that did not fit ends the run: the server saw the requests of the items kept and of
    the one whose line failed, none of the items after it."""
    data_root = make_eval_files(6, questions=8)
    argv = ["--data-root", str(data_root), "--lengths", "6", "--url", server.url, *ONE_AT_A_TIME]
    probe = _limited("mem_agent.eval_ruler_hqa", [*argv, "--output-dir", str(tmp_path / "probe")], None)
    assert probe.returncode in (0, 1), probe.stderr[-2000:]
    lines = read_results(tmp_path / "probe" / "results_6.jsonl")
    assert server.requests == REQUESTS_PER_ITEM * len(lines) == REQUESTS_PER_ITEM * 8
    # Room for the record of the settings (written first, the same size in every folder) and for
    # part of the results: the run stops at a results line.
    results_bytes = (tmp_path / "probe" / "results_6.jsonl").stat().st_size
    limit = (tmp_path / "probe" / RECORD_NAME).stat().st_size + results_bytes // 16
    assert limit < results_bytes * 3 // 4
    out = tmp_path / "run"
    server.requests = 0
    stopped = _limited("mem_agent.eval_ruler_hqa", [*argv, "--output-dir", str(out)], limit)
    assert stopped.returncode == 1, stopped.stderr[-2000:]
    errors = [line for line in stopped.stderr.splitlines() if line.startswith("error: ")]  # beside the progress bar
    assert len(errors) == 1 and "results_6.jsonl" in errors[0], stopped.stderr
    assert "Traceback" not in stopped.stderr and "never retrieved" not in stopped.stderr, stopped.stderr
    kept = [record["id"] for record in read_results(out / "results_6.jsonl")]
    assert 1 <= len(kept) < 8
    assert server.requests <= REQUESTS_PER_ITEM * (len(kept) + 1)
    resumed = _limited("mem_agent.eval_ruler_hqa", [*argv, "--output-dir", str(out)], None)
    assert resumed.returncode in (0, 1), resumed.stderr[-2000:]
    ids = [record["id"] for record in read_results(out / "results_6.jsonl")]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 8 and set(kept) <= set(ids)


def test_an_evaluation_that_cannot_record_its_settings_evaluates_nothing(make_eval_files, server, tmp_path):
    """The record of the settings is written before the first request: a disk too full for it stops
    the run in one line naming it, with no question sent."""
    data_root = make_eval_files(6, questions=2)
    argv = ["--data-root", str(data_root), "--lengths", "6", "--url", server.url, *ONE_AT_A_TIME]
    stopped = _limited("mem_agent.eval_ruler_hqa", [*argv, "--output-dir", str(tmp_path / "run")], 512)
    assert stopped.returncode == 1, stopped.stderr[-2000:]
    errors = [line for line in stopped.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and RECORD_NAME in errors[0] and "Traceback" not in stopped.stderr, stopped.stderr
    assert server.requests == 0 and not (tmp_path / "run" / "results_6.jsonl").exists()


@pytest.mark.parametrize("replacement", ["folder", "link"])
def test_a_results_file_replaced_mid_run_stops_the_run_at_the_next_line(
    make_eval_files, tmp_path, capsys, caplog, replacement
):
    """The results file moved away and a folder or a link put in its place once two items are done:
    the item in flight cannot be written, the run says so in one line (exit 1) and starts no other
    item; a link is never written through."""
    data_root = make_eval_files(6, questions=6)
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere.jsonl"
    results = out / "results_6.jsonl"
    replaced_at: list[int] = []

    def replace(requests: int) -> None:
        if replaced_at or not results.is_file() or results.read_bytes().count(b"\n") < 2:
            return
        replaced_at.append(requests)
        results.rename(tmp_path / "moved.jsonl")
        results.mkdir() if replacement == "folder" else results.symlink_to(elsewhere)

    server = InstantServer(replace).start()
    try:
        argv = ["--data-root", str(data_root), "--lengths", "6", "--url", server.url, "--output-dir", str(out)]
        code = eval_ruler_hqa.main([*argv, *ONE_AT_A_TIME])
    finally:
        server.stop()
    gc.collect()  # a task whose failure nobody awaited is reported when it is collected
    err = capsys.readouterr().err
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(results) in errors[0], err
    assert "Traceback" not in err and "never retrieved" not in caplog.text
    assert len(read_results(tmp_path / "moved.jsonl")) == 2 and not elsewhere.exists()
    assert server.requests - replaced_at[0] < REQUESTS_PER_ITEM  # the item in flight, and no other


def test_commands_on_a_full_disk_are_one_line_and_exit_1(tokenizer, synthetic_file, tmp_path):
    """Every command ends through common/console.command_status: a failed write is the machine's."""
    runs = [evaluation_run(tokenizer, tmp_path / name, {"6": 2}) for name in ("a", "b")]
    metrics = tmp_path / "train" / "metrics.jsonl"
    metrics.parent.mkdir()
    metrics.write_text(json.dumps({"kind": "rollout", "rollout_id": 0, "step": 0, "reward/mean": 0.5}) + "\n")
    commands = {
        "mem_agent.compare": [str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")],
        "mem_agent.view": [str(runs[0]), "-o", str(tmp_path / "page.html")],
        "mem_agent.train_summary": [str(metrics.parent), "--output-dir", str(tmp_path / "tables")],
        "mem_agent.prepare_data": ["--input", str(synthetic_file), "--output", str(tmp_path / "train.jsonl")],
    }
    for module, argv in commands.items():
        result = _limited(module, argv, 64)
        assert result.returncode == 1, (module, result.stderr[-2000:])
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, (module, result.stderr)
    assert not (tmp_path / "page.html").exists()
    assert [p.name for p in Path(tmp_path / "cmp").glob("*") if not p.name.startswith(".")] == []
