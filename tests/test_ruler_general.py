"""RULER's general tasks: our generator (every split, two lengths, sized by the real tokenizer), the
reader (text and index contexts, JSON array and JSONL), and the evaluator on them against the real
vLLM CPU stack, with the suite's summary and heat map."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from mem_agent import build_ruler, eval_ruler_hqa
from mem_agent.agent.ruler_scoring import QA_SPLITS, RULER_SPLITS, score_ruler_answer
from mem_agent.evaluation.files import check_eval_file, eval_file, iter_items
from mem_agent.evaluation.reporting import EvalFileReport, write_reports
from mem_agent.evaluation.results import read_results
from mem_agent.tokenization.tokenizer import encode, load_tokenizer
from support.ruler_data import write_essay, write_squad
from support.scripts import SCRIPTS, run_script

LENGTHS = (512, 1024)
SAMPLES = 2
FAST = ["--chunk-tokens", "512", "--max-memory", "24", "--max-final", "16", "--temperature", "1.0", "--top-p", "1.0"]


@pytest.fixture(scope="module")
def sources(synthetic_rows, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ruler_sources")
    hotpot = folder / "hotpotqa_dev.json"
    hotpot.write_text(json.dumps(synthetic_rows[:40]), encoding="utf-8")
    return {
        "--essay": write_essay(synthetic_rows[40:], folder / "essay.txt"),
        "--squad": write_squad(synthetic_rows[:40], folder / "squad.json"),
        "--hotpot": hotpot,
    }


def _build(out: Path, sources: dict[str, Path], tokenizer: Path, *extra: str) -> int:
    argv = ["--out-dir", str(out), "--lengths", *map(str, LENGTHS), "--num-samples", str(SAMPLES)]
    argv += ["--tokenizer", str(tokenizer), *(word for flag, path in sources.items() for word in (flag, str(path)))]
    return build_ruler.main([*argv, *extra])


@pytest.fixture(scope="module")
def ruler_root(sources, tiny_model_path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ruler")
    assert _build(root, sources, tiny_model_path) == 0
    return root


def test_every_split_is_built_at_two_lengths_within_its_token_budget(ruler_root, tiny_model_path):
    tokenizer = load_tokenizer(tiny_model_path)  # the policy's, which the files were sized with
    for split in RULER_SPLITS:
        for length in LENGTHS:
            items = json.loads((ruler_root / f"eval_{split}_{length}.json").read_text(encoding="utf-8"))
            assert [item["index"] for item in items] == list(range(SAMPLES))
            for item in items:
                measured = len(encode(tokenizer, f"{item['context']}\n{item['input']}"))
                assert measured <= item["length"] <= length, (split, length)
                assert item["length"] > length // 2, (split, length)  # the budget is filled, not a token of it
                _assert_answerable(split, item)


def _assert_answerable(split: str, item: dict) -> None:
    """The references are what the context says: hidden values and chains are there, the common
    and frequent words are the most frequent ones, a QA answer is in a document."""
    context, outputs = item["context"], item["outputs"]
    if split == "cwe" or split == "fwe":
        words = [word.strip(".") for word in context.split() if not word.rstrip(".").isdigit()]
        counts = Counter(words)
        threshold = min(counts[word] for word in outputs)
        assert sum(count >= threshold for count in counts.values()) == len(outputs)
    else:  # a yes/no question's answer is not a span of its documents
        assert all(output in context or output in ("yes", "no") for output in outputs)


def test_a_rebuild_keeps_every_file_and_bad_requests_are_refused_early(ruler_root, sources, tiny_model_path, tmp_path):
    before = {path.name: path.stat().st_mtime_ns for path in ruler_root.glob("eval_*.json")}
    assert _build(ruler_root, sources, tiny_model_path) == 0
    assert {path.name: path.stat().st_mtime_ns for path in ruler_root.glob("eval_*.json")} == before
    missing = {flag: path for flag, path in sources.items() if flag != "--essay"}
    command = [sys.executable, "-m", "mem_agent.build_ruler", "--out-dir", str(tmp_path / "out")]
    command += ["--lengths", "512", "0", "--tokenizer", str(tiny_model_path)]
    command += [word for flag, path in missing.items() for word in (flag, str(path))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "--essay" in done.stderr and "--lengths 0" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_index_contexts_read_as_the_text_they_stand_for(ruler_root, sources, tmp_path):
    """A qa_2 file whose contexts are document indices into hotpotqa_dev.json (RULER's layout past
    2M tokens), written as JSONL, reads as the same items as the text file."""
    text_file = ruler_root / "eval_qa_2_512.json"
    items = json.loads(text_file.read_text(encoding="utf-8"))
    corpus = json.loads((sources["--hotpot"]).read_text(encoding="utf-8"))
    documents = sorted({f"{t}\n{''.join(s)}" for row in corpus for t, s in zip(*row["context"].values(), strict=True)})
    folder = tmp_path / "indexed"
    folder.mkdir()
    (folder / "hotpotqa_dev.json").write_text(json.dumps(corpus), encoding="utf-8")
    lines = []
    for item in items:
        blocks = [block.split(":\n", 1)[1] for block in item["context"].split("\n\nDocument ")]
        lines.append(json.dumps(item | {"context": [documents.index(block) for block in blocks]}))
    (folder / "eval_qa_2_512.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = list(iter_items(eval_file(folder / "eval_qa_2_512.json")))
    expected = list(iter_items(eval_file(text_file)))
    assert [(i.question, i.answers, i.context) for i in read] == [(i.question, i.answers, i.context) for i in expected]
    (folder / "hotpotqa_dev.json").unlink()
    with pytest.raises(ValueError, match=r"hotpotqa_dev\.json"):
        check_eval_file(folder / "eval_qa_2_512.json")


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"input": "q", "context": "c", "outputs": []}, "outputs"),
        ({"input": "", "context": "c", "outputs": ["a"]}, "input"),
        ({"input": "q", "context": [1, 2], "outputs": ["a"]}, "context"),
    ],
)
def test_a_bad_item_is_refused_naming_its_file_and_field(tmp_path, item, field):
    path = tmp_path / "eval_vt_8192.json"
    path.write_text(json.dumps([item]), encoding="utf-8")
    command = [sys.executable, "-m", "mem_agent.evaluation.files", "--check", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert str(path) in done.stderr and f"'{field}'" in done.stderr


@pytest.mark.server
def test_the_evaluator_runs_every_split_and_writes_the_suite_summary_and_heat_map(stack, ruler_root, tmp_path, capsys):
    argv = ["--ruler-root", str(ruler_root), "--output-dir", str(tmp_path), "--url", stack.router_url]
    argv += ["--protocol", "vllm", "--tokenizer", str(stack.model_path), "--limit", "1", *FAST]
    assert eval_ruler_hqa.main(argv) == 0
    labels = [f"{split}_{length}" for split in RULER_SPLITS for length in LENGTHS]
    for label in labels:
        split = label.rsplit("_", 1)[0]
        records = read_results(tmp_path / f"results_{label}.jsonl")
        assert [r["id"] for r in records] == ["0"]  # --limit 1: the first item of each file
        for record in records:
            assert record["status"] == "completed", record.get("error")
            rescored = score_ruler_answer(record["answer"], record["answers"], split)
            expected = rescored.fields() if split in QA_SPLITS else {"string_match_all": rescored.sub_em}
            assert {key: record.get(key) for key in expected} == expected
            assert ("f1" in record) == (split in QA_SPLITS)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["suites"] == ["ruler"] and {entry["suite"] for entry in summary["results"]} == {"ruler"}
    assert [entry["label"] for entry in summary["results"]] == labels
    assert {entry["metric"] for entry in summary["results"] if entry["task"] not in QA_SPLITS} == {"string_match_all"}
    assert (tmp_path / "ruler_heatmap.png").stat().st_size > 0
    capsys.readouterr()
    assert eval_ruler_hqa.main([*argv, "--check"]) == 0
    assert "left to run: 0" in capsys.readouterr().out


def _suite_case(root: Path, case: str) -> tuple[dict[str, str], str]:
    """run-eval.sh's settings for a refused SUITE=ruler launch, and what the refusal must name."""
    model, ruler = root / "model", root / "ruler"
    model.mkdir()
    (model / "config.json").write_text("{}")
    ruler.mkdir()
    good = {"index": 0, "input": "Which variables hold 5?", "context": "Variable AB holds 5.", "outputs": ["AB"]}
    (ruler / "eval_vt_8192.json").write_text(json.dumps([good]))
    served = {"MODEL_PATH": str(model), "SUITE": "ruler", "RULER_ROOT": str(ruler), "RULER_SPLITS": "vt"}
    if case == "bad item":
        (ruler / "eval_vt_16384.json").write_text(json.dumps([good | {"outputs": []}]))
        return served | {"RULER_LENGTHS": "8192 16384"}, "eval_vt_16384.json"
    return {
        "missing file": (served | {"RULER_LENGTHS": "8192 16384"}, "eval_vt_16384.json"),
        "unknown split": (served | {"RULER_SPLITS": "vt niah_single_9", "RULER_LENGTHS": "8192"}, "RULER_SPLITS"),
        "ruler settings with hqa": ({"MODEL_PATH": str(model), "RULER_LENGTHS": "8192"}, "RULER_LENGTHS"),
        "demo": ({"SUITE": "ruler"}, "SUITE"),
    }[case]


@pytest.mark.parametrize("case", ["missing file", "bad item", "unknown split", "ruler settings with hqa", "demo"])
def test_run_eval_refuses_a_bad_ruler_suite_before_anything_starts(tmp_path, case):
    env, named = _suite_case(tmp_path, case)
    result = run_script(SCRIPTS / "run-eval.sh", env | {"OUTPUT_ROOT": str(tmp_path / "runs")}, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert named in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "runs").exists()


def _report(folder: Path, label: str, score: float) -> EvalFileReport:
    (folder / f"results_{label}.jsonl").write_text("")
    headline = "string_match_all" if label.startswith("vt") else "sub_em"
    summary = {"items": 2, "completed": 2, "failed": 0, "missing": 0, headline: score, "em": 0.0, "f1": 0.0}
    name = f"eval_{label}.json"
    return EvalFileReport(label, folder / name, summary | {"strict": 0.0, "mean_context_tokens": 900.0, "reused": 0})


def test_one_summary_holds_both_suites_and_a_rerun_keeps_the_other_cells(tmp_path, capsys):
    reports = [_report(tmp_path, "50", 40.0), _report(tmp_path, "vt_8192", 75.0), _report(tmp_path, "qa_1_8192", 50.0)]
    write_reports(reports, tmp_path, [{"mode": "memagent"}])
    write_reports([_report(tmp_path, "vt_16384", 25.0)], tmp_path, [{"mode": "memagent"}], keep_other_labels=True)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["suites"] == ["ruler_hqa", "ruler"]
    assert [entry["label"] for entry in summary["results"] if entry["suite"] == "ruler_hqa"] == ["50"]
    cells = {(entry["task"], entry["length"]): entry for entry in summary["results"] if entry["suite"] == "ruler"}
    assert list(cells) == [("vt", 8192), ("vt", 16384), ("qa_1", 8192)]
    assert {key: cells[("vt", 8192)][key] for key in ("metric", "string_match_all")} == {
        "metric": "string_match_all",
        "string_match_all": 75.0,
    }
    assert (
        "f1" not in cells[("vt", 8192)]
        and cells[("qa_1", 8192)]["metric"] == "sub_em"
        and "f1" in cells[("qa_1", 8192)]
    )
    table = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if " | " in line]
    assert [cell.strip() for cell in table[-2]] == ["vt", "75.0", "25.0"]
    assert [cell.strip() for cell in table[-1]] == ["qa_1", "50.0", "-"]
    assert (tmp_path / "ruler_heatmap.png").stat().st_size > 0 and (tmp_path / "accuracy_vs_length.png").is_file()
