"""The training launch's dry run prints the launch users rely on, case by case.

tests/data/dry_runs/<case>.txt holds the commands a case's dry run prints (paths normalised to
<ROOT>, <PY>, <REPO>): the Ray head, the job, or the join. The head and the join must be the same
words; the job the same `ray job submit` options, the same runtime env, the same entry, and the same
trainer flags with the same values, the user's EXTRA_ARGS last. The trainer flags are compared as a
collection: they are grouped by the parser that owns them (the recipe's groups, launch/recipe.py),
so a flag's place in the line follows its group.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.scripts import PROJECT_ROOT, TrainerFiles, run_script, write_trainer_files
from support.train_launch import TRAIN, options

EXPECTED = Path(__file__).parent / "data" / "dry_runs"
JOB_ID = {"DRY_RUN": "1", "SUBMISSION_ID": "job1"}
VIME_FULL = {
    "EVAL_DATA": "<ROOT>/t/train.jsonl",
    "WANDB_PROJECT": "p",
    "SHUFFLE": "1",
    "GRPO_STD_NORM": "1",
    "LOSS_WEIGHTING": "trajectory",
    "EXTRA_ARGS": "--foo 1 --bar",
    "NNODES": "2",
    "MASTER_ADDR": "10.0.0.1",
    "MEM_MAX_MEMORY": "512",
    "GLOBAL_BATCH_SIZE": "256",
    "TP": "4",
}
CASES = {  # case -> (host whose checkout TRAINER_ROOT names, None: no paths; the settings)
    "train_slime": ("slime", JOB_ID),
    "train_vime_full": ("vime", JOB_ID | VIME_FULL),
    "train_async": ("slime", JOB_ID | {"ASYNC": "1"}),
    "train_existing_ray": ("slime", JOB_ID | {"USE_EXISTING_RAY": "1"}),
    "train_join": (None, {"DRY_RUN": "1", "JOIN": "1", "MASTER_ADDR": "10.0.0.1"}),
}


@pytest.fixture
def root() -> Iterator[Path]:
    """A short folder: the head's Ray folder, <ROOT>/t/save/ray, must stay within Ray's 40 characters."""
    folder = Path(tempfile.mkdtemp(prefix="golden_", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _commands(stdout: str, root: Path) -> list[list[str]]:
    text = stdout.replace(str(root), "<ROOT>").replace(sys.executable, "<PY>").replace(str(PROJECT_ROOT), "<REPO>")
    return [shlex.split(line) for line in text.splitlines() if line.startswith(("ray start", "ray job submit"))]


def _assert_same_job(printed: list[str], expected: list[str]) -> None:
    split, expected_split = printed.index("--"), expected.index("--")
    ours, theirs = options(printed[3:split]), options(expected[3:expected_split])
    env, expected_env = (dict(pairs).pop("--runtime-env-json") for pairs in (ours, theirs))
    assert json.loads(env[0]) == json.loads(expected_env[0]), "the same runtime env"
    assert [pair for pair in ours if pair[0] != "--runtime-env-json"] == [
        pair for pair in theirs if pair[0] != "--runtime-env-json"
    ]
    assert printed[split : split + 3] == expected[expected_split : expected_split + 3], "the same interpreter and entry"
    trainer, expected_trainer = printed[split + 3 :], expected[expected_split + 3 :]
    assert Counter(options(trainer)) == Counter(options(expected_trainer)), "the same flags with the same values"


@pytest.mark.parametrize("case", CASES)
def test_the_dry_run_prints_the_same_launch(root, case):
    host, settings = CASES[case]
    files: TrainerFiles = write_trainer_files(root / "t")
    env = (files.env(host) if host else {}) | {
        name: value.replace("<ROOT>", str(root)) for name, value in settings.items()
    }
    (root / "cwd").mkdir()
    result = run_script(TRAIN, env, cwd=root / "cwd")
    assert result.returncode == 0, result.stderr
    printed = _commands(result.stdout, root)
    expected = [shlex.split(line) for line in (EXPECTED / f"{case}.txt").read_text().splitlines()]
    assert [words[:3] for words in printed] == [words[:3] for words in expected], "the same commands in order"
    for ours, theirs in zip(printed, expected, strict=True):
        if ours[:3] == ["ray", "job", "submit"]:
            _assert_same_job(ours, theirs)
        else:
            assert ours == theirs
    extra = settings.get("EXTRA_ARGS", "").split()
    assert printed[-1][len(printed[-1]) - len(extra) :] == extra, "the user's words come last"
