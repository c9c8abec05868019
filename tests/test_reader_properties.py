"""Property-based (Hypothesis): no line, however broken or hostile, makes a reader of records,
results, summaries or metrics raise anything but our one-line error; and no record that the reader
accepts makes a viewer page run script (one page of generated records, in headless Chromium)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem_agent.common.usage import UsageError
from mem_agent.evaluation.results import read_results
from mem_agent.evaluation.summary_file import read_summary
from mem_agent.observability.run_folders import RunView
from mem_agent.observability.training_curves import read_run
from mem_agent.observability.trajectory_records import SCHEMA, TrajectoryRecord, read_records
from mem_agent.observability.viewer import ViewLimits, write_page
from support.browser import PageText, render

MARKUP = [
    "<script>document.body.dataset.ran=1</script>",
    '<img src=x onerror="document.body.dataset.ran=1">',
    '"',
    "<b>",
]
texts = st.one_of(st.text(max_size=30), st.sampled_from(MARKUP), st.text(alphabet="<>\"'&/ \n\x00", max_size=12))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4), max_leaves=12
)
RESULT_KEYS = ["id", "status", "sub_em", "em", "f1", "strict", "context_tokens", "answers", "question", "error"]
RECORD_KEYS = ["source", "item_id", "question", "ground_truths", "mode", "status", "answer", "scores", "has_box"]
RECORD_KEYS += ["context_tokens", "dropped_tokens", "turns", "rollout_id", "reward", "eval_set", "error", "extra"]
METRIC_KEYS = ["kind", "rollout_id", "step", "eval_set", "reward/mean", "accuracy/strict"]


def shaped(keys: list[str]) -> st.SearchStrategy[dict]:
    """Objects with (some of) a reader's own keys, each holding any value: they reach the schema."""
    return st.dictionaries(st.sampled_from(keys), values, max_size=len(keys))


def lines_of(keys: list[str], fixed: dict) -> st.SearchStrategy[bytes]:
    line = st.one_of(
        shaped(keys).map(lambda d: json.dumps(fixed | d).encode()),
        values.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=40),
    )
    return st.lists(line, min_size=1, max_size=4).map(lambda ls: b"\n".join(ls) + b"\n")


def _only_our_error(read, content: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(content)
        try:
            read(path)
        except UsageError as error:
            assert "\n" not in str(error) and str(error)


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(lines_of(RESULT_KEYS, {"id": "0", "status": "completed"}))
def test_any_results_file_reads_or_is_one_line(content):
    _only_our_error(read_results, content, "results_6.jsonl")


@PROPERTY
@given(lines_of(RECORD_KEYS, {"schema": SCHEMA}))
def test_any_records_file_reads_or_is_one_line(content):
    _only_our_error(lambda path: list(read_records(path)), content, "trajectories_6.jsonl")


@PROPERTY
@given(lines_of(METRIC_KEYS, {"kind": "rollout", "rollout_id": 0}))
def test_any_metrics_file_reads_or_is_one_line(content):
    _only_our_error(lambda path: read_run(path.parent), content, "metrics.jsonl")


@PROPERTY
@given(
    st.one_of(
        st.binary(max_size=60),
        values.map(lambda v: json.dumps(v).encode()),
        shaped(["results", "run"]).map(lambda d: json.dumps(d).encode()),
    )
)
def test_any_summary_reads_or_is_one_line(content):
    _only_our_error(read_summary, content, "summary.json")


def _record(draw_text: dict) -> dict:
    turn = {"kind": "memory", "step": 0, "cut": False, "prompt_tokens": 1, "response_tokens": 1, "memory_tokens": 1}
    turn |= {"text": draw_text["memory"], "finish_reason": draw_text["finish"], "recall_query": draw_text["query"]}
    final = turn | {"kind": "final", "text": draw_text["answer"]}
    record = {"schema": SCHEMA, "source": draw_text["source"], "item_id": draw_text["id"], "question": draw_text["q"]}
    record |= {"ground_truths": [draw_text["gold"]], "mode": draw_text["mode"], "status": draw_text["status"]}
    record |= {"answer": draw_text["answer"], "scores": {draw_text["score"]: 0.5}, "has_box": True}
    record |= {"context_tokens": 3, "dropped_tokens": 0, "turns": [turn, final], "error": draw_text["error"]}
    return record


FIELDS = ["memory", "finish", "query", "answer", "source", "id", "q", "gold", "mode", "status", "score", "error"]


@settings(
    max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.fixed_dictionaries({name: texts for name in FIELDS}), min_size=25, max_size=25))
def test_no_generated_record_makes_a_page_run_script(tmp_path, drawn):
    records = [TrajectoryRecord.from_json(_record(fields), "generated") for fields in drawn]
    run = RunView("records", tmp_path / "generated.jsonl", records, {"generated": records})
    write_page(run, tmp_path / "page.html", ViewLimits())
    rendered = render(tmp_path / "page.html", tmp_path / "profile")
    page = PageText()
    page.feed(rendered.dom)
    assert page.body_attrs.get("data-ready") == "1" and "data-ran" not in page.body_attrs
    assert page.tags["script"] == 2 and page.tags["img"] == 0 and page.tags["b"] == 0
    assert rendered.console == []
