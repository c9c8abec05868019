"""Comparing evaluation runs: a per-length table, one overlaid plot, and per pair of runs the
paired difference on the questions both answered with a seeded 95% bootstrap interval; runs over
other data or scoring rules are refused in one line unless forced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem_agent import compare, eval_ruler_hqa
from mem_agent.observability.comparison import load_eval_run, paired_difference
from support.scripted_engine import scripted_engine
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
    assert [(d.length, d.questions) for d in first] == [("50", 7), ("100", 8), ("all", 15)]
    assert first[0].difference == pytest.approx(100 * 3 / 7) and first[1].difference == 50.0
    assert all(d.low <= d.difference <= d.high for d in first)
    assert first == paired_difference(a, b, "sub_em", seed=3)
    assert first[2].high - first[2].low < first[1].high - first[1].low  # more questions, narrower
    assert first[2].difference == pytest.approx(100 * 7 / 15)  # 3 of 7, then 4 of 8, pooled


def test_the_command_prints_both_tables_and_writes_the_plot(tokenizer, tmp_path, capsys):
    a = _run(tokenizer, tmp_path / "memagent", lambda i: True)
    b = _run(tokenizer, tmp_path / "direct", lambda i: i < 2, mode="direct")
    out = tmp_path / "cmp"
    assert compare.main([str(a), str(b), "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| memagent sub_em |" in printed and "| direct sub_em" in printed
    assert "memagent - direct |  all |        16 |             +75.0 |" in printed
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    numbers = json.loads((out / "compare.json").read_text())
    assert [p["length"] for p in numbers["pairs"]] == ["50", "100", "all"]


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
    assert "note:" not in printed and "memagent - direct |  all |         6 |" in printed
