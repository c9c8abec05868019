"""Reruns into one output folder are honest: reused results are reported as reused, summary.json
keeps the facts of the runs that produced them, and results made with other settings are refused.

The evaluator runs for real (tokenizer, client, scheduling, files) against the latency stand-in
from the benchmarks, an HTTP server that answers at once: these tests are about bookkeeping, not
the model, so they need no vLLM stack.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from mem_agent import eval_ruler_hqa
from mem_agent.evaluation.results import read_results
from mem_agent.evaluation.reuse import RECORD_NAME, check_reuse, reuse_problems
from mem_agent.templates import template_file as prompt_file
from mem_agent.tokenization.tokenizer import bundled_qwen3_dir
from support.folder_holder import start_holder
from support.instant_server import InstantServer

FAST = ["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--protocol", "vllm"]


@pytest.fixture(scope="module")
def data_root(make_eval_files) -> Path:
    return make_eval_files(6, questions=3)


def _evaluate(server: str, data_root: Path, out: Path, *extra: str) -> int:
    argv = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", server]
    return eval_ruler_hqa.main([*argv, *FAST, "--no-plot", *extra])


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_a_rerun_with_nothing_left_keeps_the_facts_of_the_run_that_did_the_work(
    instant_server, data_root, tmp_path, capsys
):
    """The second run sends no request; it must not overwrite `seconds` and `requests` with its zeros."""
    assert _evaluate(instant_server, data_root, tmp_path) == 0
    first = _summary(tmp_path)
    assert first["run"]["items_run"] == 3 and first["run"]["requests"] > 0 and first["earlier_runs"] == []
    capsys.readouterr()
    assert _evaluate(instant_server, data_root, tmp_path) == 0
    out = capsys.readouterr().out
    assert "eval_6.json: 3 done (results of earlier runs, reused)" in out
    second = _summary(tmp_path)
    assert second["run"] == first["run"] and second["earlier_runs"] == []
    assert second["results"][0]["reused"] == 3 and first["results"][0]["reused"] == 0


def test_a_run_that_adds_results_is_recorded_beside_the_earlier_one(instant_server, data_root, tmp_path):
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "2") == 0
    first = _summary(tmp_path)["run"]
    assert _evaluate(instant_server, data_root, tmp_path) == 0
    summary = _summary(tmp_path)
    assert summary["earlier_runs"] == [first]
    assert (summary["run"]["items_run"], summary["run"]["items_reused"]) == (1, 2)
    assert summary["results"][0]["items"] == 3 and len(read_results(tmp_path / "results_6.jsonl")) == 3


def test_summary_stores_typed_values(instant_server, data_root, tmp_path):
    """Numbers as numbers, switches as booleans, choices by the names the settings use."""
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "1") == 0
    run = _summary(tmp_path)["run"]
    config = run["config"]
    assert config["chunk_tokens"] == 256 and config["max_memory_tokens"] == 16
    assert config["thinking"] is False and config["rememr1_alpha"] == 0.8 and config["mode"] == "memagent"
    assert run["sampling"]["temperature"] == 0.7 and run["sampling"]["seed"] is None
    assert run["data"] == {"6": 3} and isinstance(run["seconds"], float)


def test_results_made_with_other_settings_are_refused_before_anything_runs(instant_server, data_root, tmp_path, capsys):
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "1") == 0
    before = (tmp_path / "results_6.jsonl").read_text()
    capsys.readouterr()
    assert _evaluate(instant_server, data_root, tmp_path, "--max-memory", "32", "--temperature", "1.0") == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and err.count("\n") == 1
    assert "config.max_memory_tokens 16 -> 32" in err and "sampling.temperature 0.7 -> 1.0" in err
    assert "--force" in err and (tmp_path / "results_6.jsonl").read_text() == before
    assert _evaluate(instant_server, data_root, tmp_path, "--max-memory", "32", "--force") == 0
    assert _summary(tmp_path)["run"]["config"]["max_memory_tokens"] == 32


def test_answers_of_other_built_in_wording_are_refused(instant_server, data_root, tmp_path, capsys):
    """The built-in prompts are recorded by a digest of their wording: a folder whose answers came
    from other wording (an older version's) is not mixed with this version's."""
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "1") == 0
    recorded = _summary(tmp_path)["run"]["prompts"]
    assert recorded["kind"] == "built-in" and len(recorded["sha256"]) == 64
    record = json.loads((tmp_path / "run.json").read_text())
    record["facts"]["prompts"]["sha256"] = "0" * 64
    (tmp_path / "run.json").write_text(json.dumps(record))
    before = (tmp_path / "results_6.jsonl").read_text()
    capsys.readouterr()
    assert _evaluate(instant_server, data_root, tmp_path) == 2
    assert "prompts.sha256" in capsys.readouterr().err
    assert (tmp_path / "results_6.jsonl").read_text() == before


def _check_argv(server: str, data_root: Path, out: Path) -> list[str]:
    """The arguments of `_evaluate`'s run, with --check."""
    return ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", server, "--check"]


def test_the_check_flag_refuses_the_same_mismatch_without_a_server(instant_server, data_root, tmp_path, capsys):
    """run-eval.sh's check runs the same (evaluation/run_plan.left_to_run) before it serves, so a mismatch
    costs no server start."""
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "1") == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    check = [*_check_argv(instant_server, data_root, tmp_path), *FAST, "--no-plot"]
    assert eval_ruler_hqa.main(check) == 0
    assert eval_ruler_hqa.main([*check, "--max-final", "4"]) == 2
    assert "config.max_final_tokens 8 -> 4" in capsys.readouterr().err
    assert eval_ruler_hqa.main([*check, "--max-final", "4", "--force"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "a check writes nothing"


def test_reuse_compares_the_older_all_strings_layout_with_typed_values(tmp_path):
    """summary.json files written before values were typed (and before run.json) still let the
    results of their cells be reused."""
    (tmp_path / "results_6.jsonl").write_text('{"id": "0", "status": "completed"}\n')
    old = {"config": {"chunk_tokens": "256", "thinking": "False", "mode": "memagent"}, "sampling": {"seed": None}}
    (tmp_path / "summary.json").write_text(json.dumps({"results": [{"label": "6"}], "run": old}))
    now = {"config": {"chunk_tokens": 256, "thinking": False, "mode": "memagent"}, "sampling": {"seed": None}}
    assert check_reuse(tmp_path, now, ["results_6.jsonl"]) == [old]
    changed = {"config": {"chunk_tokens": 512, "thinking": False, "mode": "rememr1"}}
    assert reuse_problems(old, changed) == ["config.chunk_tokens 256 -> 512", "config.mode memagent -> rememr1"]


def test_a_killed_run_is_resumed_by_its_record_and_results_of_unknown_settings_are_refused(
    instant_server, data_root, tmp_path, capsys
):
    """A run killed before its report (here: its summary.json removed) leaves its record: a rerun
    with the same settings resumes, one with other settings is refused naming the change. Without
    the record (an older version's run killed before summary.json) the results' settings are
    unknown: the check and the run refuse them in one line naming the file and --force, and leave
    them as they are."""
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "1") == 0
    (tmp_path / "summary.json").unlink()
    capsys.readouterr()
    assert _evaluate(instant_server, data_root, tmp_path, "--max-memory", "32") == 2
    assert "config.max_memory_tokens 16 -> 32" in capsys.readouterr().err
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "2") == 0
    assert _summary(tmp_path)["results"][0]["reused"] == 1
    (tmp_path / RECORD_NAME).unlink()
    (tmp_path / "summary.json").unlink()
    before = (tmp_path / "results_6.jsonl").read_bytes()
    capsys.readouterr()
    check = [*_check_argv(instant_server, data_root, tmp_path), *FAST, "--no-plot"]
    for command in (lambda: eval_ruler_hqa.main(check), lambda: _evaluate(instant_server, data_root, tmp_path)):
        code, err = command(), capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "results_6.jsonl" in err and "--force" in err, err
    assert (tmp_path / "results_6.jsonl").read_bytes() == before
    assert _evaluate(instant_server, data_root, tmp_path, "--max-memory", "32", "--force") == 0
    assert len(read_results(tmp_path / "results_6.jsonl")) == 3


def test_the_settings_are_recorded_before_the_first_result(data_root, tmp_path):
    """A run killed after its first result still says what its results were made with: run.json is
    there, with the answer-shaping settings, before the first request is answered."""
    out = tmp_path / "out"
    seen: list[dict] = []

    def look(requests: int) -> None:
        if requests == 1:
            seen.append(json.loads((out / RECORD_NAME).read_text()))

    server = InstantServer(look).start()
    try:
        assert _evaluate(server.url, data_root, out, "--limit", "1") == 0
    finally:
        server.stop()
    facts = seen[0]["facts"]
    assert (
        facts["config"]["max_memory_tokens"] == 16
        and facts["data_sha256"]["6"] == _summary(out)["run"]["data_sha256"]["6"]
    )
    assert seen[0]["results"] == ["results_6.jsonl"]


def test_a_force_run_with_other_settings_leaves_no_other_file_to_reuse(
    instant_server, make_eval_files, tmp_path, capsys
):
    """--force redoes the files it runs; a results file of another length, made with the earlier
    settings, is no longer covered by the record, so a later run naming it is refused, not mixed."""
    root = make_eval_files(6, 8, questions=1)
    argv = ["--data-root", str(root), "--output-dir", str(tmp_path), "--url", instant_server, *FAST, "--no-plot"]
    assert eval_ruler_hqa.main([*argv, "--lengths", "6", "8"]) == 0
    assert eval_ruler_hqa.main([*argv, "--lengths", "6", "--max-memory", "32", "--force"]) == 0
    capsys.readouterr()
    assert eval_ruler_hqa.main([*argv, "--lengths", "6", "8", "--max-memory", "32"]) == 2
    err = capsys.readouterr().err
    assert "results_8.jsonl" in err and "results_6.jsonl" not in err and "--force" in err


def test_raising_timeouts_retries_or_protocol_after_failed_items_reuses_the_results(
    instant_server, data_root, tmp_path, monkeypatch
):
    """They cannot change a finished result: a rerun that raises them (to redo failed items) reuses
    what is done, and summary.json still records every setting of the new run."""
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "1") == 0
    changed = {
        "MEM_REQUEST_TIMEOUT": "1200",
        "MEM_CONNECT_TIMEOUT": "30",
        "MEM_MAX_RETRIES": "6",
        "MEM_PROTOCOL": "sglang",
    }
    for name, value in changed.items():
        monkeypatch.setenv(name, value)
    assert _evaluate(instant_server, data_root, tmp_path) == 0
    run = _summary(tmp_path)["run"]
    assert (run["items_run"], run["items_reused"]) == (2, 1)
    assert run["config"]["request_timeout_s"] == 1200.0 and run["config"]["max_retries"] == 6
    assert run["config"]["protocol"] == "sglang"


def test_an_older_summary_is_compared_on_its_answer_shaping_settings_only():
    """The older all-strings layout recorded every setting too: only those that shape answers count."""
    old = {"config": {"chunk_tokens": "256", "request_timeout_s": "600.0", "protocol": "auto", "mode": "memagent"}}
    now = {"config": {"chunk_tokens": 256, "request_timeout_s": 30.0, "protocol": "vllm", "mode": "memagent"}}
    assert reuse_problems(old, now) == []
    now["config"] |= {"chunk_tokens": 512}
    assert reuse_problems(old, now) == ["config.chunk_tokens 256 -> 512"]


def _template_file(path: Path, no_memory: str) -> Path:
    templates = {"memory_turn": "{problem} | {memory} | {section}", "final_turn": "{problem} | {memory}"}
    lines = ["version = 1", 'mode = "memagent"', 'assembly = "tokens"', "", "[templates]"]
    lines += [f'{key} = "{text}"' for key, text in templates.items()] + [f'no_memory = "{no_memory}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_check_flag_compares_the_template_file_and_the_tokenizer_too(instant_server, data_root, tmp_path, capsys):
    """run-eval.sh's preflight refuses what the real run would: another template file content (its
    sha256) or another tokenizer folder, without a server and before the model exists."""
    template = _template_file(tmp_path / "prompts.toml", "nothing yet")
    out = tmp_path / "out"
    tokenizer = str(bundled_qwen3_dir())
    assert (
        _evaluate(instant_server, data_root, out, "--limit", "1", "--prompts", str(template), "--tokenizer", tokenizer)
        == 0
    )
    check = [*_check_argv(instant_server, data_root, out), *FAST, "--no-plot", "--prompts", str(template)]
    assert eval_ruler_hqa.main([*check, "--tokenizer", tokenizer]) == 0
    assert eval_ruler_hqa.main([*check, "--tokenizer", str(tmp_path / "model-to-come")]) == 2
    recorded_folder, new_folder = Path(tokenizer).resolve(), (tmp_path / "model-to-come").resolve()
    assert f"tokenizer {recorded_folder} -> {new_folder}" in capsys.readouterr().err
    recorded = _summary(out)["run"]["prompts"]["sha256"]
    _template_file(template, "no notes")
    assert eval_ruler_hqa.main([*check, "--tokenizer", tokenizer]) == 2
    err = capsys.readouterr().err
    assert f"prompts.sha256 {recorded} -> {hashlib.sha256(template.read_bytes()).hexdigest()}" in err
    assert err.count("\n") == 1


def test_the_template_file_is_read_once_and_the_summary_records_that_read(
    instant_server, data_root, tmp_path, monkeypatch
):
    """The prompts the run used and the sha256 summary.json records come from one read: a file changed
    on disk after the evaluator read it cannot be recorded in its place."""
    template = _template_file(tmp_path / "prompts.toml", "nothing yet")
    used = hashlib.sha256(template.read_bytes()).hexdigest()
    reads: list[Path] = []
    parse = prompt_file.parse_prompt_file

    def parse_then_edit(raw: bytes, path: Path, mode: str | None = None):
        reads.append(path)
        parsed = parse(raw, path, mode)
        _template_file(template, "edited after the read")
        return parsed

    monkeypatch.setattr(prompt_file, "parse_prompt_file", parse_then_edit)
    assert _evaluate(instant_server, data_root, tmp_path / "out", "--limit", "1", "--prompts", str(template)) == 0
    assert reads == [template] and _summary(tmp_path / "out")["run"]["prompts"]["sha256"] == used


def test_a_results_file_with_repeated_items_is_counted_once_and_repaired_on_the_next_start(
    instant_server, data_root, tmp_path, capsys
):
    """A file holding every item three times (runs side by side before the folder lock, or files
    joined by hand): the next start says it repaired it, and the report counts 3 items, not 9."""
    assert _evaluate(instant_server, data_root, tmp_path) == 0
    results = tmp_path / "results_6.jsonl"
    results.write_text(results.read_text() * 3)
    capsys.readouterr()
    assert _evaluate(instant_server, data_root, tmp_path) == 0
    out = capsys.readouterr().out
    assert str(results) in out and " 6 " in out
    assert len(read_results(results)) == 3 and _summary(tmp_path)["results"][0]["items"] == 3


@pytest.mark.parametrize("case", ["tokenizer", "held folder", "no matplotlib"])
def test_the_check_flag_refuses_what_the_run_refuses(instant_server, data_root, tmp_path, capsys, monkeypatch, case):
    """--check is the run's own checks without the work: a tokenizer that cannot be loaded, a folder
    a live run holds, the plots' package missing (named with the extra that installs it) are refused
    by both in one line (exit 2) before anything is written; once the check passes, the run starts."""
    out, holder = tmp_path / "out", None
    argv = ["--data-root", str(data_root), "--lengths", "6", "--output-dir", str(out), "--url", instant_server, *FAST]
    if case == "tokenizer":
        argv += ["--no-plot", "--tokenizer", str(tmp_path / "no-such-model")]
    elif case == "held folder":
        argv += ["--no-plot"]
        holder = start_holder(out, command="live-run")
    else:
        monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: find_spec and import fail
    try:
        errors = []
        for command in ([*argv, "--check"], argv):
            assert eval_ruler_hqa.main(command) == 2
            errors.append(capsys.readouterr().err)
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
    named = {"tokenizer": "no-such-model", "held folder": f"pid {holder and holder.pid}", "no matplotlib": "[eval]"}
    assert all(err.count("\n") == 1 and named[case] in err for err in errors), errors
    assert sorted(p.name for p in out.glob("*")) == ([".run.lock"] if holder else [])
    if holder is not None:  # once the live run has ended, the check passes and the run starts
        assert eval_ruler_hqa.main([*argv, "--check"]) == 0 and "left to run: 3" in capsys.readouterr().out
        assert eval_ruler_hqa.main(argv) == 0


def test_results_that_answer_another_question_than_their_item_are_refused(instant_server, data_root, tmp_path, capsys):
    """A result is reused only for the item whose question and answers it records: a line whose id
    names another item (other data, or items named by another rule, as an older version named
    repeated ids) is refused by --check and the run, and the file is left as it is."""
    assert _evaluate(instant_server, data_root, tmp_path, "--limit", "2") == 0
    results = tmp_path / "results_6.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    lines[1]["question"] = lines[0]["question"]
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    capsys.readouterr()
    assert eval_ruler_hqa.main([*_check_argv(instant_server, data_root, tmp_path), *FAST, "--no-plot"]) == 2
    assert _evaluate(instant_server, data_root, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and str(results) in err and "--force" in err
    assert [json.loads(line) for line in results.read_text().splitlines()] == lines
