"""Turn rows -> trajectories -> advantages and train data, on hand-built host samples.

Rows are built the way the generate hook builds them (one per turn, the trajectory's reward on
each, our facts under metadata["mem_agent"]), so every number here can be checked by hand.
"""

from __future__ import annotations

import asyncio

import pytest

from mem_agent import rollout
from mem_agent.custom_convert import TrainDataError, convert_samples_to_train_data
from mem_agent.host.group_filter import trajectory_rewards
from mem_agent.host.trajectory_rows import untrainable_status
from support.host.args import host_args, parallel_config
from support.host.sample import Sample
from support.host.train_data import check_train_data, convert, split_by_dp

# MemAgent's recipe: the launch script passes --disable-grpo-std-normalization (no std division).
ARGS = host_args(
    "http://127.0.0.1:9", hf_checkpoint="bundled:qwen3", n_samples_per_prompt=4, grpo_std_normalization=False
)
COMPLETED = Sample.Status.COMPLETED


pytestmark = pytest.mark.usefixtures("fresh_settings")


def trajectory(rollout_id, group, reward, turns=3, *, status=COMPLETED, emitted=None, state=None) -> list[Sample]:
    """`turns` rows (memory turns, then the final turn) of one trajectory, as the hook emits them."""
    rows = []
    for step in range(turns):
        info = {
            "turn": "final" if step == turns - 1 else "memory",
            "step": step,
            "num_samples": turns if emitted is None else emitted,
            "trajectory_status": "completed" if status in (COMPLETED, Sample.Status.TRUNCATED) else status.value,
        }
        if state is not None:
            info["state_reward"] = state[step]
        trainable = int(status in (COMPLETED, Sample.Status.TRUNCATED))
        rows.append(
            Sample(
                group_index=group,
                index=rollout_id,
                rollout_id=rollout_id,
                tokens=[11, 12, 13, 20 + step, 30 + step],
                response_length=2,
                loss_mask=[trainable] * 2,
                rollout_log_probs=[-0.5, -0.25],
                reward=reward,
                status=status,
                metadata={"mem_agent": info},
            )
        )
    return rows


def by_rollout(samples, values) -> dict:
    table: dict = {}
    for sample, value in zip(samples, values, strict=True):
        table.setdefault(sample.rollout_id, set()).add(value)
    return {key: value.pop() if len(value) == 1 else value for key, value in table.items()}


def test_group_statistics_count_each_trajectory_once_however_many_turns_it_has():
    """5-turn reward 1 vs 2-turn reward 0: +-0.5 per trajectory, not the 5/7 row-weighted mean."""
    samples = trajectory(0, 0, 1.0, turns=5) + trajectory(1, 0, 0.0, turns=2)
    raw, advantages = rollout.reward_post_process(ARGS, samples)
    assert by_rollout(samples, advantages) == {0: 0.5, 1: -0.5}
    assert raw == [1.0] * 5 + [0.0] * 2


def test_groups_come_from_group_index_not_from_the_rows_position():
    """A fan-out's flat list has a varying row count per prompt: reshaping by n would mix prompts."""
    samples = trajectory(0, 0, 1.0, 4) + trajectory(4, 1, 1.0, 2) + trajectory(1, 0, 0.0, 3) + trajectory(5, 1, 0.0, 6)
    _, advantages = rollout.reward_post_process(ARGS, samples)
    assert by_rollout(samples, advantages) == {0: 0.5, 1: -0.5, 4: 0.5, 5: -0.5}


def test_the_outcome_is_the_final_turns_reward():
    """Only the final conversation is scored; a memory row's reward never decides the outcome."""
    samples = trajectory(0, 0, 0.0) + trajectory(1, 0, 0.0)
    samples[2].reward = 1.0  # trajectory 0's final turn
    _, advantages = rollout.reward_post_process(ARGS, samples)
    assert by_rollout(samples, advantages) == {0: 0.5, 1: -0.5}


def test_failed_and_aborted_trajectories_are_masked_zero_and_out_of_the_mean():
    failed = trajectory(2, 0, 0.0, 1, status=Sample.Status.FAILED)
    aborted = trajectory(3, 0, 0.0, 2, status=Sample.Status.ABORTED)
    samples = trajectory(0, 0, 1.0) + failed + trajectory(1, 0, 0.0) + aborted
    data = convert_samples_to_train_data(ARGS, samples)
    check_train_data(data, rollout_counted=True)
    assert by_rollout(samples, data["rewards"]) == {0: 0.5, 1: -0.5, 2: 0.0, 3: 0.0}
    assert by_rollout(samples, data["rollout_mask_sums"]) == {0: 6, 1: 6, 2: 0, 3: 0}
    for sample, mask in zip(samples, data["loss_masks"], strict=True):
        assert set(mask) == ({1} if sample.rollout_id in (0, 1) else {0})


def test_a_trajectory_trimmed_by_a_sample_counted_host_is_not_trained():
    """vime trims a step to a multiple of the global batch size in rows; a cut trajectory is masked."""
    samples = trajectory(0, 0, 1.0) + trajectory(1, 0, 0.0) + trajectory(2, 0, 1.0, emitted=3)[:2]
    data = convert_samples_to_train_data(ARGS, samples)
    assert by_rollout(samples, data["rewards"]) == {0: 0.5, 1: -0.5, 2: 0.0}
    assert all(set(mask) == {0} for sample, mask in zip(samples, data["loss_masks"], strict=True) if sample.index == 2)


def test_more_rows_than_the_hook_emitted_is_a_contract_error():
    samples = trajectory(0, 0, 1.0, emitted=2)
    with pytest.raises(TrainDataError, match="rollout 0 has 3 rows but its generate call emitted 2"):
        convert_samples_to_train_data(ARGS, samples)


def test_one_rollout_id_in_two_groups_is_a_contract_error():
    samples = trajectory(0, 0, 1.0) + trajectory(0, 1, 1.0)
    with pytest.raises(TrainDataError, match="spans group_index 0 and 1"):
        rollout.reward_post_process(ARGS, samples)


SAMPLES_1001 = (1.0, 0.0, 0.0, 1.0)


def _std_group():
    return [row for rid, reward in enumerate(SAMPLES_1001) for row in trajectory(rid, 0, reward, 2 + rid)]


def test_std_normalisation_follows_the_hosts_own_flag():
    """The host's --disable-grpo-std-normalization decides; its default (on) divides by the unbiased std."""
    expected = 0.5 / ((1 / 3) ** 0.5 + 1e-6)
    host_default = host_args("http://127.0.0.1:9", hf_checkpoint="x", n_samples_per_prompt=4)
    _, divided = rollout.reward_post_process(host_default, _std_group())
    assert by_rollout(_std_group(), divided) == pytest.approx({0: expected, 1: -expected, 2: -expected, 3: expected})
    _, memagent = rollout.reward_post_process(ARGS, _std_group())
    assert by_rollout(_std_group(), memagent) == {0: 0.5, 1: -0.5, 2: -0.5, 3: 0.5}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"rewards_normalization": False}, {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0}),
        ({"advantage_estimator": "reinforce_plus_plus_baseline"}, {0: 0.5, 1: -0.5, 2: -0.5, 3: 0.5}),
        ({"advantage_estimator": "ppo"}, {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0}),
    ],
)
def test_rewards_are_centred_only_where_the_host_would_centre_them(overrides, expected):
    """Without the host's group normalisation (flag off, or a non-group estimator) rows keep raw rewards."""
    args = host_args("http://127.0.0.1:9", hf_checkpoint="x", n_samples_per_prompt=4, **overrides)
    _, advantages = rollout.reward_post_process(args, _std_group())
    assert by_rollout(_std_group(), advantages) == expected


def test_a_dict_reward_is_read_through_the_hosts_reward_key():
    args = host_args(
        "http://127.0.0.1:9", hf_checkpoint="x", n_samples_per_prompt=2, reward_key="acc", grpo_std_normalization=False
    )
    samples = trajectory(0, 0, {"acc": 1.0, "len": 9.0}, 2) + trajectory(1, 0, {"acc": 0.0, "len": 1.0}, 2)
    raw, advantages = rollout.reward_post_process(args, samples)
    assert raw == [1.0, 1.0, 0.0, 0.0] and by_rollout(samples, advantages) == {0: 0.5, 1: -0.5}
    with pytest.raises(TrainDataError, match="needs --reward-key"):
        rollout.reward_post_process(ARGS, samples)


def test_rememr1_state_rewards_mix_in_per_turn_only_in_rememr1_mode(monkeypatch):
    """The ReMemR1 seam: a `state_reward` per turn is mixed with alpha; MemAgent mode ignores it."""
    samples = trajectory(0, 0, 1.0, 2, state=[0.2, 1.0]) + trajectory(1, 0, 0.0, 2, state=[0.6, 1.0])
    _, memagent = rollout.reward_post_process(ARGS, samples)
    assert memagent == [0.5, 0.5, -0.5, -0.5]
    monkeypatch.setenv("MEM_MODE", "rememr1")
    monkeypatch.setenv("MEM_REMEMR1_ALPHA", "0.5")
    rollout.reset_caches()
    _, mixed = rollout.reward_post_process(ARGS, samples)
    # state rewards doubled before centring (MEM_REMEMR1_STATE_SCALE=2, the released code's weight)
    assert mixed == pytest.approx([0.5 * 0.5 + 0.5 * -0.4, 0.5 * 0.5, 0.5 * -0.5 + 0.5 * 0.4, 0.5 * -0.5])


def test_samples_without_a_rollout_id_are_one_trajectory_each_under_a_fresh_id():
    """Rows from another generate (no rollout_id) get the smallest ids no row uses, as the hosts number them."""
    samples = [
        Sample(group_index=0, index=i, tokens=[1, 2], response_length=1, reward=r, status=COMPLETED)
        for i, r in enumerate([1.0, 0.0])
    ]
    samples.append(Sample(group_index=1, index=5, rollout_id=0, tokens=[1, 2], response_length=1, reward=1.0))
    data = convert_samples_to_train_data(ARGS, samples)
    assert data["rollout_ids"] == [1, 2, 0], "never the index, which may collide with a real rollout_id"
    assert data["rewards"] == [0.5, -0.5, 0.0] and data["loss_masks"] == [[1], [1], [1]]
    hosts_own = host_args("http://h:1", hf_checkpoint="x", n_samples_per_prompt=1)
    hosts_own.custom_convert_samples_to_train_data_path = None
    assert data["rollout_ids"] == convert(hosts_own, samples)["rollout_ids"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("loss_mask", [1, 1, 1], "loss mask has 3 entries for 2 tokens"),
        ("rollout_log_probs", [-0.1], "1 logprobs for 2 tokens"),
        ("response_length", 9, "response_length 9 does not fit its 5 tokens"),
    ],
)
def test_rows_that_break_the_hosts_row_invariants_are_named(field, value, message):
    samples = trajectory(0, 0, 1.0)
    setattr(samples[1], field, value)
    with pytest.raises(TrainDataError, match=f"row 1: {message}"):
        convert_samples_to_train_data(ARGS, samples)


def test_the_hosts_split_keeps_our_per_row_keys_and_ships_raw_reward_whole():
    """Each rank gets our rows' keys (never `metadata`), tensorised, and the whole raw_reward list."""
    samples = trajectory(0, 0, 1.0) + trajectory(1, 0, 0.0, 2)
    for sample in samples:
        sample.train_metadata = {"loss": "default"}
    data = convert_samples_to_train_data(ARGS, samples)
    check_train_data(data, rollout_counted=True)
    args = host_args("http://h:1", hf_checkpoint="x", n_samples_per_prompt=2, global_batch_size=2)
    ranks, _ = split_by_dp(args, data, parallel_config(dp_size=2))
    assert sorted(p for rank in ranks for p in rank["partition"]) == list(range(5))
    assert all("metadata" not in rank and rank["raw_reward"] == data["raw_reward"] for rank in ranks)
    assert all(rank["rollout_mask_sums"].dtype.is_floating_point for rank in ranks)


def test_slimes_own_convert_with_our_post_process_builds_the_same_rows():
    """Users may set only --custom-reward-post-process-path: the host's convert must then agree with ours."""
    samples = trajectory(0, 0, 1.0) + trajectory(1, 0, 0.0, 2) + trajectory(2, 0, 0.0, 2, status=Sample.Status.FAILED)
    ours = convert_samples_to_train_data(ARGS, samples)
    host_args_only_post_process = host_args(
        "http://h:1",
        hf_checkpoint="x",
        n_samples_per_prompt=4,
        grpo_std_normalization=False,
        custom_convert_samples_to_train_data_path=None,
    )
    hosts = convert(host_args_only_post_process, samples)
    for key in ("tokens", "rewards", "raw_reward", "loss_masks", "rollout_ids", "rollout_mask_sums"):
        assert ours[key] == hosts[key], key


@pytest.mark.parametrize("said_by", ["the row status", "the recorded trajectory status"])
def test_the_advantages_the_filter_and_the_reward_hook_leave_out_the_same_trajectories(said_by):
    """A failed trajectory is out of its group's mean, out of the DAPO filter's contrast and scored 0
    by the reward hook, whether the host's row status or only the status our hook recorded says so."""
    failed = trajectory(2, 0, 1.0, 2)
    for row in failed:
        row.label = "Velmont"
        row.metadata["mem_agent"]["answer"] = "\\boxed{Velmont}"
        if said_by == "the row status":
            row.status = Sample.Status.FAILED
        else:
            row.metadata["mem_agent"]["trajectory_status"] = "failed"
    kept = [trajectory(0, 0, 1.0, 2), trajectory(1, 0, 0.0, 2)]
    samples = [*kept[0], *kept[1], *failed]
    assert [untrainable_status(sample) for sample in samples] == [None] * 4 + ["failed"] * 2
    _, advantages = rollout.reward_post_process(ARGS, samples)
    assert by_rollout(samples, advantages) == {0: 0.5, 1: -0.5, 2: 0.0}
    assert trajectory_rewards(ARGS, [*kept, failed]) == [1.0, 0.0]
    assert asyncio.run(rollout.reward(ARGS, failed[-1])) == 0.0
