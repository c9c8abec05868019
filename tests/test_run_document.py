"""The one-document command: your own text in, memory after each chunk and the answer out.

Documents are two synthetic rows (about 800 tokens, 4 chunks of 256), and two real rows where the
sample exists (about 2,700 tokens)."""

from __future__ import annotations

import json

import pytest
from conftest import document_text, server_flags

from mem_agent import run_document

pytestmark = pytest.mark.server


def _argv(stack, *extra: str) -> list[str]:
    return [
        *server_flags(stack),
        "--chunk-tokens",
        "256",
        "--max-memory",
        "24",
        "--max-final",
        "16",
        *extra,
    ]


def test_prints_the_memory_after_each_chunk_then_the_answer(stack, qa_rows, tmp_path, capsys):
    document = tmp_path / "doc.txt"
    document.write_text(document_text(qa_rows[:2]))
    trajectory_file = tmp_path / "run.json"
    question = qa_rows[0]["question"]
    code = run_document.main(
        _argv(stack, "--question", question, "--document", str(document), "--json", str(trajectory_file))
    )
    out = capsys.readouterr().out
    trajectory = json.loads(trajectory_file.read_text())
    assert code == 0 and trajectory["status"] == "completed"
    chunks = trajectory["num_chunks"]
    assert chunks >= 3
    assert [line for line in out.splitlines() if line.startswith("== memory after chunk")] == [
        f"== memory after chunk {i}{' (cut at max tokens)' if t['finish_reason'] == 'length' else ''} =="
        for i, t in enumerate(trajectory["turns"][:-1], start=1)
    ]
    assert f"== answer ({chunks} chunks, {trajectory['context_tokens']} tokens) ==" in out
    assert trajectory["turns"][-1]["kind"] == "final" and len(trajectory["turns"]) == chunks + 1


def test_reads_the_document_from_stdin(stack, synthetic_rows, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(document_text(synthetic_rows[2:4]).encode())))
    assert run_document.main(_argv(stack, "--question", "Who?", "--quiet")) == 0
    assert "== memory" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "is empty"), (b"   \n", "is empty"), (b"caf\xe9 au lait", "is not UTF-8 (byte 3)")],
)
def test_unusable_documents_are_one_line_errors(stack, tmp_path, capsys, content, message):
    document = tmp_path / "doc.txt"
    document.write_bytes(content)
    assert run_document.main(_argv(stack, "--question", "Q?", "--document", str(document))) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_missing_document_and_bad_url_are_usage_errors(stack, tmp_path, capsys):
    assert run_document.main(_argv(stack, "--question", "Q?", "--document", str(tmp_path / "absent.txt"))) == 2
    assert str(tmp_path / "absent.txt") in capsys.readouterr().err
    argv = ["--url", "127.0.0.1:8000", "--question", "Q?", "--document", str(tmp_path / "absent.txt")]
    assert run_document.main(argv) == 2
    assert "must start with http://" in capsys.readouterr().err


def test_an_unreachable_server_is_reported_not_a_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEM_MAX_RETRIES", "0")
    document = tmp_path / "doc.txt"
    document.write_text("Some text.")
    # Reached once before the agent runs: a usage error (exit 2), not a failed run.
    assert run_document.main(["--url", "http://127.0.0.1:9", "--question", "Q?", "--document", str(document)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --url http://127.0.0.1:9: cannot connect to 127.0.0.1:9") and err.count("\n") == 1
