"""`--save-trajectories`: the evaluator keeps one per-turn record per item beside its result, in
the training records' layout, and a resumed run never doubles or orphans one.

Runs the evaluator for real against the instant latency stand-in (as test_eval_reruns does):
these tests are about what is written, not the model."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from mem_agent import eval_ruler_hqa, view
from mem_agent.agent.gold_marks import holds_gold
from mem_agent.evaluation.results import read_results
from mem_agent.observability.trajectory_records import EXCERPT_CHARS, read_records

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm", "--no-plot"]


@pytest.fixture(scope="module")
def data_root(make_eval_files) -> Path:
    return make_eval_files(6, questions=3)


def _evaluate(server: str, data_root: Path, out: Path, *extra: str) -> int:
    argv = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", server]
    return eval_ruler_hqa.main([*argv, *FAST, *extra])


def test_each_item_gets_one_record_with_every_memory_and_the_scored_answer(instant_server, data_root, tmp_path):
    assert _evaluate(instant_server, data_root, tmp_path, "--save-trajectories") == 0
    results = {r["id"]: r for r in read_results(tmp_path / "results_6.jsonl")}
    records = list(read_records(tmp_path / "trajectories_6.jsonl"))
    assert sorted(r.item_id for r in records) == sorted(results) and len(records) == 3
    for record in records:
        result = results[record.item_id]
        assert record.source == "eval" and record.eval_set == "eval_6.json" and record.mode == "memagent"
        assert record.question == result["question"] and record.ground_truths == result["answers"]
        assert record.answer == result["answer"] and record.scores["sub_em"] == result["sub_em"]
        kinds = [turn.kind for turn in record.turns]
        assert kinds == ["memory"] * (len(kinds) - 1) + ["final"] and len(kinds) == result["num_chunks"] + 1
        assert [turn.step for turn in record.turns] == list(range(len(kinds)))
        assert all(turn.prompt_tokens > 0 and turn.response_tokens == 8 for turn in record.turns)
        assert all(turn.memory_tokens <= 8 and isinstance(turn.text, str) for turn in record.turns)
        assert all(turn.cut == (turn.finish_reason == "length") for turn in record.turns)


@pytest.mark.parametrize("flag", [["--save-trajectories"], []])
def test_the_last_lines_say_where_the_records_are_and_give_the_command_that_shows_them(
    instant_server, data_root, tmp_path, capsys, flag
):
    """The printed view command, run as printed, writes the page of this run; with the flag the
    records' files are named, without it the flag that keeps them is."""
    assert _evaluate(instant_server, data_root, tmp_path / "out", *flag) == 0
    lines = capsys.readouterr().out.splitlines()
    line = next(line for line in reversed(lines) if "mem_agent.view" in line)
    assert ("trajectories_*.jsonl" in line) == bool(flag) and ("--save-trajectories" in line) != bool(flag)
    command = shlex.split(line[line.index("python -m mem_agent.view") :].split(" (add")[0])
    assert command[:3] == ["python", "-m", "mem_agent.view"]
    assert view.main(command[3:]) == 0
    page = (tmp_path / "out" / "view.html").read_text(encoding="utf-8")
    assert page.count('<details class="item"') == 3 and ('<div class="memory">' in page) == bool(flag)


def test_each_memory_keeps_where_its_chunk_lies_and_the_page_marks_the_chunk_holding_the_gold(
    instant_server, data_root, tmp_path
):
    """Chunks of 256 tokens tile the document in order; a memory turn whose chunk holds a gold answer
    keeps that, with a bounded excerpt around it, and the page marks the gold in it."""
    assert _evaluate(instant_server, data_root, tmp_path, "--save-trajectories") == 0
    records = list(read_records(tmp_path / "trajectories_6.jsonl"))
    for record in records:
        memories = [turn for turn in record.turns if turn.kind == "memory"]
        spans = [(turn.chunk_start, turn.chunk_end) for turn in memories]
        assert spans == [(256 * i, min(256 * (i + 1), record.context_tokens)) for i in range(len(memories))]
        assert all(len(turn.chunk_excerpt) <= EXCERPT_CHARS for turn in memories)
        for turn in memories:
            holds = holds_gold(turn.chunk_excerpt, record.ground_truths)
            assert turn.gold_in_chunk == holds
    marked = sum(turn.gold_in_chunk for record in records for turn in record.turns if turn.kind == "memory")
    items = json.loads((data_root / "eval_6.json").read_text())
    in_document = {str(i["index"]) for i in items if holds_gold(i["context"], i["answers"])}
    assert {r.item_id for r in records if any(t.gold_in_chunk for t in r.turns)} == in_document != set()
    page = tmp_path / "page.html"
    assert view.main([str(tmp_path), "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.count('class="gold-mark chunk"') == marked and text.count("<mark>") == marked


def test_without_the_flag_no_record_is_written(instant_server, data_root, tmp_path):
    assert _evaluate(instant_server, data_root, tmp_path) == 0
    assert not (tmp_path / "trajectories_6.jsonl").exists()


def test_a_resumed_run_keeps_one_record_per_item_and_drops_those_of_redone_items(instant_server, data_root, tmp_path):
    """A crash after the record but before the result leaves a record of an item that runs again;
    a crash mid-line leaves half a record: the rerun ends with exactly one record per item."""
    assert _evaluate(instant_server, data_root, tmp_path, "--save-trajectories") == 0
    results_path, records_path = tmp_path / "results_6.jsonl", tmp_path / "trajectories_6.jsonl"
    lines = results_path.read_text().splitlines(keepends=True)
    redone = json.loads(lines[-1])["id"]
    results_path.write_text("".join(lines[:-1]))  # its result was never written
    with records_path.open("a") as handle:
        handle.write('{"schema": "mem_agent.traj')  # killed mid-line
    assert _evaluate(instant_server, data_root, tmp_path, "--save-trajectories") == 0
    records = list(read_records(records_path))
    assert sorted(r.item_id for r in records) == sorted(r["id"] for r in read_results(results_path))
    assert len(records) == 3 and sum(r.item_id == redone for r in records) == 1
    assert _evaluate(instant_server, data_root, tmp_path, "--save-trajectories") == 0, "nothing left to run"
    assert len(list(read_records(records_path))) == 3
    assert _evaluate(instant_server, data_root, tmp_path, "--save-trajectories", "--force") == 0
    assert len(list(read_records(records_path))) == 3, "--force starts the records afresh too"


@pytest.mark.server
def test_against_the_real_model_each_record_holds_the_memories_its_answer_came_from(stack, make_eval_files, tmp_path):
    """The tiny model's own memories: one per chunk, each within MEM_MAX_MEMORY, cut exactly when the
    limit ended it, and the final turn's text is the answer the result scored."""
    data_root = make_eval_files(10, questions=2)
    argv = ["--data-root", str(data_root), "--lengths", "10", "--output-dir", str(tmp_path), "--no-plot"]
    argv += ["--url", stack.router_url, "--protocol", "vllm", "--tokenizer", str(stack.model_path)]
    argv += ["--chunk-tokens", "512", "--max-memory", "24", "--max-final", "16", "--save-trajectories"]
    assert eval_ruler_hqa.main(argv) == 0
    results = {r["id"]: r for r in read_results(tmp_path / "results_10.jsonl")}
    records = list(read_records(tmp_path / "trajectories_10.jsonl"))
    assert sorted(r.item_id for r in records) == sorted(results)
    for record in records:
        memories = [turn for turn in record.turns if turn.kind == "memory"]
        assert len(memories) == results[record.item_id]["num_chunks"] and record.turns[-1].kind == "final"
        assert all(turn.memory_tokens <= 24 and turn.response_tokens <= 24 for turn in memories)
        assert all(turn.cut == (turn.response_tokens == 24 and turn.finish_reason == "length") for turn in memories)
        assert record.turns[-1].text.strip() == record.answer.strip() == results[record.item_id]["answer"].strip()
        assert record.turns[-1].memory_tokens == memories[-1].memory_tokens, "the final turn read the last memory"
