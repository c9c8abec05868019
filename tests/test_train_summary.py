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
from mem_agent.observability.training_curves import read_run, summary_figure
from support.trainer_rows import trainer_rows
from support.training_folder import hooked_training_run

pytestmark = pytest.mark.usefixtures("fresh_settings")
N = 4


@pytest.fixture(scope="module")
def rows(synthetic_rows) -> list[dict]:
    return trainer_rows(synthetic_rows, 2)


def _train(tokenizer, rows, save: Path, rollout_ids) -> None:
    hooked_training_run(tokenizer, rows, save, rollout_ids, n=N)


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


def test_a_one_rollout_run_draws_its_points_with_markers_and_a_band_within_the_rewards_range(tokenizer, rows, tmp_path):
    """Rewards are 0/1 with mean 0.5 and std 0.5: the +-1 std band stays in [0, 1], and the single
    rollout is drawn as visible points (a marker on every line), as the PNG shows."""
    _train(tokenizer, rows, tmp_path, [0])
    run = read_run(tmp_path)
    figure = summary_figure(run)
    reward_axes, accuracy_axes = figure.axes
    lines = [*reward_axes.get_lines(), *accuracy_axes.get_lines()]
    assert lines and all(line.get_marker() not in (None, "None", "") for line in lines)
    band = reward_axes.collections[0].get_paths()[0].vertices[:, 1]  # one point: a bar from 0 to 1
    assert band.min() == 0.0 and band.max() == 1.0
    assert all(tick == int(tick) for tick in accuracy_axes.get_xticks())  # rollouts are whole numbers
    assert train_summary.main([str(tmp_path)]) == 0
    with Image.open(tmp_path / "trajectories" / "train_summary.png") as image:
        assert image.format == "PNG"
