"""MemAgent's published training layout through prepare_data, the hub route, and the training hooks.

The files are ours: rows in the authors' layout (verl's `prompt` messages, a built `context`,
`reward_model.ground_truth`) made from our synthetic questions, with a second ground truth (an
alias) on every row, written as parquet and JSON Lines. The hub is a loopback stand-in
(support/hub_standin.py) serving them under the authors' file names; the command runs as users
type it, by its path from another folder, in a fresh interpreter that cannot import an installed
mem_agent.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mem_agent import prepare_data
from mem_agent.data.contexts import render_context
from mem_agent.data.qa_rows import parse_row
from mem_agent.data.row_sources import split_files
from mem_agent.host.clients import close_clients
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3
from support.fixed_answer_server import fixed_answer_server
from support.hook_bench import small_agent
from support.host.args import host_args
from support.host.data_source import DataSource
from support.host.step import run_step
from support.hub_standin import STANDIN_COMMIT, hub_standin

REPO = "BytedTsinghua-SIA/hotpotqa"
ALIAS = "Shared Alias"  # every row's second ground truth: only a reward that reads all of them sees it
SCRIPT = Path(prepare_data.__file__).resolve()


def authors_rows(synthetic_rows: list[dict], count: int) -> list[dict]:
    """Rows in the authors' training layout, made by our code from our synthetic questions."""
    rows = []
    for position, raw in enumerate(synthetic_rows[:count]):
        row = parse_row(raw, f"row {position}", position)
        rows.append(
            {
                "data_source": "hotpotqa",
                "prompt": [{"role": "user", "content": row.question}],
                "context": render_context(list(row.paragraphs)) + "\n",  # a trailing newline must survive
                "ability": "memory",
                "reward_model": {"style": "rule", "ground_truth": [row.answers[0], ALIAS]},
                "extra_info": {"index": 100 + position, "question": row.question, "num_docs": len(row.paragraphs)},
            }
        )
    return rows


def write_parquet(rows: list[dict], path: Path) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_jsonl(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_published_rows_kept(written: list[dict], published: list[dict], source: str) -> None:
    assert len(written) == len(published)
    for index, (row, original) in enumerate(zip(written, published, strict=True)):
        assert row["prompt"] == original["prompt"][0]["content"]
        assert row["label"] == original["reward_model"]["ground_truth"][0]
        metadata = row["metadata"]
        assert metadata["context"] == original["context"], "the authors' document, byte for byte"
        assert metadata["ground_truth"] == original["reward_model"]["ground_truth"], "every ground truth"
        assert metadata["num_docs"] == original["extra_info"]["num_docs"]
        assert metadata["id"] == str(original["extra_info"]["index"])
        assert metadata["source"] == {"layout": "memagent", "file": source, "row": index, "data_source": "hotpotqa"}


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_an_authors_file_keeps_their_contexts_and_every_ground_truth(tmp_path, synthetic_rows, suffix):
    published = authors_rows(synthetic_rows, 5)
    writer = write_parquet if suffix == ".parquet" else write_jsonl
    source = writer(published, tmp_path / f"hotpotqa_train_32k{suffix}")
    output = tmp_path / "train.jsonl"
    assert prepare_data.main(["--input", str(source), "--output", str(output)]) == 0
    assert_published_rows_kept(read_jsonl(output), published, str(source))


def _isolated_run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python examples/mem_agent/prepare_data.py ...` as a user runs it, where mem_agent is not
    installed: `-S` skips site's .pth files (our editable install) while PYTHONPATH still gives
    the third-party packages, so only the script's own bootstrap can find mem_agent."""
    site_packages = sysconfig.get_paths()["purelib"]
    env = {**os.environ, **env, "PYTHONPATH": site_packages}
    return subprocess.run(
        [sys.executable, "-S", str(SCRIPT), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_hub_route_reads_the_authors_train_and_dev_files_by_split(tmp_path, synthetic_rows):
    """`--hf-dataset BytedTsinghua-SIA/hotpotqa --hf-split train|dev` against a loopback hub, run by
    path from another folder: train is the parquet, dev the JSON Lines file, eval_50.json neither."""
    train, dev = authors_rows(synthetic_rows, 4), authors_rows(synthetic_rows[4:], 3)
    files = {
        "hotpotqa_train_32k.parquet": write_parquet(train, tmp_path / "served_train.parquet"),
        "hotpotqa_dev.jsonl": write_jsonl(dev, tmp_path / "served_dev.jsonl"),
        "eval_50.json": tmp_path / "eval_50.json",
    }
    files["eval_50.json"].write_text("[]")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with hub_standin(REPO, files) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
        for flag, split, published, name in (  # the vime example's spelling, and ours
            ("--hf-split", "train", train, "hotpotqa_train_32k.parquet"),
            ("--split", "dev", dev, "hotpotqa_dev.jsonl"),
        ):
            output = tmp_path / f"{split}.jsonl"
            argv = ["--hf-dataset", REPO, flag, split, "--output", str(output)]
            result = _isolated_run(argv, elsewhere, env)
            assert result.returncode == 0, result.stderr
            assert f"wrote {len(published)} rows" in result.stdout
            assert_published_rows_kept(read_jsonl(output), published, f"hf://datasets/{REPO}@{STANDIN_COMMIT}/{name}")
    downloads = [line for line in hub.requests if line.startswith("GET /datasets/")]
    assert downloads == [
        f"GET /datasets/{REPO}/resolve/main/hotpotqa_train_32k.parquet",
        f"GET /datasets/{REPO}/resolve/main/hotpotqa_dev.jsonl",
    ], "only the split's files are downloaded"


def test_a_split_no_file_names_is_one_line_naming_the_data_files(tmp_path, synthetic_rows):
    files = {"hotpotqa_train_32k.parquet": write_parquet(authors_rows(synthetic_rows, 2), tmp_path / "t.parquet")}
    with hub_standin(REPO, files) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf_home")}
        result = _isolated_run(["--hf-dataset", REPO, "--hf-split", "test", "--output", "o.jsonl"], tmp_path, env)
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and "'test'" in error and "hotpotqa_train_32k.parquet" in error


def test_a_repository_the_hub_does_not_have_is_one_line(tmp_path):
    with hub_standin("someone/else", {}) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf_home")}
        result = _isolated_run(["--hf-dataset", REPO, "--output", "o.jsonl"], tmp_path, env)
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and REPO in error, result.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_split_names_follow_the_words_of_file_names():
    files = [
        "hotpotqa_train_32k.parquet",
        "hotpotqa_dev.parquet",
        "eval_50.json",
        "README.md",
        "data/validation-0.json",
    ]
    assert split_files(files, "train") == ["hotpotqa_train_32k.parquet"]
    assert (
        split_files(files, "dev")
        == split_files(files, "validation")
        == ["data/validation-0.json", "hotpotqa_dev.parquet"]
    )
    assert split_files(files, "test") == [] and split_files(files, "eval") == ["eval_50.json"]
    assert split_files(["trainer_notes.parquet"], "train") == [], "a word, not a prefix"


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ({"question": "q?", "answer": "a", "context": []}, "hotpotqa layout, but {file} began in the memagent layout"),
        ({"query": "q?", "gold": "a"}, "not in a known layout (fields found: gold, query)"),
    ],
    ids=["mixed", "unknown"],
)
def test_a_file_mixing_layouts_stops_at_the_odd_row_naming_its_fields(
    tmp_path, synthetic_rows, capsys, second, message
):
    source = write_jsonl([authors_rows(synthetic_rows, 1)[0], second], tmp_path / "mixed.jsonl")
    output = tmp_path / "out.jsonl"
    assert prepare_data.main(["--input", str(source), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{source}: line 2: " in err and message.format(file=source) in err
    assert not output.exists()


def test_num_docs_is_refused_for_the_authors_built_contexts(tmp_path, synthetic_rows, capsys):
    source = write_parquet(authors_rows(synthetic_rows, 2), tmp_path / "train.parquet")
    argv = ["--input", str(source), "--output", str(tmp_path / "o.jsonl"), "--num-docs", "20"]
    assert prepare_data.main(argv) == 2
    assert "--num-docs does not apply" in capsys.readouterr().err


@pytest.mark.usefixtures("fresh_settings")
@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_every_ground_truth_of_an_authors_row_reaches_the_training_reward(tmp_path, synthetic_rows, suffix):
    """Through prepare_data, then one host step of the training hooks: the engine always answers the
    alias (each row's second ground truth), so a reward of 1 on every trajectory means the reward
    read all of them; the label alone (the first) would give 0."""
    writer = write_parquet if suffix == ".parquet" else write_jsonl
    source = writer(authors_rows(synthetic_rows, 3), tmp_path / f"published{suffix}")
    output = tmp_path / "train.jsonl"
    assert prepare_data.main(["--input", str(source), "--output", str(output)]) == 0
    rows = read_jsonl(output)
    with small_agent(), fixed_answer_server(f"\\boxed{{{ALIAS}}}") as url:
        args = host_args(
            url, hf_checkpoint=BUNDLED_QWEN3, n_samples_per_prompt=2, rollout_batch_size=3, global_batch_size=2
        )
        result = run_step(args, DataSource(rows, 2), dp_size=1, closers=(close_clients,))
    finals = [s for s in result.samples if s.metadata["mem_agent"]["turn"] == "final"]
    assert len(finals) == 6 and {s.label for s in finals} != {ALIAS}
    assert all(s.reward == 1.0 for s in finals), "the alias earned the reward"
    assert result.data["raw_reward"] and set(result.data["raw_reward"]) == {1.0}


def test_the_preflight_trains_on_prepared_authors_rows_with_every_ground_truth(tmp_path, synthetic_rows, tokenizer):
    """The preflight through a checkout's own code (support/fake_trainer.py), on prepare_data's output of
    an authors' parquet: an engine that answers only the alias gets reward 1 on every trajectory."""
    from support.fake_trainer import write_fake_trainer
    from support.hook_bench import SMALL_AGENT
    from support.scripted_engine import scripted_engine

    source = write_parquet(authors_rows(synthetic_rows, 2), tmp_path / "published.parquet")
    data = tmp_path / "train.jsonl"
    assert prepare_data.main(["--input", str(source), "--output", str(data)]) == 0
    root = write_fake_trainer(tmp_path / "vime", "vime")
    project = SCRIPT.parents[2]
    env = {
        **os.environ,
        **SMALL_AGENT,
        "PYTHONPATH": os.pathsep.join([str(project / "examples"), str(project / "tests")]),
    }
    with scripted_engine(tokenizer, lambda prompt_text, seed: ALIAS) as engine:
        argv = ["--trainer-root", str(root), "--url", engine.url, "--protocol", "vllm", "--data", str(data)]
        result = subprocess.run(
            [sys.executable, "-m", "mem_agent.check_host", *argv], env=env, capture_output=True, text=True, timeout=300
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS vime") and ", mean reward 1.00, " in result.stdout


def test_a_hub_that_accepts_and_never_answers_is_one_line_after_the_timeout(tmp_path):
    """The connection is accepted (the listening socket's backlog) and no byte ever comes back."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        env = {"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf_home")}
        argv = ["--hf-dataset", REPO, "--output", "o.jsonl", "--hub-timeout", "2"]
        result = _isolated_run(argv, tmp_path, env)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1, result.stderr
    assert endpoint in errors[0] and "--hub-timeout" in errors[0]
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf"])
def test_a_hub_timeout_that_is_not_a_positive_number_is_refused_before_any_request(tmp_path, seconds):
    argv = ["--hf-dataset", REPO, "--output", "o.jsonl", "--hub-timeout", seconds]
    result = _isolated_run(argv, tmp_path, {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "h")})
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "--hub-timeout" in result.stderr
