"""The direct baseline at the windows MemAgent's baselines ran with (`--window-preset`): prompts cut
in the middle to 120,000 tokens (its 128K models) or 990,000 (its 1M models), answers of up to
10,000 tokens, the preset recorded in summary.json, and refused beside the flags it sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem_agent import eval_ruler_hqa
from support.scripted_engine import scripted_engine

NEEDLE = "The secret city is Quito."
FILLER = "Nothing of note happens on this page. "


def _long_file(path: Path) -> Path:
    """One question whose document (~160K tokens) is longer than the 128K preset's prompt."""
    context = NEEDLE + " " + FILLER * 20_000
    items = [{"index": 0, "input": "Which city is the secret city?", "answers": ["Quito"], "context": context}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(items))
    return path


def _answer(prompt: str, seed: int | None) -> str:
    return "Quito" if NEEDLE in prompt else "unknown"


def _run(tokenizer, tmp_path: Path, *extra: str) -> tuple[int, list[dict]]:
    data = _long_file(tmp_path / "data" / "eval_9.json")
    with scripted_engine(tokenizer, _answer) as engine:
        argv = ["--data", str(data), "--output-dir", str(tmp_path / "out"), "--url", engine.url, "--protocol", "vllm"]
        return eval_ruler_hqa.main([*argv, "--no-plot", *extra]), engine.requests


def test_the_128k_preset_cuts_prompts_to_120000_tokens_and_answers_to_10000(tokenizer, tmp_path):
    status, requests = _run(tokenizer, tmp_path, "--window-preset", "memagent-128k")
    assert status == 0
    (request,) = requests
    assert 119_000 < len(request["token_ids"]) <= 120_000 and request["sampling_params"]["max_tokens"] == 10_000
    (result,) = [json.loads(line) for line in (tmp_path / "out" / "results_9.jsonl").read_text().splitlines()]
    assert result["dropped_tokens"] > 30_000 and result["sub_em"] == 1.0  # the start survives the middle cut
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["run"]
    assert run["mode"] == "direct" and run["direct"] == {"context_window": 130_000, "window_preset": "memagent-128k"}
    assert run["config"]["max_final_tokens"] == 10_000


def test_the_1m_preset_reads_the_whole_document(tokenizer, tmp_path):
    status, requests = _run(tokenizer, tmp_path, "--window-preset", "memagent-1m")
    assert status == 0 and len(requests) == 1
    (result,) = [json.loads(line) for line in (tmp_path / "out" / "results_9.jsonl").read_text().splitlines()]
    assert result["dropped_tokens"] == 0 and result["context_tokens"] > 150_000
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["run"]["direct"]["context_window"] == 1_000_000


@pytest.mark.parametrize(
    ("clash", "named"),
    [
        (["--context-window", "4096"], "--context-window"),
        (["--max-final", "64"], "--max-final"),
        (["--mode", "memagent"], "--mode"),
    ],
)
def test_a_preset_beside_a_flag_it_sets_is_refused(tokenizer, tmp_path, capsys, clash, named):
    with pytest.raises(SystemExit) as refused:
        _run(tokenizer, tmp_path, "--window-preset", "memagent-128k", *clash)
    assert refused.value.code == 2 and named in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
