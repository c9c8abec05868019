"""An I/O failure (a full disk, stood in for by a file-size limit in a child process) is one line
and exit status 1; what was written stays, and the same command run again resumes and finishes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mem_agent.evaluation.results import read_results
from support.trajectory_runs import evaluation_run

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm", "--no-plot"]


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


def test_an_evaluation_that_runs_out_of_disk_stops_in_one_line_and_resumes(make_eval_files, instant_server, tmp_path):
    data_root = make_eval_files(6, questions=6)
    argv = ["--data-root", str(data_root), "--lengths", "6", "--url", instant_server, "--concurrency", "1", *FAST]
    probe = _limited("mem_agent.eval_ruler_hqa", [*argv, "--output-dir", str(tmp_path / "probe"), "--limit", "1"], None)
    assert probe.returncode in (0, 1), probe.stderr[-2000:]
    line_bytes = (tmp_path / "probe" / "results_6.jsonl").stat().st_size
    out = tmp_path / "run"
    stopped = _limited("mem_agent.eval_ruler_hqa", [*argv, "--output-dir", str(out)], int(line_bytes * 2.5))
    assert stopped.returncode == 1, stopped.stderr[-2000:]
    errors = [line for line in stopped.stderr.splitlines() if line.startswith("error: ")]  # beside the progress bar
    assert len(errors) == 1 and "results_6.jsonl" in errors[0] and "Traceback" not in stopped.stderr, stopped.stderr
    kept = [record["id"] for record in read_results(out / "results_6.jsonl")]
    assert 1 <= len(kept) < 6
    resumed = _limited("mem_agent.eval_ruler_hqa", [*argv, "--output-dir", str(out)], None)
    assert resumed.returncode in (0, 1), resumed.stderr[-2000:]
    ids = [record["id"] for record in read_results(out / "results_6.jsonl")]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 6 and set(kept) <= set(ids)


def test_compare_view_and_train_summary_on_a_full_disk_are_one_line_and_exit_1(tokenizer, tmp_path):
    runs = [evaluation_run(tokenizer, tmp_path / name, {"6": 2}) for name in ("a", "b")]
    metrics = tmp_path / "train" / "metrics.jsonl"
    metrics.parent.mkdir()
    metrics.write_text(json.dumps({"kind": "rollout", "rollout_id": 0, "step": 0, "reward/mean": 0.5}) + "\n")
    commands = {
        "mem_agent.compare": [str(runs[0]), str(runs[1]), "--output-dir", str(tmp_path / "cmp")],
        "mem_agent.view": [str(runs[0]), "-o", str(tmp_path / "page.html")],
        "mem_agent.train_summary": [str(metrics.parent), "--output-dir", str(tmp_path / "tables")],
    }
    for module, argv in commands.items():
        result = _limited(module, argv, 64)
        assert result.returncode == 1, (module, result.stderr[-2000:])
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, (module, result.stderr)
    assert not (tmp_path / "page.html").exists()
    assert [p.name for p in Path(tmp_path / "cmp").glob("*") if not p.name.startswith(".")] == []
