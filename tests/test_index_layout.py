"""RULER-HQA's index layout (MemAgent's eval_12800/25600.json): contexts as positions in the HotpotQA
dev corpus, built by our builder from the synthetic set, rebuilt into text as MemAgent's
ruler_hqa_over1m.py does, evaluated on the CPU stack, resumable, and refused early on bad input."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mem_agent import build_long_context, eval_ruler_hqa, synthetic_qa
from mem_agent.common.token_file import spill
from mem_agent.evaluation import evaluator
from mem_agent.evaluation.files import check_eval_file
from mem_agent.evaluation.results import read_results
from support.hub_standin import hub_standin
from support.scripts import SCRIPTS, run_script

PREPARE = SCRIPTS / "prepare-eval-data.sh"
RUN_EVAL = SCRIPTS / "run-eval.sh"

QUESTIONS = 4
FAST = ["--chunk-tokens", "512", "--max-memory", "24", "--max-final", "16", "--temperature", "0", "--seed", "1"]


def _memagent_documents(rows: list[dict]) -> list[str]:
    """MemAgent's read_hotpotqa documents, written out here from its rule: title, newline, the
    sentences joined as they are; de-duplicated and sorted."""
    docs = set()
    for row in rows:
        context = row["context"]
        for title, sentences in zip(context["title"], context["sentences"], strict=True):
            docs.add(title + "\n" + "".join(sentences))
    return sorted(docs)


@pytest.fixture(scope="module")
def index_root(synthetic_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """eval_20.json and eval_60.json in the index layout, with the corpus beside them."""
    root = tmp_path_factory.mktemp("index_layout")
    argv = ["--input", str(synthetic_file), "--num-docs", "20", "60", "--num-questions", str(QUESTIONS)]
    assert build_long_context.main([*argv, "--out-dir", str(root), "--layout", "index"]) == 0
    shutil.copy(synthetic_file, root / "hotpotqa_dev.json")
    return root


def _items(path: Path) -> list[dict]:
    return json.loads(path.read_text())


def test_the_builder_writes_positions_into_the_sorted_corpus(index_root, synthetic_rows, synthetic_file, tmp_path):
    documents = _memagent_documents(synthetic_rows)
    for count in (20, 60):
        items = _items(index_root / f"eval_{count}.json")
        assert len(items) == QUESTIONS
        for item in items:
            row = synthetic_rows[item["index"]]
            own = set(_memagent_documents([row]))
            chosen = [documents[p] for p in item["context"]]
            assert item["num_docs"] == count == len(set(item["context"]))
            assert own <= set(chosen) and item["answers"] == [row["answer"]] and item["input"] == row["question"]
            assert item["corpus_documents"] == len(documents)
    again = tmp_path / "again"
    argv = ["--input", str(synthetic_file), "--num-docs", "20", "--num-questions", str(QUESTIONS)]
    assert build_long_context.main([*argv, "--out-dir", str(again), "--layout", "index"]) == 0
    assert (again / "eval_20.json").read_bytes() == (index_root / "eval_20.json").read_bytes()


def test_auto_layout_writes_indices_only_above_ten_thousand_documents(synthetic_file, tmp_path):
    argv = ["--input", str(synthetic_file), "--num-docs", "20", "--num-questions", "2", "--out-dir", str(tmp_path)]
    assert build_long_context.main(argv) == 0
    assert isinstance(_items(tmp_path / "eval_20.json")[0]["context"], str)
    refused = ["--input", str(synthetic_file), "--num-docs", "12800", "--num-questions", "2"]
    assert build_long_context.main([*refused, "--out-dir", str(tmp_path / "big")]) == 2  # a corpus of ~2,000
    assert not (tmp_path / "big" / "eval_12800.json").exists()


def _evaluate(stack, root: Path, out: Path, *extra: str) -> int:
    argv = ["--data-root", str(root), "--lengths", "20", "60", "--output-dir", str(out), "--no-plot"]
    argv += ["--url", stack.router_url, "--protocol", "vllm", "--tokenizer", str(stack.model_path)]
    return eval_ruler_hqa.main([*argv, *FAST, *extra])


@pytest.mark.server
def test_index_files_evaluate_on_the_stack_and_a_rerun_resumes(stack, index_root, synthetic_rows, tmp_path, capsys):
    assert _evaluate(stack, index_root, tmp_path, "--limit", "2") == 0
    assert len(read_results(tmp_path / "results_60.jsonl")) == 2
    assert _evaluate(stack, index_root, tmp_path) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["label"] for r in summary["results"]] == ["20", "60"]
    assert summary["run"]["items_reused"] == 4 and summary["run"]["items_run"] == 4
    corpus_sha = _items(index_root / "eval_20.json")[0]["corpus_sha256"]
    assert summary["run"]["corpus_sha256"] == {"20": corpus_sha, "60": corpus_sha}
    for count in (20, 60):
        results = read_results(tmp_path / f"results_{count}.jsonl")
        assert sorted(r["id"] for r in results) == sorted(
            str(i["index"]) for i in _items(index_root / f"eval_{count}.json")
        )
        assert all(r["status"] == "completed" and r["context_tokens"] > count * 20 for r in results)
    short = read_results(tmp_path / "results_20.jsonl")[0]["context_tokens"]
    assert read_results(tmp_path / "results_60.jsonl")[0]["context_tokens"] > 2 * short


@pytest.mark.server
def test_a_spilled_context_gives_the_answers_an_in_memory_one_gives(stack, index_root, tmp_path, monkeypatch):
    """At temperature 0 the ids read back a chunk at a time from the spill file make the same turns."""
    assert _evaluate(stack, index_root, tmp_path / "memory", "--lengths", "60") == 0
    monkeypatch.setattr(evaluator, "SPILL_ABOVE_TOKENS", 0)
    assert _evaluate(stack, index_root, tmp_path / "spilled", "--lengths", "60") == 0
    kept = ("id", "prediction", "context_tokens", "num_chunks", "generated_tokens")
    in_memory = sorted(
        [{k: r[k] for k in kept} for r in read_results(tmp_path / "memory" / "results_60.jsonl")], key=str
    )
    spilled = sorted(
        [{k: r[k] for k in kept} for r in read_results(tmp_path / "spilled" / "results_60.jsonl")], key=str
    )
    assert spilled == in_memory
    assert not [p for p in (tmp_path / "spilled").iterdir() if p.name.startswith("mem_agent_ids_")]


def test_a_spilled_array_reads_back_the_slices_it_was_given(tmp_path):
    values = np.arange(10_000, dtype=np.int32) * 7
    spilled = spill(values, tmp_path)
    assert spilled.shape == (10_000,) and len(spilled) == 10_000
    assert np.array_equal(spilled[0:5000], values[:5000]) and np.array_equal(spilled[9_990:20_000], values[9_990:])
    assert spilled[5:5].shape == (0,) and list(tmp_path.iterdir()) == []  # the file never had a name
    with pytest.raises(TypeError):
        spilled[::2]


def _refusal(instant_server: str, root: Path, out: Path, capsys, *extra: str) -> str:
    argv = ["--data-root", str(root), "--lengths", "20", "--output-dir", str(out), "--url", instant_server]
    assert eval_ruler_hqa.main([*argv, "--protocol", "vllm", "--no-plot", *extra]) == 2
    assert not (out / "results_20.jsonl").exists()
    return capsys.readouterr().err


def _copy_root(index_root: Path, tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    shutil.copy(index_root / "eval_20.json", root)
    shutil.copy(index_root / "hotpotqa_dev.json", root)
    return root


def test_a_position_outside_the_corpus_is_refused(instant_server, index_root, tmp_path, capsys):
    root = _copy_root(index_root, tmp_path)
    items = _items(root / "eval_20.json")
    items[1]["context"][3] = items[1]["corpus_documents"]
    (root / "eval_20.json").write_text(json.dumps(items))
    error = _refusal(instant_server, root, tmp_path / "out", capsys)
    assert "item 1" in error and "'context'" in error and str(items[1]["corpus_documents"]) in error


def test_a_missing_corpus_is_refused_naming_the_path_it_looked_for(instant_server, index_root, tmp_path, capsys):
    root = _copy_root(index_root, tmp_path)
    (root / "hotpotqa_dev.json").unlink()
    assert str(root / "hotpotqa_dev.json") in _refusal(instant_server, root, tmp_path / "out", capsys)
    elsewhere = tmp_path / "elsewhere.json"
    shutil.copy(index_root / "hotpotqa_dev.json", elsewhere)
    assert check_eval_file(root / "eval_20.json", corpus=elsewhere) == [
        str(i["index"]) for i in _items(root / "eval_20.json")
    ]


def test_a_corpus_of_another_size_or_sha256_is_refused(instant_server, index_root, synthetic_rows, tmp_path, capsys):
    root = _copy_root(index_root, tmp_path)
    (root / "hotpotqa_dev.json").write_text(json.dumps(synthetic_rows[:-1]))  # fewer documents
    assert str(_items(root / "eval_20.json")[0]["corpus_documents"]) in _refusal(
        instant_server, root, tmp_path / "a", capsys
    )
    rows = json.loads((index_root / "hotpotqa_dev.json").read_text())
    rows[0]["question"] += " "  # the same documents, another file
    (root / "hotpotqa_dev.json").write_text(json.dumps(rows))
    error = _refusal(instant_server, root, tmp_path / "b", capsys)
    assert _items(root / "eval_20.json")[0]["corpus_sha256"] in error


def test_memagent_files_without_corpus_fields_need_the_dev_corpus_size(index_root, tmp_path):
    root = _copy_root(index_root, tmp_path)
    items = _items(root / "eval_20.json")
    for item in items:
        del item["corpus_sha256"], item["corpus_documents"]
    (root / "eval_20.json").write_text(json.dumps(items))
    with pytest.raises(ValueError, match="66635"):
        check_eval_file(root / "eval_20.json")


# ---- prepare-eval-data.sh: lengths above 10,000 documents ------------------------------------------


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic set of more than 12,800 distinct documents, so that eval_12800.json can be built."""
    path = tmp_path_factory.mktemp("big_corpus") / "raw.json"
    assert synthetic_qa.main(["--out", str(path), "--num-questions", "1400"]) == 0
    return path


def _prepare_table(stdout: str) -> dict[str, list[str]]:
    rows = [line.split("|") for line in stdout.splitlines() if line.count("|") == 4]
    return {cells[0].strip(): [c.strip() for c in cells] for cells in rows}


def test_prepare_builds_index_files_and_puts_the_corpus_where_the_evaluator_looks(tmp_path, big_corpus):
    root = tmp_path / "ruler"
    env = {"DATA_ROOT": str(root), "LENGTH": "20 12800", "NUM_QUESTIONS": "2"}
    result = run_script(PREPARE, env, "--build-from", str(big_corpus))
    assert result.returncode == 0, result.stderr
    table = _prepare_table(result.stdout)
    assert table["20"][1:3] == ["built", "2"] and table["12800"][1:3] == ["built", "2"]
    assert (root / "hotpotqa_dev.json").read_bytes() == big_corpus.read_bytes()
    (item, _) = _items(root / "eval_12800.json")
    assert len(item["context"]) == 12800 and isinstance(_items(root / "eval_20.json")[0]["context"], str)


def test_prepare_downloads_the_corpus_first_and_checks_its_sha256(tmp_path, index_root):
    """The eval file from the hub, the corpus from its pinned URL (served by the same stand-in)."""
    sha = hashlib.sha256((index_root / "hotpotqa_dev.json").read_bytes()).hexdigest()
    files = {"eval_12800.json": index_root / "eval_20.json", "corpus.json": index_root / "hotpotqa_dev.json"}
    with hub_standin("BytedTsinghua-SIA/hotpotqa", files) as hub:
        corpus_url = f"{hub.url}/datasets/BytedTsinghua-SIA/hotpotqa/resolve/main/corpus.json"
        env = {"LENGTH": "12800", "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "CORPUS_URL": corpus_url}
        wrong = run_script(PREPARE, env | {"DATA_ROOT": str(tmp_path / "a"), "CORPUS_SHA256": "0" * 64}, "--download")
        right = run_script(PREPARE, env | {"DATA_ROOT": str(tmp_path / "b"), "CORPUS_SHA256": sha}, "--download")
    assert wrong.returncode == 1 and _prepare_table(wrong.stdout)["12800"][1] == "download failed"
    assert sha in wrong.stderr and not (tmp_path / "a" / "hotpotqa_dev.json").exists()
    assert right.returncode == 0, right.stderr
    assert _prepare_table(right.stdout)["12800"][1:3] == ["downloaded", str(QUESTIONS)]
    assert hashlib.sha256((tmp_path / "b" / "hotpotqa_dev.json").read_bytes()).hexdigest() == sha


def test_run_eval_takes_the_over_a_million_lengths_with_their_corpus(instant_server, index_root, tmp_path):
    """LENGTH="12800 25600" as any other: each file read in full with its corpus before anything starts."""
    root = tmp_path / "data"
    root.mkdir()
    shutil.copy(index_root / "hotpotqa_dev.json", root)
    for count in (12800, 25600):
        shutil.copy(index_root / "eval_20.json", root / f"eval_{count}.json")
    env = {"URL": instant_server, "DATA_ROOT": str(root), "LENGTH": "12800 25600", "DRY_RUN": "1"}
    env |= {"OUTPUT_ROOT": str(tmp_path / "runs")}
    result = run_script(RUN_EVAL, env)
    assert result.returncode == 0, result.stderr
    (evaluate,) = [line for line in result.stdout.splitlines() if "-m mem_agent.eval_ruler_hqa" in line]
    assert "--lengths 12800 25600" in evaluate
    (root / "hotpotqa_dev.json").unlink()
    missing = run_script(RUN_EVAL, env)
    assert missing.returncode == 2 and str(root / "hotpotqa_dev.json") in missing.stderr
