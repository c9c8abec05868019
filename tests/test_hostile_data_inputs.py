"""The data commands against hostile input: repeated rows, outputs that are inputs, device files,
absurd sizes, trickling downloads, names too long, lone surrogates, deep nesting, positions past
64 bits and a bad tokenizer. Each is one line naming the flag or the file, exit 2 (1 for a
download that fails), no traceback, no output left behind, and the input as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mem_agent import build_long_context, build_ruler, cli, fetch_prompts, prepare_data, run_document, synthetic_qa
from mem_agent.common import pinned_fetch
from mem_agent.common.jsonstream import DataFormatError
from mem_agent.common.pinned_fetch import FetchError, fetch
from mem_agent.data.row_sources import HubFile, hub_file
from mem_agent.evaluation.files import check_eval_file
from support.exits import exit_status
from support.hub_standin import hub_standin

LONG_NAME = "d" * 300  # longer than any file system's NAME_MAX (255 bytes)
NO_SERVER = ["--url", "http://127.0.0.1:9"]  # refused before any server is asked


def _one_error(capsys: pytest.CaptureFixture[str], *named: str) -> str:
    """The one `error:` line on stderr, which names each of `named`."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for name in named:
        assert name in lines[0], lines[0]
    return lines[0]


def _run(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -m mem_agent.<module>` with a strict stdout (a UTF-8 locale's, not C.UTF-8's)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("MEM_")} | {"PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", f"mem_agent.{module}", *args], capture_output=True, env=full | (env or {}), timeout=120
    )


@pytest.fixture
def doubled(tmp_path: Path, synthetic_rows: list[dict]) -> Path:
    """Six rows, then the first two again (a file joined with a copy of its start)."""
    path = tmp_path / "doubled.json"
    path.write_text(json.dumps(synthetic_rows[:6] + synthetic_rows[:2]))
    return path


# ---- repeated rows ---------------------------------------------------------------------------------


def test_prepare_data_names_repeated_rows_and_leaves_them_out_unless_kept(tmp_path, doubled, capsys):
    output = tmp_path / "train.jsonl"
    assert prepare_data.main(["--input", str(doubled), "--output", str(output)]) == 0
    said = capsys.readouterr().out
    assert "row 6 repeats" in said and "row 0" in said and "row 7 repeats" in said
    assert (
        len({json.loads(line)["prompt"] for line in output.read_text().splitlines()})
        == 6
        == len(output.read_text().splitlines())
    )
    assert prepare_data.main(["--input", str(doubled), "--output", str(output), "--force", "--keep-repeats"]) == 0
    assert "row 6 repeats" in capsys.readouterr().out and len(output.read_text().splitlines()) == 8


@pytest.mark.parametrize("layout", ["text", "index"])
def test_build_long_context_names_repeated_rows_and_leaves_them_out_unless_kept(tmp_path, doubled, capsys, layout):
    argv = ["--input", str(doubled), "--num-docs", "20", "--layout", layout]
    assert build_long_context.main([*argv, "--out-dir", str(tmp_path / "a")]) == 0
    assert "row 6 repeats row 0" in capsys.readouterr().out
    assert [item["input"] for item in json.loads((tmp_path / "a" / "eval_20.json").read_text())] == [
        row["question"] for row in json.loads(doubled.read_text())[:6]
    ]
    assert build_long_context.main([*argv, "--out-dir", str(tmp_path / "b"), "--keep-repeats"]) == 0
    assert len(json.loads((tmp_path / "b" / "eval_20.json").read_text())) == 8


# ---- no command writes over its own input ------------------------------------------------------------


def _same_file_cases(tmp_path: Path, source: Path) -> list[tuple[object, list[str], str]]:
    """(command's main, argv, the output flag named) where the output is the input, by several spellings."""
    (tmp_path / "sub").mkdir()
    hard = tmp_path / "eval_20.json"
    os.link(source, hard)  # the same inode under the name build-long-context writes
    detour = tmp_path / "sub" / ".." / source.name
    document = tmp_path / "book.txt"
    document.write_text("A short document.\n")
    return [
        (prepare_data.main, ["--input", str(source), "--output", str(detour), "--force"], "--output"),
        (prepare_data.main, ["--input", str(source), "--output", str(hard), "--force"], "--output"),
        (
            build_long_context.main,
            ["--input", str(source), "--num-docs", "20", "--out-dir", str(tmp_path), "--force"],
            "--out-dir",
        ),
        (
            run_document.main,
            ["--question", "q?", "--document", str(document), "--json", str(document), *NO_SERVER],
            "--json",
        ),
    ]


def test_no_command_writes_over_its_own_input_even_with_force(tmp_path, synthetic_file, capsys):
    source = tmp_path / "rows.json"
    source.write_bytes(synthetic_file.read_bytes())
    for main, argv, flag in _same_file_cases(tmp_path, source):
        before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
        assert main(argv) == 2
        _one_error(capsys, flag)
        assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before


# ---- device files and absurd sizes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("main", "argv", "flag"),
    [
        (prepare_data.main, ["--input", "/dev/zero", "--output", "{out}/o.jsonl"], "--input"),
        (build_long_context.main, ["--input", "/dev/urandom", "--num-docs", "20", "--out-dir", "{out}"], "--input"),
        (
            build_ruler.main,
            [
                "--splits",
                "niah_single_2",
                "--lengths",
                "512",
                "--tokenizer",
                "x",
                "--essay",
                "/dev/zero",
                "--out-dir",
                "{out}",
            ],
            "--essay",
        ),
        (run_document.main, ["--question", "q?", "--document", "/dev/zero", *NO_SERVER], "--document"),
    ],
    ids=["prepare-data", "build-long-context", "build-ruler", "run-document"],
)
def test_a_device_file_is_refused_where_a_file_is_read(tmp_path, capsys, main, argv, flag):
    out = tmp_path / "out"
    out.mkdir()
    argv = [arg.replace("{out}", str(out)) for arg in argv]
    started = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - started < 10
    _one_error(capsys, flag, "/dev/")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    ("main", "argv", "flag"),
    [
        (prepare_data.main, ["--input", "{rows}", "--output", "{fifo}"], "--output"),
        (synthetic_qa.main, ["--out", "{fifo}"], "--out"),
        (fetch_prompts.main, ["--source", "memagent", "--out", "{fifo}", "--force"], "--out"),
        (run_document.main, ["--question", "q?", "--document", "{rows}", "--json", "{fifo}", *NO_SERVER], "--json"),
    ],
    ids=["prepare-data", "synthetic-qa", "fetch-prompts", "run-document"],
)
def test_an_output_that_is_a_fifo_is_refused_not_replaced(tmp_path, synthetic_file, capsys, main, argv, flag):
    """A new file renamed over a device would replace the device (/dev/null, as root): a FIFO stands in."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [arg.replace("{rows}", str(synthetic_file)).replace("{fifo}", str(fifo)) for arg in argv]
    assert main(argv) == 2
    _one_error(capsys, flag, str(fifo))
    assert fifo.is_fifo() and list(tmp_path.iterdir()) == [fifo]


@pytest.mark.parametrize(
    ("main", "argv", "flag", "bound"),
    [
        (build_ruler.main, ["--splits", "vt", "--lengths", str(10**8), "--tokenizer", "x"], "--lengths", "4,194,304"),
        (
            build_ruler.main,
            ["--splits", "vt", "--lengths", "1", "--num-samples", "9" * 9, "--tokenizer", "x"],
            "--num-samples",
            "10,000",
        ),
        (synthetic_qa.main, ["--num-questions", str(10**9)], "--num-questions", "100,000"),
        (
            build_long_context.main,
            ["--input", "{rows}", "--num-docs", str(10**6), "--layout", "text"],
            "--num-docs",
            "100,000",
        ),
        (prepare_data.main, ["--input", "{rows}", "--num-docs", str(10**6)], "--num-docs", "100,000"),
    ],
    ids=["ruler-length", "ruler-samples", "synthetic-questions", "text-context-documents", "training-documents"],
)
def test_an_absurd_size_is_refused_with_its_bound_and_nothing_is_written(
    tmp_path, synthetic_file, capsys, main, argv, flag, bound
):
    out = tmp_path / "out"
    out.mkdir()
    argv = [arg.replace("{rows}", str(synthetic_file)) for arg in argv]
    output = {prepare_data.main: ["--output", f"{out}/o.jsonl"], synthetic_qa.main: ["--out", f"{out}/s.json"]}
    assert main([*argv, *output.get(main, ["--out-dir", str(out)])]) == 2
    _one_error(capsys, flag, bound)
    assert list(out.iterdir()) == []


def test_a_ruler_qa_length_beyond_its_corpus_is_refused_not_written_short(tmp_path, synthetic_file, capsys):
    """The whole synthetic corpus (~700 documents) is far shorter than 100,000 tokens."""
    argv = ["--splits", "qa_2", "--lengths", "100000", "--num-samples", "2", "--tokenizer", "bundled:qwen3"]
    assert build_ruler.main([*argv, "--hotpot", str(synthetic_file), "--out-dir", str(tmp_path)]) == 2
    _one_error(capsys, "--lengths 100000", "--hotpot")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("tokenizer", ["{tmp}/absent", "{tmp}/file.txt", "{tmp}/garbage", "{tmp}/" + LONG_NAME])
def test_a_bad_tokenizer_path_for_build_ruler_is_one_line(tmp_path, capsys, tokenizer):
    (tmp_path / "file.txt").write_text("not a folder")
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "tokenizer.json").write_text("{ not json")
    argv = ["--splits", "vt", "--lengths", "512", "--out-dir", str(tmp_path / "out")]
    assert build_ruler.main([*argv, "--tokenizer", tokenizer.replace("{tmp}", str(tmp_path))]) == 2
    _one_error(capsys, "--tokenizer")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


# ---- a download that trickles ----------------------------------------------------------------------------


class _Trickling(BaseHTTPRequestHandler):
    """A byte every 0.2 s: of the headers at /headers, else of a 1,000-byte body; at /stalled the
    headers and one byte, then nothing for 30 s."""

    def do_GET(self) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
        body = b"x" * 1000
        data, trickled = (head + body, head) if self.path == "/headers" else (head + body, body)
        if self.path == "/stalled":
            data, trickled = head + b"x", b""
        try:
            self.wfile.write(data[: len(data) - len(trickled)])
            for byte in trickled:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.2)
            time.sleep(30 if self.path == "/stalled" else 0)
        except OSError:  # the client hung up: its deadline
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def trickling() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_trickling_download_ends_at_its_overall_deadline(tmp_path, trickling, where):
    """Each byte comes well within the read timeout (30 s); the deadline (1 s) ends the fetch."""
    started = time.monotonic()
    with (tmp_path / "out").open("wb") as out, pytest.raises(FetchError, match="deadline"):
        fetch(f"{trickling}/{where}", out, sha256="", deadline_s=1.0)
    assert time.monotonic() - started < 3


def test_a_stalled_download_ends_at_its_read_timeout_after_its_retries(tmp_path, trickling, monkeypatch):
    monkeypatch.setattr(pinned_fetch, "READ_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with (tmp_path / "out").open("wb") as out, pytest.raises(FetchError) as failed:
        fetch(f"{trickling}/stalled", out, sha256="", deadline_s=60)
    assert time.monotonic() - started < 15 and f"tried {pinned_fetch.ATTEMPTS} times" in str(failed.value)


def test_fetch_prompts_ends_a_trickling_download_at_its_timeout_and_writes_nothing(tmp_path, trickling, capsys):
    out = tmp_path / "prompts.toml"
    started = time.monotonic()
    assert (
        fetch_prompts.main(["--source", "memagent", "--out", str(out), "--base-url", trickling, "--timeout", "1"]) == 1
    )
    assert time.monotonic() - started < 3
    _one_error(capsys, trickling, "--timeout")
    assert not out.exists()


def test_a_hub_download_that_trickles_ends_at_its_overall_deadline(tmp_path):
    """huggingface_hub times each read only: the hub file's own deadline ends a body that keeps coming."""
    (tmp_path / "eval_50.json").write_text("[" + ", ".join(["{}"] * 100) + "]")
    repo, folder = "owner/evals", tmp_path / "download"
    with hub_standin(repo, {"eval_50.json": tmp_path / "eval_50.json"}, trickle_s=0.1) as hub:
        started = time.monotonic()
        wanted = HubFile(repo, "eval_50.json", None, endpoint=hub.url, token=False, folder=folder, deadline_s=2.0)
        with pytest.raises(DataFormatError, match=r"within 2 s \(the overall deadline"):
            hub_file(wanted, answer_s=10)
    assert time.monotonic() - started < 8
    assert not (folder / "eval_50.json").exists()


# ---- names too long, lone surrogates, deep nesting ------------------------------------------------------------


@pytest.mark.parametrize(
    ("main", "argv", "flag"),
    [
        (prepare_data.main, ["--input", "{rows}", "--output", "{long}/o.jsonl"], "--output"),
        (prepare_data.main, ["--input", "{long}/rows.json", "--output", "{tmp}/o.jsonl"], "--input"),
        (build_long_context.main, ["--input", "{rows}", "--num-docs", "20", "--out-dir", "{long}"], "--out-dir"),
        (
            build_ruler.main,
            ["--splits", "vt", "--lengths", "512", "--tokenizer", "x", "--out-dir", "{long}"],
            "--out-dir",
        ),
        (synthetic_qa.main, ["--out", "{long}/s.json"], "--out"),
        (fetch_prompts.main, ["--source", "memagent", "--out", "{long}/p.toml"], "--out"),
        (run_document.main, ["--question", "q?", "--json", "{long}/t.json", *NO_SERVER], "--json"),
    ],
    ids=["prepare-output", "prepare-input", "long-context", "ruler", "synthetic", "fetch-prompts", "run-document"],
)
def test_a_name_too_long_is_one_line_naming_its_flag(tmp_path, synthetic_file, capsys, main, argv, flag):
    values = {"{rows}": str(synthetic_file), "{long}": str(tmp_path / LONG_NAME), "{tmp}": str(tmp_path)}
    for key, value in values.items():
        argv = [arg.replace(key, value) for arg in argv]
    assert exit_status(main, argv) == 2
    _one_error(capsys, flag)
    assert list(tmp_path.iterdir()) == []


def test_file_names_that_are_not_utf8_are_read_written_and_printed(tmp_path, synthetic_file):
    """A name with the byte 0xff reaches Python as the lone surrogate \\udcff; a strict stdout must
    not end the command after its work, and the rows must name their file readably."""
    folder = os.fsencode(tmp_path)
    source, output = folder + b"/rows\xff.json", folder + b"/train\xff.jsonl"
    Path(os.fsdecode(source)).write_bytes(synthetic_file.read_bytes())
    result = _run("prepare_data", "--input", os.fsdecode(source), "--output", os.fsdecode(output))
    assert result.returncode == 0, result.stderr.decode()
    assert b"train\\xff.jsonl" in result.stdout and len(Path(os.fsdecode(output)).read_text().splitlines()) == 70
    out_dir = os.fsdecode(folder + b"/out\xff")
    result = _run("build_long_context", "--input", os.fsdecode(source), "--num-docs", "20", "--out-dir", out_dir)
    assert result.returncode == 0, result.stderr.decode()


@pytest.mark.parametrize(
    ("name", "content", "named"),
    [
        ("lone.jsonl", '{"question": "q\\ud800", "answer": "a", "context": [["t", ["s"]]]}\n', "line 1"),
        ("lone.json", '[{"question": "q\\udcff", "answer": "a", "context": [["t", ["s"]]]}]', "item 0"),
        ("deep.json", "[" * 100_000 + "]" * 100_000, "item 0"),
        ("deep.jsonl", '{"question": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "line 1"),
    ],
    ids=["surrogate-jsonl", "surrogate-json", "deep-json", "deep-jsonl"],
)
def test_lone_surrogates_and_deep_nesting_in_data_are_one_line(tmp_path, capsys, name, content, named):
    """A nesting 100,000 deep (a 200 KB file) would cost ijson's own builder 25 GB; here it stops at once."""
    source = tmp_path / name
    source.write_text(content)
    commands = [
        (prepare_data.main, ["--output", str(tmp_path / "o.jsonl")]),
        (build_long_context.main, ["--num-docs", "20", "--out-dir", str(tmp_path / "o")]),
    ]
    for main, out in commands:
        started = time.monotonic()
        assert main(["--input", str(source), *out]) == 2
        assert time.monotonic() - started < 5
        _one_error(capsys, str(source), named)
    assert sorted(path.name for path in tmp_path.iterdir()) == [name]


def test_an_index_position_past_64_bits_is_outside_the_corpus(tmp_path, synthetic_file, capsys):
    argv = ["--input", str(synthetic_file), "--num-docs", "20", "--num-questions", "2", "--layout", "index"]
    assert build_long_context.main([*argv, "--out-dir", str(tmp_path)]) == 0
    items = json.loads((tmp_path / "eval_20.json").read_text())
    items[1]["context"][0] = 10**30
    (tmp_path / "eval_20.json").write_text(json.dumps(items))
    with pytest.raises(ValueError, match=r"item 1.*position 10{30}"):
        check_eval_file(tmp_path / "eval_20.json", corpus=synthetic_file)


def test_a_local_folder_given_as_a_hub_dataset_points_to_input(tmp_path, capsys):
    argv = ["--hf-dataset", str(tmp_path), "--output", str(tmp_path / "o.jsonl")]
    assert prepare_data.main(argv) == 2
    _one_error(capsys, "--hf-dataset", "--input")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("check-host", ["--url", "http://127.0.0.1:9", "--trainer-root", "{long}"]),
        ("view", ["{long}"]),
        ("compare", ["a", "b", "--output-dir", "{long}"]),
        ("eval", ["--output-dir", "{long}", "--check"]),
        ("train-summary", ["{deep}"]),
    ],
)
def test_a_path_no_file_system_can_hold_is_refused_by_its_flag(command, argv, capsys):
    """Every `type=Path` argument of every command is checked when the line is read (the parser
    factory registers the check), so a name past 255 bytes or a path past 4095 never reaches code
    that would end in a traceback."""
    words = [word.replace("{long}", "n" * 300).replace("{deep}", "d/" * 2100) for word in argv]
    assert exit_status(cli.main, [command, *words]) == 2
    line = _one_error(capsys)
    assert "255" in line or "4095" in line
