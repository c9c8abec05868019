"""Every suite in one shape, run end to end against a scripted server (tests/support/scripted_engine.py):
files laid out as RULER's, MemAgent's and LongBench's own tools write them are read, every item runs
(a file whose own ids repeat is named by position), a server that is always right scores 100 in every
cell and one right on every second item 50, partial credit stays partial, and an empty answer is left
out of the mean unless `--empty-as-wrong`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mem_agent import eval_ruler_hqa
from mem_agent.data.ruler_records import split_ruler_input
from mem_agent.evaluation.results import read_results
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3
from support.longbench_data import write_longbench
from support.ruler_data import planted_items
from support.ruler_layouts import write_ruler_own
from support.scripted_engine import scripted_engine

FAST = ["--chunk-tokens", "512", "--max-memory", "48", "--max-final", "48", "--temperature", "1.0", "--top-p", "1.0"]
OWN_SPLIT = "niah_single_1"  # a file laid out as RULER's own prepare.py writes it, with no `context`
MERGED_INDEX = [0, 1, 0, 0, 0, 0, 0, 1, 0, 0]  # MemAgent's merged chunks restart `index` at 0
WRONG = "zzqx"


def _merged_ruler_file(rows: list[dict], path: Path) -> Path:
    """niah_multivalue as MemAgent's merged chunks lay it out: a JSON array of RULER records whose
    `index` restarts at 0, each with four values to find in its haystack."""
    items = []
    for number, index in enumerate(MERGED_INDEX):
        values = [f"{7000 + 10 * number + k}" for k in range(4)]
        key = f"key-{number}-{rows[number]['id']}"
        haystack = " ".join(f"One of the special magic numbers for {key} is: {value}." for value in values)
        context = f"{rows[number]['context']['sentences'][0][0]} {haystack}"
        question = f"What are all the special magic numbers for {key} mentioned in the provided text?"
        items.append({"index": index, "input": question, "outputs": values, "context": context, "length": 900})
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def suite_folders(make_eval_files, synthetic_rows, tmp_path_factory) -> dict[str, Path]:
    ruler = tmp_path_factory.mktemp("ruler")
    _merged_ruler_file(synthetic_rows, ruler / "eval_niah_multivalue_8192.json")
    write_ruler_own(ruler, OWN_SPLIT, 8192, planted_items(OWN_SPLIT, synthetic_rows[50:], 10))
    longbench = tmp_path_factory.mktemp("longbench")
    write_longbench(synthetic_rows[30:38], longbench, tasks=("hotpotqa",))  # rows no other suite asks
    write_longbench(synthetic_rows[40:48], longbench, tasks=("musique",))
    return {"hqa": make_eval_files(10, questions=10), "ruler": ruler, "longbench": longbench}


def _questions(folders: dict[str, Path]) -> dict[str, tuple[int, str]]:
    """Each item's question -> (its position in its file, the text that answers it fully)."""
    known = {}
    for item_position, item in enumerate(json.loads((folders["hqa"] / "eval_10.json").read_text())):
        known[item["input"]] = (item_position, item["answers"][0])
    for item_position, item in enumerate(json.loads((folders["ruler"] / "eval_niah_multivalue_8192.json").read_text())):
        known[item["input"]] = (item_position, " ".join(item["outputs"]))
    own = folders["ruler"] / "8192" / "data" / OWN_SPLIT / "validation.jsonl"
    for item_position, line in enumerate(own.read_text().splitlines()):
        item = json.loads(line)
        known[split_ruler_input(OWN_SPLIT, item["input"])[1]] = (item_position, " ".join(item["outputs"]))
    for path in sorted(folders["longbench"].glob("*.jsonl")):
        for item_position, line in enumerate(path.read_text().splitlines()):
            item = json.loads(line)
            known[item["input"]] = (item_position, item["answers"][0])
    return known


def _policy(
    folders: dict[str, Path], decide: Callable[[int, str], str | None]
) -> Callable[[str, int | None], str | None]:
    """An answer for every prompt: `decide(position, full answer)` for the item whose question it holds."""
    known = _questions(folders)

    def answer(prompt: str, seed: int | None) -> str | None:
        for question, (position, full) in known.items():
            if question in prompt:
                return decide(position, full)
        raise AssertionError(f"no known question in the prompt: {prompt[:200]}")

    return answer


def _evaluate(url: str, folders: dict[str, Path], output: Path, *extra: str) -> int:
    argv = ["--data-root", str(folders["hqa"]), "--lengths", "10", "--ruler-root", str(folders["ruler"])]
    argv += ["--longbench-root", str(folders["longbench"]), "--output-dir", str(output), "--no-plot"]
    argv += ["--url", url, "--protocol", "vllm", "--tokenizer", BUNDLED_QWEN3, *FAST, *extra]
    return eval_ruler_hqa.main(argv)


@pytest.fixture
def serve(tokenizer) -> Callable[[Callable[[str, int | None], str | None]], Iterator]:
    def start(answer: Callable[[str, int | None], str | None]):
        return scripted_engine(tokenizer, answer)

    return start


def _cells(output: Path) -> dict[str, dict]:
    return {cell["label"]: cell for cell in json.loads((output / "summary.json").read_text())["results"]}


def test_every_suite_scores_100_for_a_server_always_right_over_every_item(suite_folders, serve, tmp_path, capsys):
    with serve(_policy(suite_folders, lambda position, full: full)) as engine:
        assert _evaluate(engine.url, suite_folders, tmp_path) == 0
    cells = _cells(tmp_path)
    assert set(cells) == {"10", "niah_single_1_8192", "niah_multivalue_8192", "longbench_hotpotqa", "longbench_musique"}
    assert {cell["suite"] for cell in cells.values()} == {"ruler_hqa", "ruler", "longbench"}
    assert {label: cell["metric"] for label, cell in cells.items()} == {
        "10": "sub_em",
        "niah_single_1_8192": "string_match_all",
        "niah_multivalue_8192": "string_match_all",
        "longbench_hotpotqa": "qa_f1",
        "longbench_musique": "qa_f1",
    }
    for label, cell in cells.items():
        assert cell[cell["metric"]] == 100.0, label
        assert cell["items"] == cell["completed"] == len(read_results(tmp_path / f"results_{label}.jsonl")), label
    assert cells["niah_multivalue_8192"]["items"] == len(MERGED_INDEX)  # repeated `index`: none merged
    ids = [line["id"] for line in read_results(tmp_path / "results_niah_multivalue_8192.jsonl")]
    assert sorted(ids, key=int) == [str(n) for n in range(len(MERGED_INDEX))]
    assert "eval_niah_multivalue_8192.json" in capsys.readouterr().out  # the identity rule is said


def test_every_suite_scores_50_for_a_server_right_on_every_second_item(suite_folders, serve, tmp_path):
    with serve(_policy(suite_folders, lambda position, full: full if position % 2 == 0 else WRONG)) as engine:
        assert _evaluate(engine.url, suite_folders, tmp_path) == 0
    for label, cell in _cells(tmp_path).items():
        assert cell["items"] % 2 == 0, label
        assert cell[cell["metric"]] == 50.0, label


def test_partial_credit_stays_partial(suite_folders, serve, tmp_path):
    def one_value_of_four(position: int, full: str) -> str:
        return full.split()[0] if full.split()[0].isdigit() else full

    with serve(_policy(suite_folders, one_value_of_four)) as engine:
        assert _evaluate(engine.url, suite_folders, tmp_path) == 0
    lines = read_results(tmp_path / "results_niah_multivalue_8192.jsonl")
    assert {line["string_match_all"] for line in lines} == {0.25}
    assert _cells(tmp_path)["niah_multivalue_8192"]["string_match_all"] == 25.0


@pytest.mark.parametrize(("flags", "expected", "scored"), [((), 50.0, 8), (("--empty-as-wrong",), 40.0, 10)])
def test_an_empty_answer_is_left_out_of_the_mean_unless_counted_as_wrong(
    suite_folders, serve, tmp_path, flags, expected, scored
):
    """MemAgent's aggregation: 4 right, 2 empty, 4 wrong is 50.0 (40.0 with the empty ones as wrong)."""

    def decide(position: int, full: str) -> str | None:
        return None if position in (0, 1) else full if position % 2 == 0 else WRONG

    with serve(_policy(suite_folders, decide)) as engine:
        assert _evaluate(engine.url, suite_folders, tmp_path, *flags) == 0
    cell = _cells(tmp_path)["10"]
    assert (cell["empty"], cell["scored"], cell["sub_em"]) == (2, scored, expected)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["run"]["scoring"]["empty_answers"] == ("wrong" if flags else "left out")


@pytest.mark.server
def test_longbench_runs_end_to_end_on_the_cpu_stack(stack, synthetic_rows, tmp_path):
    """LongBench QA through the real vLLM CPU server and router: every item of both tasks gets a
    completed result scored by qa_f1, and the summary holds one LongBench cell per task."""
    root = write_longbench(synthetic_rows[:3], tmp_path / "longbench", tasks=("hotpotqa", "2wikimqa"))
    argv = ["--longbench-root", str(root), "--output-dir", str(tmp_path / "run"), "--no-plot"]
    argv += ["--url", stack.router_url, "--protocol", "vllm", "--tokenizer", str(stack.model_path), *FAST]
    assert eval_ruler_hqa.main(argv) == 0
    cells = _cells(tmp_path / "run")
    assert set(cells) == {"longbench_hotpotqa", "longbench_2wikimqa"}
    for label, cell in cells.items():
        lines = read_results(tmp_path / "run" / f"results_{label}.jsonl")
        assert [line["status"] for line in lines] == ["completed"] * 3
        assert all(0.0 <= line["qa_f1"] <= 1.0 and line["suite"] == "longbench" for line in lines)
        assert (cell["suite"], cell["metric"], cell["items"]) == ("longbench", "qa_f1", 3)
