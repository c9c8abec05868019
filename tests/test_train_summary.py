"""`python -m mem_agent.train_summary SAVE`: reward and accuracy per rollout, as the log hook counted
them, in a CSV table and a PNG; a rollout logged twice (a resumed run) keeps its last line.

The metrics file comes from the real log hook over real rollout steps of the host double (the
scripted engine: even positions answer right, so the rollout's strict accuracy is 1/2)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image

from mem_agent import train_summary
from mem_agent.host.clients import close_clients
from support.hook_bench import bench_args, right_for_even_seeds, run_async, small_agent
from support.host.data_source import DataSource
from support.host.eval_loop import eval_rollout_single_dataset
from support.host.metrics import log_eval_rollout_data
from support.host.rollout_loop import RolloutState
from support.host.step import run_step
from support.scripted_engine import scripted_engine
from support.trainer_rows import trainer_rows

pytestmark = pytest.mark.usefixtures("fresh_settings")
N = 4


@pytest.fixture(scope="module")
def rows(synthetic_rows) -> list[dict]:
    return trainer_rows(synthetic_rows, 2)


def _train(tokenizer, rows, save: Path, rollout_ids) -> None:
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows)) as engine:
        args = bench_args(engine.url, n=N, rollout_batch_size=len(rows), global_batch_size=N, save=str(save))
        for rollout_id in rollout_ids:
            run_step(args, DataSource(rows, N), closers=(close_clients,), rollout_id=rollout_id)
        data = run_async(lambda: eval_rollout_single_dataset(RolloutState.for_args(args), "hqa", rows))
        log_eval_rollout_data(rollout_ids[-1], args, data, None)


def test_the_summary_has_one_row_per_rollout_with_the_logged_reward_and_accuracy(tokenizer, rows, tmp_path, capsys):
    _train(tokenizer, rows, tmp_path, [0, 1, 2, 1])  # rollout 1 again: a resume from a checkpoint
    assert train_summary.main([str(tmp_path)]) == 0
    folder = tmp_path / "trajectories"
    table = list(csv.DictReader((folder / "train_summary.csv").open()))
    assert [row["rollout_id"] for row in table] == ["0", "1", "2"]
    logged = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    last_of_1 = [entry for entry in logged if entry.get("kind") == "rollout" and entry["rollout_id"] == 1][-1]
    assert float(table[1]["reward/mean"]) == pytest.approx(last_of_1["reward/mean"])
    assert all(float(row["accuracy/strict"]) == 0.5 and row["trajectories"] == str(2 * N) for row in table)
    evals = list(csv.DictReader((folder / "eval_summary.csv").open()))
    assert [(row["rollout_id"], row["eval_set"]) for row in evals] == [("1", "hqa")]
    with Image.open(folder / "train_summary.png") as image:
        assert image.format == "PNG" and image.size[0] > 400
    assert "3 rollouts (last: 2" in capsys.readouterr().out


def test_a_line_cut_by_a_crash_is_skipped_and_a_run_without_metrics_is_a_one_line_error(tmp_path, capsys):
    folder = tmp_path / "trajectories"
    folder.mkdir()
    line = {"kind": "rollout", "rollout_id": 0, "step": 0, "reward/mean": 0.5, "accuracy/strict": 0.25}
    (folder / "metrics.jsonl").write_text(json.dumps(line) + '\n{"kind": "roll')
    assert train_summary.main([str(tmp_path), "--no-plot", "--output-dir", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "train_summary.csv").read_text().splitlines()[1].startswith("0,0,,0.5,")
    assert not (tmp_path / "out" / "train_summary.png").exists()
    capsys.readouterr()
    assert train_summary.main([str(tmp_path / "nowhere")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1 and "--save" in error
