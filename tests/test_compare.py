"""Comparing evaluation runs: a per-length table, one overlaid plot, and per pair of runs the
paired difference on the questions both answered with a seeded 95% bootstrap interval; runs over
other data or scoring rules are refused in one line unless forced."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mem_agent import compare, eval_ruler_hqa, view
from mem_agent.observability.comparison import load_eval_run, paired_difference
from support.scripted_engine import scripted_engine
from support.scripts import PROJECT_ROOT
from support.trajectory_runs import evaluation_run

RULES = {"fold_unicode": False, "sub_em_guard": False}


def _facts(mode: str = "memagent", sha: str = "a" * 64, rules: dict | None = None) -> dict:
    return {"mode": mode, "data_sha256": {"50": sha, "100": sha}, "scoring": rules or RULES}


def _run(tokenizer, folder: Path, right, **facts) -> Path:
    return evaluation_run(tokenizer, folder, {"50": 2, "100": 3}, questions=8, right=right, facts=_facts(**facts))


def test_the_paired_difference_is_per_question_with_a_seeded_interval(tokenizer, tmp_path):
    """Run A answers all 8 right, run B the even ones: +50 per length and overall; the interval
    holds it, is the same for the same seed, and a question failed in either run leaves the pair."""
    a = load_eval_run(_run(tokenizer, tmp_path / "a", lambda i: True))
    b_dir = _run(tokenizer, tmp_path / "b", lambda i: i % 2 == 0, mode="direct")
    results = b_dir / "results_50.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    lines[1] |= {"status": "failed", "sub_em": 0.0}  # an odd one: its pair (1 - 0) drops out
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    b = load_eval_run(b_dir)

    first = paired_difference(a, b, "sub_em", seed=3)
    assert [(d.suite, d.label, d.questions) for d in first] == [
        ("ruler_hqa", "50", 7),
        ("ruler_hqa", "100", 8),
        ("ruler_hqa", "average", 15),
    ]
    assert first[0].difference == pytest.approx(100 * 3 / 7) and first[1].difference == 50.0
    assert all(d.low <= d.difference <= d.high for d in first)
    assert first == paired_difference(a, b, "sub_em", seed=3)
    assert first[2].high - first[2].low < first[1].high - first[1].low  # more questions, narrower
    assert first[2].difference == pytest.approx(100 * 7 / 15)  # 3 of 7, then 4 of 8, pooled


def test_the_command_writes_the_numbers_with_items_and_each_runs_full_set_figure(tokenizer, tmp_path, capsys):
    a = _run(tokenizer, tmp_path / "memagent", lambda i: True)
    b = _run(tokenizer, tmp_path / "direct", lambda i: i < 2, mode="direct")
    out = tmp_path / "cmp"
    assert compare.main([str(a), str(b), "--output-dir", str(out)]) == 0
    assert "warning:" not in capsys.readouterr().out  # the same questions, a folder each
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    numbers = json.loads((out / "compare.json").read_text())
    assert [(p["suite"], p["label"], p["metric"]) for p in numbers["pairs"]] == [
        ("ruler_hqa", "50", "sub_em"),
        ("ruler_hqa", "100", "sub_em"),
        ("ruler_hqa", "average", "sub_em"),
    ]
    overall = numbers["pairs"][-1]
    assert (overall["questions"], overall["difference"]) == (16, 75.0)
    assert (overall["first_shared"], overall["second_shared"]) == (100.0, 25.0)
    assert (overall["first_items"], overall["second_items"]) == (16, 16)
    assert numbers["metric"] == "headline"
    assert numbers["cells"]["direct"]["50"] == {
        "suite": "ruler_hqa",
        "task": "hotpotqa",
        "length": 50,
        "metric": "sub_em",
        "value": 25.0,
        "items": 8,
        "cut_share": 0.0,
    }


def test_a_run_on_a_subset_of_the_questions_is_paired_on_the_shared_ones_and_warned_about(tokenizer, tmp_path, capsys):
    """B answers right all 4 questions it has, A the even ones of 8: B's own mean (100) is above
    A's (50), but on the 4 shared questions A - B is -50, and a warning names the length."""
    a = _run(tokenizer, tmp_path / "a", lambda i: i % 2 == 0)
    b = evaluation_run(tokenizer, tmp_path / "b", {"50": 2}, questions=4, right=lambda i: True, facts=_facts())
    out = tmp_path / "cmp"
    assert compare.main([str(a), str(b), "--output-dir", str(out)]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2 and "100" in warnings[0] and "50" in warnings[1]  # 100 only in a; 50 differs
    pairs = json.loads((out / "compare.json").read_text())["pairs"]
    assert [(p["label"], p["questions"]) for p in pairs] == [("50", 4), ("average", 4)]
    assert (pairs[0]["first_shared"], pairs[0]["second_shared"], pairs[0]["difference"]) == (50.0, 100.0, -50.0)
    assert (pairs[0]["first_all"], pairs[0]["first_items"], pairs[0]["second_all"], pairs[0]["second_items"]) == (
        50.0,
        8,
        100.0,
        4,
    )
    assert (pairs[1]["first_items"], pairs[1]["second_items"]) == (16, 4)  # A's full set: both its lengths


def test_runs_without_a_question_in_common_are_refused_and_nothing_is_written(tokenizer, tmp_path, capsys):
    a = evaluation_run(tokenizer, tmp_path / "a", {"50": 2}, facts=_facts())
    b = evaluation_run(tokenizer, tmp_path / "b", {"200": 2}, facts=_facts())
    assert compare.main([str(a), str(b), "--output-dir", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "50" in err and "200" in err
    assert not (tmp_path / "cmp").exists()


def test_a_folder_compared_with_itself_is_warned_about(tokenizer, tmp_path, capsys):
    a = _run(tokenizer, tmp_path / "a", lambda i: True)
    assert compare.main([str(a), str(a), "--output-dir", str(tmp_path / "cmp")]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and str(a) in warnings[0]


def test_the_settings_that_differ_are_listed_and_recorded(tokenizer, tmp_path, capsys):
    """Two runs differing only in MEM_MAX_MEMORY (and a timeout, which shapes no answer)."""
    facts = _facts()
    a = _run(tokenizer, tmp_path / "a", lambda i: True)
    b = _run(tokenizer, tmp_path / "b", lambda i: True)
    for folder, memory, timeout in ((a, 1024, 600.0), (b, 512, 30.0)):
        summary = json.loads((folder / "summary.json").read_text())
        summary["run"] = facts | {"config": {"max_memory_tokens": memory, "request_timeout_s": timeout}}
        (folder / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "cmp"
    assert compare.main([str(a), str(b), "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    differing = json.loads((out / "compare.json").read_text())["settings_that_differ"]
    assert differing == {"config.max_memory_tokens": {"memagent: a": "1024", "memagent: b": "512"}}
    assert "config.max_memory_tokens" in printed and "request_timeout_s" not in printed


def test_the_questions_one_run_got_right_and_the_other_not_are_one_command_away(tokenizer, tmp_path, capsys):
    """A right on all, B on the even ones: B is wrong on the odd ids of each length; the printed
    command opens a page of exactly those questions of B."""
    a = _run(tokenizer, tmp_path / "a", lambda i: True)
    b = _run(tokenizer, tmp_path / "b", lambda i: i % 2 == 0)
    out = tmp_path / "cmp"
    assert compare.main([str(a), str(b), "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    found = json.loads((out / "compare.json").read_text())["disagreements"]
    assert found[0]["ids"] == {"50": ["1", "3", "5", "7"], "100": ["1", "3", "5", "7"]} and found[1]["ids"] == {}
    command = next(line.strip() for line in printed if "--ids" in line)
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "mem_agent.view"]
    page = tmp_path / "page.html"
    assert view.main([*argv[3:], "-o", str(page)]) == 0
    shown = re.findall(r'class="group">(\w+) · #(\d+)<', page.read_text(encoding="utf-8"))
    assert shown == [(label, item) for label in ("50", "100") for item in ("1", "3", "5", "7")]


def test_output_cut_by_its_reader_ends_without_a_traceback(tokenizer, tmp_path):
    a = _run(tokenizer, tmp_path / "a", lambda i: True)
    b = _run(tokenizer, tmp_path / "b", lambda i: i % 2 == 0)
    out = tmp_path / "cmp"
    command = f"{sys.executable} -m mem_agent.compare {a} {b} --output-dir {out} | head -n 1"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "examples")}
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0 and result.stderr == "" and len(result.stdout.splitlines()) == 1
    assert (out / "compare.json").is_file() and (out / "compare.png").is_file()


@pytest.mark.parametrize(
    ("facts", "message"),
    [
        ({"sha": "b" * 64}, "eval_50 differs (sha256 aaaaaaaaaaaa in"),
        ({"rules": {"fold_unicode": True, "sub_em_guard": False}}, "scoring rules differ (fold_unicode=False"),
    ],
)
def test_runs_over_other_data_or_rules_are_refused_unless_forced(tokenizer, tmp_path, capsys, facts, message):
    a = _run(tokenizer, tmp_path / "a", lambda i: True)
    b = _run(tokenizer, tmp_path / "b", lambda i: True, **facts)
    argv = [str(a), str(b), "--output-dir", str(tmp_path / "cmp")]
    assert compare.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: runs cannot be compared: ") and message in err and "--force" in err
    assert err.count("\n") == 1 and not (tmp_path / "cmp").exists()
    assert compare.main([*argv, "--force"]) == 0
    assert f"warning (--force): {message}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{a}"], "give two or more runs to compare"),
        (["{a}", "{tmp}"], "is not an evaluation run: no summary.json"),
        (["{a}", "{a}", "--labels", "x"], "--labels names 1 runs but 2 were given"),
        (["{a}", "{broken}"], "broken/results_100.jsonl:"),
    ],
)
def test_usage_mistakes_are_one_line_errors(tokenizer, tmp_path, capsys, argv, message):
    a = _run(tokenizer, tmp_path / "a", lambda i: True)
    broken = _run(tokenizer, tmp_path / "broken", lambda i: True)
    with (broken / "results_100.jsonl").open("a") as handle:
        handle.write("{not json\n")
    argv = [arg.replace("{broken}", str(broken)) for arg in argv]
    argv = [arg.replace("{a}", str(a)).replace("{tmp}", str(tmp_path)) for arg in argv]
    assert compare.main([*argv, "--output-dir", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_the_memory_agent_and_the_baseline_of_one_evaluator_compare_end_to_end(
    tokenizer, make_eval_files, tmp_path, capsys
):
    """Two real evaluator runs over one data folder (a scripted engine answers): the memory agent and
    --mode direct; compare labels them by mode, pairs every question and finds the same data."""
    data = make_eval_files(6, 12, questions=3)
    runs = {}
    with scripted_engine(tokenizer, lambda prompt, seed: "x") as engine:
        for mode in ("memagent", "direct"):
            runs[mode] = tmp_path / mode
            argv = [
                "--data-root",
                str(data),
                "--lengths",
                "6",
                "12",
                "--output-dir",
                str(runs[mode]),
                "--url",
                engine.url,
            ]
            argv += ["--protocol", "vllm", "--mode", mode, "--context-window", "4096", "--max-final", "16", "--no-plot"]
            argv += ["--chunk-tokens", "512", "--max-memory", "16"]
            assert eval_ruler_hqa.main(argv) == 0
    capsys.readouterr()
    assert compare.main([str(runs["memagent"]), str(runs["direct"]), "--output-dir", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "note:" not in printed
    # The memory agent's settings a direct run never read are one line, not one each.
    (unused,) = [line for line in printed.splitlines() if "not used" in line]
    assert "direct" in unused and "chunk_tokens=512" in unused and "max_memory_tokens=16" in unused
    assert not any(line.strip().startswith("config.") for line in printed.splitlines())
    numbers = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [(p["label"], p["questions"]) for p in numbers["pairs"]] == [("6", 3), ("12", 3), ("average", 6)]
