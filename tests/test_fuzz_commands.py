"""Every command and launch script, driven by generated hostile arguments, settings and planted files.

Each example runs one `mem-agent` command in this process (a script: `bash` with `DRY_RUN=1`) in a
scratch folder whose planted entries are what a careless or hostile user leaves lying around:
symbolic links and hard links to files outside the scratch folder, a FIFO, a folder where a file
belongs, empty, binary, deeply nested and very long files, names too long for the file system or
not valid UTF-8, device files. Values for flags and variables come from the same hostile pool:
numbers in other scripts' digits, with digit-group underscores, beyond every bound, negative,
control characters, lone surrogates.

Whatever the example, the command must end with exit status 0, 1 or 2, print no traceback, leave
every file outside the scratch folder as it was, and end within a bound. Examples are derandomised,
so CI replays the same ones every run; a failure prints the argv and settings that caused it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem_agent import build_long_context, cli
from support.deadline import within
from support.trajectory_runs import evaluation_run, training_run

PROJECT = Path(__file__).resolve().parents[1]
SCRIPTS = PROJECT / "examples" / "mem_agent"
CLOSED_URL = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused at once
BOUND_S = 60  # no example may run longer than this
# Examples per command: the suite's time budget sets the default; FUZZ_EXAMPLES=500 searches deeper.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))

HOSTILE_TEXT = [
    "",
    " ",
    "0",
    "-1",
    "1_000",
    "\u0661\u0662",  # Arabic-Indic digits: int() reads 12
    "99999999999999999999999999999",
    "2147483648",
    "18446744073709551617",
    "1e309",
    "nan",
    "-inf",
    "0x10",
    "\x1b[2J\x07",
    "a\nb",
    "x" * 5000,
    "\udcff",
    "..",
    "/",
    "-",
    "--",
    "--force",
    "--help",
    "{}",
]

PLANTS = [
    "link_out",  # a symbolic link to a file outside the scratch folder
    "link_dir",  # a symbolic link to a folder outside
    "hard",  # a second name of a file outside
    "fifo",
    "folder",
    "missing",
    "empty",
    "binary",
    "deep_json",
    "surrogate_json",
    "long_line",
    "long_name",
    "bad_utf8_name",
    "/dev/zero",
    "/dev/null",
    "run_with_links",  # a run folder whose outputs are links outside
]


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    """Files outside every scratch folder, which links and hard links planted inside point to."""
    root = tmp_path_factory.mktemp("outside")
    (root / "victim.txt").write_text("keep me\n")
    (root / "victim.jsonl").write_text('{"id": "0"}\n')
    (root / "victim_dir").mkdir()
    (root / "victim_dir" / "inner.txt").write_text("keep me too\n")
    (root / "hard_victim.json").write_text('{"keep": true}\n')
    return root


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`, links not followed: kind, size, mtime and content digest."""
    seen: dict[str, tuple] = {}
    for folder, names, files in os.walk(root):
        for name in [*names, *files]:
            path = Path(folder) / name
            status = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
            seen[str(path.relative_to(root))] = (status.st_mode, status.st_size, status.st_mtime_ns, digest)
    return seen


def plant(scratch: Path, outside: Path) -> dict[str, str]:
    """The planted entries, by name, as the text a user would type for them."""
    (scratch / "link_out").symlink_to(outside / "victim.txt")
    (scratch / "link_dir").symlink_to(outside / "victim_dir")
    os.link(outside / "hard_victim.json", scratch / "hard")
    os.mkfifo(scratch / "fifo")
    (scratch / "folder").mkdir(exist_ok=True)
    (scratch / "empty").write_bytes(b"")
    (scratch / "binary").write_bytes(bytes(range(256)) * 64)
    (scratch / "deep_json").write_text("[" * 20000 + "]" * 20000)
    (scratch / "surrogate_json").write_text('{"question": "\\ud800", "answers": ["\\udfff"], "context": "x"}\n')
    (scratch / "long_line").write_text("word " * 400_000)
    run = scratch / "run_with_links"
    run.mkdir()
    for name in ("summary.json", "results_50.jsonl", "compare.json", "page.html", ".run.lock", "servers"):
        (run / name).symlink_to(outside / ("victim_dir" if name == "servers" else "victim.txt"))
    paths = {name: str(scratch / name) for name in PLANTS if not name.startswith("/")}
    paths.update({"/dev/zero": "/dev/zero", "/dev/null": "/dev/null"})
    paths["long_name"] = str(scratch / ("n" * 300))
    paths["bad_utf8_name"] = str(scratch / "bad\udcffname")
    paths["missing"] = str(scratch / "missing" / "nothing.json")
    return paths


def option_table(command: str) -> list[tuple[str, bool]]:
    """(flag, takes a value) for each flag `mem-agent COMMAND --help` lists."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli.main([command, "--help"])
    options: dict[str, bool] = {}
    for line in out.getvalue().splitlines():
        stripped = line.strip()
        if not stripped.startswith("-"):
            continue
        for part in stripped.split(", "):
            words = part.split()
            if words and words[0].startswith("--") and words[0] != "--help":
                options.setdefault(words[0], len(words) > 1 and not words[1][0].islower())
    return sorted(options.items())


OPTIONS = {command: option_table(command) for command in cli.COMMANDS}

# What every example of a command is given first, so that nothing it may start reaches beyond this
# machine: servers are the instant server or a closed port; later flags of the example win.
SAFE_START = {
    "eval": ["--url", "{server}", "--protocol", "vllm"],
    "run-document": ["--url", "{server}", "--protocol", "vllm"],
    "fetch-prompts": ["--base-url", CLOSED_URL],
    "prepare-eval-data": ["--hf-endpoint", CLOSED_URL],
}
SAFE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "MEM_MAX_RETRIES": "0",
    "MEM_CONNECT_TIMEOUT": "2",
    "MEM_REQUEST_TIMEOUT": "5",
}
MEM_VARIABLES = ["MEM_CHUNK_TOKENS", "MEM_MAX_MEMORY", "MEM_MAX_FINAL", "MEM_PROMPTS", "MEM_MODE", "MEM_MAX_CHUNKS"]


def value(plants: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(HOSTILE_TEXT), st.sampled_from(plants), st.text(max_size=12))


# A working call of each command on the scratch folder's own inputs (made by our code in `world`):
# an example changes one to three of its words, so that hostile values reach past the flag parser
# into the reading, checking and writing a command does.
BASELINES: dict[str, list[str]] = {
    "synthetic-qa": ["--out", "qa2.json", "--num-questions", "3", "--seed", "1"],
    "build-long-context": ["--input", "qa.json", "--num-docs", "6", "--num-questions", "2", "--out-dir", "ctx"],
    "prepare-data": ["--input", "qa.json", "--output", "train.jsonl", "--num-docs", "6", "--max-rows", "4"],
    "build-ruler": [
        *["--out-dir", "ruler", "--splits", "niah_single_1", "--lengths", "1024"],
        *["--num-samples", "1", "--tokenizer", "bundled:qwen3"],
    ],
    "eval": [
        *["--data-root", "evaldata", "--lengths", "6", "--output-dir", "run"],
        *["--chunk-tokens", "256", "--max-memory", "16", "--max-final", "8", "--no-plot"],
    ],
    "run-document": ["--question", "Who wrote it?", "--document", "doc.txt", "--chunk-tokens", "256"],
    "view": ["run_a", "-o", "page.html"],
    "compare": ["run_a", "run_b", "--output-dir", "cmp"],
    "train-summary": ["train", "--output-dir", "tables", "--no-plot"],
    "fetch-prompts": ["--list"],
    "check-host": ["--trainer-root", "folder", "--url", "{server}"],
    "local-stack": ["exec", "--model", "folder", "--start-timeout", "5", "--", "true"],
    # The launches, as dry runs: an example that drops --dry-run leaves a word the parser refuses.
    "run-eval": ["--dry-run", "--url", "{server}", "--protocol", "vllm", "--data-root", "evaldata", "--length", "6"],
    "prepare-eval-data": ["--dry-run", "--data-root", "evaldata", "--length", "6"],
    "convert-to-hf": ["--dry-run", "--save-path", "folder", "--hf-ckpt", "folder", "--trainer-root", "folder"],
    "train": ["--dry-run", "--hf-ckpt", "folder", "--save-path", "save"],
}


# Baselines that end in a refusal by design: no trainer checkout, no model folder.
EXPECTED_BASELINE_STATUS = {"check-host": 2, "local-stack": 2}


@st.composite
def command_examples(draw, command: str) -> tuple[list[str], dict[str, str]]:
    """(argv after the command, settings): the command's baseline with one to three changes (a word
    replaced, a flag added, a planted path given). Planted names become paths once the scratch
    folder exists."""
    argv = list(BASELINES[command])
    flags = OPTIONS[command]
    values = [i for i, word in enumerate(argv) if not word.startswith("-")] or [0]
    for _ in range(draw(st.integers(1, 3))):
        change = draw(st.sampled_from(["value", "value", "value", "word", "flag", "flag", "positional"]))
        if change in ("value", "word"):
            where = draw(st.sampled_from(values)) if change == "value" else draw(st.integers(0, len(argv) - 1))
            argv[where] = draw(value(PLANTS))
        elif change == "flag" and flags:
            flag, takes_value = draw(st.sampled_from(flags))
            argv += [flag, draw(value(PLANTS))] if takes_value else [flag]
        else:
            argv.append(draw(value(PLANTS)))
    variables = draw(st.dictionaries(st.sampled_from(MEM_VARIABLES), value(PLANTS), max_size=1))
    return argv, variables


@pytest.fixture(scope="module")
def world(tmp_path_factory, tokenizer, synthetic_file: Path) -> Path:
    """The inputs the baselines read, made by our own code: a QA file, RULER-HQA eval files, two
    evaluation runs, a training run's metrics, a document."""
    root = tmp_path_factory.mktemp("world")
    shutil.copy(synthetic_file, root / "qa.json")
    argv = ["--input", str(root / "qa.json"), "--num-docs", "6", "--num-questions", "2"]
    assert build_long_context.main([*argv, "--out-dir", str(root / "evaldata")]) == 0
    for name in ("run_a", "run_b"):
        evaluation_run(tokenizer, root / name, {"6": 2})
    training_run(tokenizer, root / "train")
    lines = [{"kind": "rollout", "rollout_id": i, "step": i, "reward/mean": 0.25 * i} for i in range(3)]
    (root / "train" / "trajectories" / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (root / "doc.txt").write_text("The mill at Arnsby was built by Tomas Vell. Vell was born in Corran.\n" * 40)
    (root / "folder").mkdir()
    return root


@pytest.fixture(scope="module")
def server(instant_server: str) -> str:
    return instant_server


@contextlib.contextmanager
def scratch_home(tmp_path_factory, outside: Path, world: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh scratch folder, the working folder and home of the example, with the world's inputs
    and the plants."""
    scratch = tmp_path_factory.mktemp("scratch")
    shutil.copytree(world, scratch, symlinks=True, dirs_exist_ok=True)
    paths = plant(scratch, outside)
    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    os.chdir(scratch)
    os.environ.update(SAFE_ENV | {"HOME": str(scratch), "XDG_CACHE_HOME": str(scratch / ".cache")})
    try:
        yield scratch, paths
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def terminal(errors: str) -> io.TextIOWrapper:
    """A stand-in for the terminal a command prints to: UTF-8, with Python's own error handling of
    stdout (strict: a lone surrogate cannot be printed) or stderr (backslashreplace)."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def said_on(stream: io.TextIOWrapper) -> str:
    return stream.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]


def as_variable(text: str) -> str:
    """`text` as an environment can hold it: no NUL; bytes that are not UTF-8 are kept as bytes."""
    return text.replace("\0", "")


def resolve(words: list[str], paths: dict[str, str]) -> list[str]:
    return [paths.get(word, word) for word in words]


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_a_command_given_hostile_input_ends_in_one_line(command, outside, world, server, tmp_path_factory):
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(example=command_examples(command))
    def one(example: tuple[list[str], dict[str, str]]) -> None:
        before = snapshot(outside)
        with scratch_home(tmp_path_factory, outside, world) as (_scratch, paths):
            argv = [*SAFE_START.get(command, []), *resolve(example[0], paths)]
            argv = [word.replace("{server}", server).replace("\0", "") for word in argv]  # exec passes no NUL
            variables = {name: as_variable(paths.get(text, text)) for name, text in example[1].items()}
            os.environ.update(variables)
            out, err = terminal("strict"), terminal("backslashreplace")
            status: object = None
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), within(BOUND_S):
                try:
                    status = cli.main([command, *argv])
                except SystemExit as stop:
                    status = stop.code
        printed, complained = said_on(out), said_on(err)
        said = f"mem-agent {command} {argv!r} with {variables!r}: exit {status!r}\n{complained[-3000:]}"
        if os.environ.get("FUZZ_LOG"):
            with Path(os.environ["FUZZ_LOG"]).open("a", errors="backslashreplace") as log:
                log.write(said[:600] + "\n---\n")
        assert status in (0, 1, 2, None), said
        assert "Traceback" not in complained + printed, said
        assert "Task exception was never retrieved" not in complained, said
        assert snapshot(outside) == before, said

    one()


@pytest.mark.parametrize("command", sorted(BASELINES))
def test_every_baseline_runs_so_that_changes_to_it_reach_the_command(command, outside, world, server, tmp_path_factory):
    with scratch_home(tmp_path_factory, outside, world) as (_scratch, _paths):
        argv = [word.replace("{server}", server) for word in [*SAFE_START.get(command, []), *BASELINES[command]]]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            status = cli.main([command, *argv])
        assert status == EXPECTED_BASELINE_STATUS.get(command, 0), err.getvalue()[-2000:]


SCRIPT_VARIABLES = {
    "run-eval.sh": [
        "MODEL_PATH",
        "URL",
        "LENGTH",
        "SUITE",
        "DATA_ROOT",
        "RULER_ROOT",
        "SAVE_FILE",
        "OUTPUT_ROOT",
        "DP",
        "TP",
    ],
    "run-qwen3-4b-train.sh": ["HF_CKPT", "SAVE_PATH", "NUM_GPUS", "ROLLOUT_BATCH_SIZE", "TRAIN_DATA", "LR", "SEED"],
    "convert-to-hf.sh": ["SAVE_PATH", "HF_CKPT", "SINGLE_ITER", "OUTPUT"],
    "prepare-eval-data.sh": ["DATA_ROOT", "LENGTH", "NUM_QUESTIONS", "SEED", "CORPUS_URL", "BUILD_FROM"],
}


@pytest.mark.parametrize("script", sorted(SCRIPT_VARIABLES))
def test_a_launch_script_given_hostile_settings_ends_in_one_line(script, outside, tmp_path_factory):
    @settings(max_examples=4, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(
        variables=st.dictionaries(st.sampled_from(SCRIPT_VARIABLES[script]), value(PLANTS), min_size=1, max_size=3),
        extra=st.lists(st.sampled_from(["--bogus", "-x", "--help"]), max_size=1),
    )
    def one(variables: dict[str, str], extra: list[str]) -> None:
        before = snapshot(outside)
        scratch = tmp_path_factory.mktemp("script")
        paths = plant(scratch, outside)
        env = {
            **os.environ,
            **SAFE_ENV,
            "HOME": str(scratch),
            "DRY_RUN": "1",
            "PYTHON": sys.executable,
            "CONVERT": "0",
        }
        for name, text in variables.items():
            env[name] = (
                paths.get(text, text).encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\0", "")
            )
        result = subprocess.run(
            ["bash", str(SCRIPTS / script), *extra],
            env=env,
            cwd=scratch,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=BOUND_S,
            check=False,
        )
        said = f"{script} {extra} with {variables!r}: exit {result.returncode}\n{result.stderr[-3000:]}"
        assert result.returncode in (0, 1, 2), said
        assert "Traceback" not in result.stderr + result.stdout, said
        assert snapshot(outside) == before, said

    one()
