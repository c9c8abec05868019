"""MemAgent's training schedule and loss weighting, from the launch script's dry run to the host's loss.

MemAgent (verl) makes 16 optimizer updates per rollout: 128 prompts x 16 trajectories, in
mini-batches of 8 prompts (`ppo_mini_batch_size=8`, x n = 128 trajectories), with the loss
averaged over every response token of an update and AdamW (0.9, 0.999, weight decay 0.01). slime
HEAD and current vime count `--global-batch-size` in trajectories, so the script passes 128 for
16 updates on both; `--calculate-per-token-loss` gives the token mean. The last tests run the
schedule through the host double's DP split and loss reducer.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from mem_agent.custom_convert import convert_samples_to_train_data
from mem_agent.settings.config import ENV_NAMES
from support.host.args import host_args, parallel_config
from support.host.sample import Sample
from support.host.train_data import split_by_dp, token_weights
from support.scripts import TrainerFiles, run_script, write_trainer_files
from support.train_launch import TRAIN, about, flags, problems, submitted


@pytest.fixture
def checkout(tmp_path) -> TrainerFiles:
    """Fake slime and vime checkouts, model and data paths, and a `ray` that is never reached."""
    return write_trainer_files(tmp_path)


def dry_run(checkout: TrainerFiles, host: str, **knobs: str) -> subprocess.CompletedProcess:
    """The launch's dry run from the minimal environment (support/scripts.py) plus `knobs`."""
    env = checkout.env(host) | {"DRY_RUN": "1"} | knobs
    return run_script(TRAIN, env, bin_dirs=[checkout.bin_dir], timeout=120)


@pytest.mark.parametrize("host", ["slime", "vime"])
def test_the_dry_run_shows_memagents_sixteen_updates_per_rollout_on_each_host(checkout, host):
    """128 prompts x 16 = 2048 trajectories in updates of 128: 16 updates, the warmup 20 x 16."""
    result = dry_run(checkout, host)
    assert result.returncode == 0, result.stderr
    expected = {
        "--rollout-batch-size": ("128",),
        "--n-samples-per-prompt": ("16",),
        "--global-batch-size": ("128",),
        "--eps-clip": ("0.2",),
        "--eps-clip-high": ("0.2",),
        "--eps-clip-c": ("3.0",),
        "--disable-grpo-std-normalization": (),
        "--calculate-per-token-loss": (),
        "--optimizer": ("adam",),
        "--lr": ("1e-6",),
        "--lr-warmup-iters": ("320",),
        "--lr-decay-style": ("constant",),
        "--weight-decay": ("0.01",),
        "--adam-beta1": ("0.9",),
        "--adam-beta2": ("0.999",),
        "--clip-grad": ("1.0",),
    }
    found = flags(submitted(result.stdout))
    assert {flag: found.get(flag) for flag in expected} == expected


def test_per_trajectory_weighting_and_std_division_are_options(checkout):
    found = flags(submitted(dry_run(checkout, "slime", LOSS_WEIGHTING="trajectory", GRPO_STD_NORM="1").stdout))
    assert "--calculate-per-token-loss" not in found and "--disable-grpo-std-normalization" not in found


def test_a_global_batch_size_sets_the_updates_and_the_warmup_follows_them(checkout):
    found = flags(submitted(dry_run(checkout, "vime", GLOBAL_BATCH_SIZE="256").stdout))
    assert found["--global-batch-size"] == ("256",) and found["--lr-warmup-iters"] == ("160",), "8 updates"


@pytest.mark.parametrize(
    ("knobs", "named_value"),
    [
        ({"UPDATES_PER_ROLLOUT": "3"}, "UPDATES_PER_ROLLOUT=3"),
        ({"GLOBAL_BATCH_SIZE": "300"}, "GLOBAL_BATCH_SIZE=300"),
        ({"LOSS_WEIGHTING": "sample"}, "LOSS_WEIGHTING=sample"),
        ({"GRPO_STD_NORM": "yes"}, "GRPO_STD_NORM=yes"),
        ({"LR_WARMUP_ITERS": "-1"}, "LR_WARMUP_ITERS=-1"),
        ({"ADAM_BETA1": "1.5"}, "ADAM_BETA1=1.5"),
        ({"EPS_CLIP_C": "1"}, "EPS_CLIP_C=1"),
    ],
)
def test_a_schedule_that_would_drop_trajectories_or_an_unknown_knob_value_starts_nothing(checkout, knobs, named_value):
    lines = problems(dry_run(checkout, "slime", **knobs))
    assert len(lines) == 1 and lines[0].startswith(f"{named_value} "), lines


def test_updates_per_rollout_beside_a_global_batch_size_is_set_but_not_used(checkout):
    """GLOBAL_BATCH_SIZE decides the updates: an UPDATES_PER_ROLLOUT beside it is refused, not overridden."""
    lines = problems(dry_run(checkout, "slime", GLOBAL_BATCH_SIZE="256", UPDATES_PER_ROLLOUT="4"))
    assert len(lines) == 1 and about(lines, "UPDATES_PER_ROLLOUT") == lines, lines


@pytest.mark.parametrize(
    ("knobs", "named_value"),
    [
        ({"ACTOR_GPUS_PER_NODE": "four"}, "ACTOR_GPUS_PER_NODE=four"),
        ({"ROLLOUT_NUM_GPUS": "0"}, "ROLLOUT_NUM_GPUS=0"),
        ({"ACTOR_GPUS_PER_NODE": "8"}, "ACTOR_GPUS_PER_NODE=8"),
        ({"GPUS_PER_NODE": "1"}, "ASYNC=1"),
    ],
)
def test_async_gpu_split_is_checked_with_everything_else_in_one_message(checkout, knobs, named_value):
    """The split is validated first and derived after, in the one message beside the other problems."""
    (checkout.checkout("slime") / "train_async.py").write_text("")
    lines = problems(dry_run(checkout, "slime", ASYNC="1", MEM_CHUNK_TOKENS="0", **knobs))
    assert [line for line in lines if line.startswith(f"{named_value} ")], lines
    assert about(lines, "MEM_CHUNK_TOKENS") and len(lines) == 2, lines


def test_help_documents_global_batch_size_in_trajectories():
    """Both hosts count --global-batch-size in trajectories: the help says so beside the setting."""
    text = run_script(TRAIN, {}, "--help", timeout=60).stdout
    entry = re.search(r"^  --global-batch-size GLOBAL_BATCH_SIZE\n(.*?)(?=^  -)", text, flags=re.MULTILINE | re.DOTALL)
    words = " ".join(entry.group(1).split()) if entry else ""
    assert "in trajectories" in words and "never in turn rows" in words, text


def _rollout(prompts: int, n: int) -> list[Sample]:
    """Turn rows of `prompts` x `n` trajectories with 1 to 4 turns and 2 to 5 response tokens each."""
    rows = []
    for trajectory in range(prompts * n):
        turns = 1 + trajectory % 4
        for step in range(turns):
            length = 2 + (trajectory + step) % 4
            info = {"turn": "final" if step == turns - 1 else "memory", "step": step, "num_samples": turns}
            rows.append(
                Sample(
                    group_index=trajectory // n,
                    index=trajectory,
                    rollout_id=trajectory,
                    tokens=[1] * (3 + length),
                    response_length=length,
                    loss_mask=[1] * length,
                    reward=float(trajectory % 2),
                    status=Sample.Status.COMPLETED,
                    metadata={"mem_agent": info},
                )
            )
    return rows


@pytest.mark.parametrize("per_token", [True, False], ids=["token_mean", "per_trajectory"])
def test_the_hosts_split_makes_the_updates_and_the_reducer_weighs_as_configured(per_token):
    """4 prompts x 4 = 16 trajectories, 4 updates of 4 whole trajectories; the loss weights per update."""
    args = host_args(
        "http://h:1",
        hf_checkpoint="x",
        n_samples_per_prompt=4,
        rollout_batch_size=4,
        global_batch_size=4,
        calculate_per_token_loss=per_token,
        grpo_std_normalization=False,
    )
    samples = _rollout(4, 4)
    data = convert_samples_to_train_data(args, samples)
    ranks, schedule = split_by_dp(args, data, parallel_config(dp_size=2))
    assert schedule.global_batch_sizes == [4, 4, 4, 4]
    for step in range(4):
        rows = _rows_of_step(ranks, schedule.num_microbatches, step)
        assert len({data["rollout_ids"][row] for row in rows}) == 4, "four whole trajectories per update"
        weights = token_weights(data, rows, args)
        assert sum(map(sum, weights)) == pytest.approx(1.0), "each update's loss is one mean"
        if per_token:
            assert len({w for row in weights for w in row}) == 1, "MemAgent: every response token weighs the same"
        else:
            per_trajectory: dict[int, float] = {}
            for row, row_weights in zip(rows, weights, strict=True):
                rid = data["rollout_ids"][row]
                per_trajectory[rid] = per_trajectory.get(rid, 0.0) + sum(row_weights)
            assert list(per_trajectory.values()) == pytest.approx([0.25] * 4), "every trajectory weighs 1/4"


def _rows_of_step(ranks, num_microbatches, step):
    rows = []
    for rank in ranks:
        first = sum(num_microbatches[:step])
        for micro in rank["micro_batch_indices"][first : first + num_microbatches[step]]:
            rows.extend(rank["partition"][i] for i in micro)
    return rows


def test_memagents_data_order_is_the_default_and_shuffling_a_knob(checkout):
    """MemAgent reads its training file in order (data.shuffle=False); SHUFFLE=1 asks the host to shuffle."""
    assert "--rollout-shuffle" not in flags(submitted(dry_run(checkout, "slime").stdout))
    assert flags(submitted(dry_run(checkout, "vime", SHUFFLE="1").stdout))["--rollout-shuffle"] == ()
    assert about(problems(dry_run(checkout, "slime", SHUFFLE="yes")), "SHUFFLE")


def _agent_settings(stderr: str) -> list[str]:
    """The agent-settings lines the launch prints before it starts (`  MEM_X=value (origin)`, the cap)."""
    return [line.strip() for line in stderr.splitlines() if re.match(r"  (MEM_[A-Z0-9_]+=|chunk cap:)", line)]


def test_the_dry_run_prints_every_agent_setting_set_or_defaulted(checkout):
    """Python's values, not the shell's: the chunk cap (MemAgent's 8) and the sizes show unset too."""
    shown = _agent_settings(dry_run(checkout, "slime").stderr)
    assert [line.split("=", 1)[0] for line in shown[:-1]] == list(ENV_NAMES.values())
    for line in (
        "MEM_CHUNK_TOKENS=5000 (default)",
        "MEM_MAX_MEMORY=1024 (default)",
        "MEM_MAX_FINAL=1024 (default: MEM_MAX_MEMORY's value, as MemAgent's final turn)",
        "MEM_MAX_CHUNKS=8 (default)",
        "MEM_MODE=memagent (default)",
        'MEM_PROMPTS="" (built-in prompts) (default)',
        "MEM_FOLD_UNICODE=0 (default)",
        "MEM_SUB_EM_GUARD=0 (default)",
    ):
        assert line in shown, line
    assert shown[-1].startswith("chunk cap: 8 chunks x 5000 = 40000 tokens per training document")


def test_rememr1_mode_takes_rememr1s_budgets_unless_set(checkout):
    """ReMemR1's recipe gives memory and answer 2048 tokens each; a value the user sets still wins."""
    shown = _agent_settings(dry_run(checkout, "vime", MEM_MODE="rememr1", MEM_MAX_FINAL="512").stderr)
    assert "MEM_MODE=rememr1 (set)" in shown and "MEM_MAX_MEMORY=2048 (default of rememr1 mode)" in shown
    assert "MEM_MAX_FINAL=512 (set)" in shown
