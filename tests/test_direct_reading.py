"""The long-context baseline (`--mode direct`): the same model reading the whole document in one
prompt, cut in the middle to fit the window as RULER does, scheduled, scored and recorded by the
evaluator like the memory agent, and never mixed with memory-agent results in one folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mem_agent import compare, eval_ruler_hqa, view
from mem_agent.agent.direct_reading import DirectReader, WindowTooSmallError
from mem_agent.evaluation.files import file_sha256
from mem_agent.settings.config import MemAgentConfig
from mem_agent.tokenization.tokenizer import decode, encode
from support.exits import exit_status
from support.prompt_files import write_template_file
from support.scripted_engine import scripted_engine

NEEDLE = "The secret city is Quito."
FILLER = "Nothing of note happens on this page. "


def _eval_file(path: Path, tokenizer) -> Path:
    """Item 0 holds the fact at the start of its document, item 1 in the middle: a window too small
    for the whole document keeps the first and drops the second."""
    body = FILLER * 200  # ~1,600 tokens
    needle = NEEDLE + " "
    items = [
        {"index": 0, "input": "Which city is the secret city?", "answers": ["Quito"], "context": needle + body},
        {"index": 1, "input": "Which city is the secret city?", "answers": ["Quito"], "context": body + needle + body},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(items))
    return path


def _answer(prompt: str, seed: int | None) -> str:
    return "Quito" if NEEDLE in prompt else "unknown"


def _run(tokenizer, tmp_path: Path, *extra: str) -> tuple[int, list[dict]]:
    data = _eval_file(tmp_path / "data" / "eval_7.json", tokenizer)
    with scripted_engine(tokenizer, _answer) as engine:
        argv = ["--data", str(data), "--output-dir", str(tmp_path / "out"), "--url", engine.url, "--protocol", "vllm"]
        status = exit_status(eval_ruler_hqa.main, [*argv, "--max-final", "16", "--no-plot", *extra])
        return status, engine.requests


def _results(tmp_path: Path) -> dict[str, dict]:
    lines = (tmp_path / "out" / "results_7.jsonl").read_text().splitlines()
    return {str(line["id"]): line for line in map(json.loads, lines)}


def test_a_small_window_keeps_the_documents_ends_and_loses_its_middle(tokenizer, tmp_path):
    """One request per question, never longer than the window less the answer budget; the fact at
    the start survives the cut, the one in the middle does not, and the cut is recorded."""
    status, requests = _run(tokenizer, tmp_path, "--mode", "direct", "--context-window", "1024")
    assert status == 0
    assert len(requests) == 2
    assert all(len(r["token_ids"]) + r["sampling_params"]["max_tokens"] <= 1024 for r in requests)
    results = _results(tmp_path)
    assert (results["0"]["sub_em"], results["1"]["sub_em"]) == (1.0, 0.0)
    assert all(r["dropped_tokens"] > 0 and r["num_chunks"] == 0 for r in results.values())
    assert (results["0"]["gold_in_window"], results["1"]["gold_in_window"]) == (True, False)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["run"]["mode"] == "direct" and summary["run"]["direct"] == {"context_window": 1024}
    assert summary["run"]["data_sha256"] == {"7": file_sha256(tmp_path / "data" / "eval_7.json")}


def test_the_share_cut_is_in_the_table_the_summary_the_page_and_compare_and_only_used_settings_are_recorded(
    tokenizer, tmp_path, capsys
):
    """A direct run that cut each context: the console table, summary.json, the viewer's table and
    compare's numbers all carry the share cut; its summary records the answer limit it used and not
    the memory agent's chunk and memory sizes, which a memory-agent run of the same data records."""
    assert _run(tokenizer, tmp_path, "--mode", "direct", "--context-window", "1024")[0] == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("docs"))
    assert [cell.strip() for cell in header.split("|")][:5] == ["docs", "items", "failed", "ctx tokens", "cut"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    results = _results(tmp_path)
    share = sum(r["dropped_tokens"] for r in results.values()) / sum(r["context_tokens"] for r in results.values())
    assert summary["results"][0]["cut_share"] == pytest.approx(share) and 0.2 < share < 1
    config = summary["run"]["config"]
    assert "max_final_tokens" in config and not {"chunk_tokens", "max_memory_tokens"} & config.keys()
    page = tmp_path / "page.html"
    assert view.main([str(tmp_path / "out"), "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "<th>cut</th>" in text and text.count("gold in window") == 2

    direct = tmp_path / "direct"
    (tmp_path / "out").rename(direct)
    assert _run(tokenizer, tmp_path, "--chunk-tokens", "512", "--max-memory", "16")[0] == 0
    memagent_config = json.loads((tmp_path / "out" / "summary.json").read_text())["run"]["config"]
    assert not any("gold_in_window" in line for line in _results(tmp_path).values())  # a direct run's fact
    assert (memagent_config["chunk_tokens"], memagent_config["max_memory_tokens"]) == (512, 16)
    (tmp_path / "out").rename(tmp_path / "memagent")
    assert compare.main([str(tmp_path / "memagent"), str(direct), "--output-dir", str(tmp_path / "cmp")]) == 0
    numbers = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert numbers["cells"]["direct"]["7"]["cut_share"] == pytest.approx(share)
    assert numbers["cells"]["memagent"]["7"]["cut_share"] == 0.0
    differing = numbers["settings_that_differ"]
    assert differing["mode"] == {"memagent": "memagent", "direct": "direct"}
    assert (
        differing["direct.context_window"]["direct"] == "1024" and differing["config.chunk_tokens"]["memagent"] == "512"
    )


def test_a_window_that_holds_the_document_reads_all_of_it(tokenizer, tmp_path):
    status, _ = _run(tokenizer, tmp_path, "--mode", "direct", "--context-window", "8192")
    assert status == 0
    results = _results(tmp_path)
    assert (results["0"]["sub_em"], results["1"]["sub_em"]) == (1.0, 1.0)
    assert all(r["dropped_tokens"] == 0 for r in results.values())
    assert all(r["gold_in_window"] is True for r in results.values())


def test_direct_and_memory_agent_results_never_share_a_folder(tokenizer, tmp_path, capsys):
    assert _run(tokenizer, tmp_path, "--mode", "direct", "--context-window", "8192")[0] == 0
    capsys.readouterr()
    status, requests = _run(tokenizer, tmp_path, "--chunk-tokens", "512")
    assert status == 2 and requests == []
    assert "mode direct -> memagent" in capsys.readouterr().err


def test_the_cut_keeps_the_first_and_last_halves_of_what_fits(tokenizer):
    """RULER's middle truncation: the prompt holds the document's first budget//2 tokens and its
    last budget - budget//2, in order, between the problem and the problem again."""
    reader = DirectReader(tokenizer, MemAgentConfig(max_final_tokens=32), window=300)
    problem = encode(tokenizer, "Where?")
    budget = reader.context_budget(len(problem))
    document = np.arange(1000, 1000 + 3 * budget, dtype=np.int32)
    seen: list[np.ndarray] = []

    async def generate(prompt, max_tokens, sampling, *, priority=0):
        from mem_agent.agent.records import Completion, FinishReason

        seen.append(prompt)
        ids = encode(tokenizer, r"\boxed{x}")
        return Completion.build(ids.tolist(), [0.0] * len(ids), FinishReason.STOP)

    import asyncio

    from mem_agent.agent.records import SamplingParams

    trajectory = asyncio.run(reader.run("Where?", document, generate, SamplingParams()))
    (prompt,) = seen
    assert len(prompt) + 32 == 300
    kept = np.concatenate([document[: budget // 2], document[len(document) - (budget - budget // 2) :]])
    start = int(np.flatnonzero(prompt == document[0])[0])
    assert np.array_equal(prompt[start : start + budget], kept)
    assert trajectory.dropped_tokens == len(document) - budget and trajectory.answer == r"\boxed{x}"
    assert decode(tokenizer, prompt).count("Where?") == 2


def test_a_window_that_cannot_hold_the_prompt_is_refused(tokenizer):
    with pytest.raises(WindowTooSmallError, match="answer budget"):
        DirectReader(tokenizer, MemAgentConfig(max_final_tokens=1024), window=1000)


def _template_file(path: Path) -> Path:
    """A valid memory-agent template file: MEM_PROMPTS that is right for the agent, wrong for direct."""
    return write_template_file(path)


def test_the_check_flag_refuses_a_template_file_with_direct_mode_before_a_server_starts(tokenizer, tmp_path, capsys):
    template = str(_template_file(tmp_path / "prompts.toml"))
    argv = ["--check", "--mode", "direct", "--prompts", template, "--output-dir", str(tmp_path / "out")]
    assert eval_ruler_hqa.main(argv) == 2
    assert "--mode direct reads with its own prompt" in capsys.readouterr().err
    data = _eval_file(tmp_path / "data" / "eval_7.json", tokenizer)
    argv = [
        "--check",
        "--mode",
        "direct",
        "--context-window",
        "1024",
        "--max-final",
        "16",
        "--data",
        str(data),
        "--no-plot",
    ]
    assert eval_ruler_hqa.main([*argv, "--url", "http://127.0.0.1:9", "--output-dir", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mode", "direct"], "has no config.json with max_position_embeddings, so pass --context-window"),
        (["--mode", "direct", "--context-window", "0"], "--context-window 0 must be a positive integer"),
        (["--mode", "direct", "--context-window", "70"], "--context-window: a 70-token window leaves no room"),
        (["--mode", "direct", "--context-window", "9000", "--prompts", "{file}"], "--mode direct reads with its own"),
    ],
)
def test_direct_mode_usage_mistakes_are_one_line_errors(tokenizer, tmp_path, capsys, extra, message):
    template = str(_template_file(tmp_path / "prompts.toml"))
    status, requests = _run(tokenizer, tmp_path, *[arg.replace("{file}", template) for arg in extra])
    err = capsys.readouterr().err
    assert status == 2 and requests == [] and message in err and err.count("\n") == 1


@pytest.mark.server
def test_on_the_tiny_model_the_baseline_reads_the_models_own_window_and_lands_beside_the_agent(
    stack, make_eval_files, tmp_path, capsys
):
    """On the real stack: --mode direct with no window reads max_position_embeddings from the model
    folder, every question completes in one request, and compare pairs it with the memory agent."""
    data = make_eval_files(10, 30, questions=2)
    argv = ["--data-root", str(data), "--lengths", "10", "30", "--url", stack.router_url, "--protocol", "vllm"]
    argv += ["--tokenizer", str(stack.model_path), "--max-final", "16", "--max-memory", "24", "--chunk-tokens", "512"]
    window = json.loads((stack.model_path / "config.json").read_text())["max_position_embeddings"]
    assert eval_ruler_hqa.main([*argv, "--output-dir", str(tmp_path / "direct"), "--mode", "direct"]) == 0
    assert eval_ruler_hqa.main([*argv, "--output-dir", str(tmp_path / "memagent")]) == 0
    summary = json.loads((tmp_path / "direct" / "summary.json").read_text())
    assert summary["run"]["direct"] == {"context_window": window} and summary["run"]["requests"] == 4
    for label in ("10", "30"):
        lines = [json.loads(line) for line in (tmp_path / "direct" / f"results_{label}.jsonl").read_text().splitlines()]
        assert all(r["status"] == "completed" and r["dropped_tokens"] == 0 and r["generated_tokens"] > 0 for r in lines)
    capsys.readouterr()
    assert (
        compare.main([str(tmp_path / "memagent"), str(tmp_path / "direct"), "--output-dir", str(tmp_path / "c")]) == 0
    )
    pairs = json.loads((tmp_path / "c" / "compare.json").read_text())["pairs"]
    assert [(d["label"], d["questions"]) for d in pairs] == [("10", 2), ("30", 2), ("average", 4)]
