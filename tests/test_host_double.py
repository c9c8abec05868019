"""The host double's own rules, each the behaviour of slime HEAD / current vime our hooks rely on.

If the double drifted from the hosts, the flag tests would pass where a real host fails; these
pin the rules themselves (numbering, rollout ids, the DP split and its asserts, the rm return
checks, the metrics' object fields, the semaphore, the group-size assert), on hand-made samples.
"""

from __future__ import annotations

import asyncio

import pytest

from support.host.args import host_args, parallel_config
from support.host.data_source import DataSource
from support.host.dp_schedule import build_dp_schedule
from support.host.metrics import compute_metrics_from_samples
from support.host.rollout_loop import RolloutState, generate_and_rm, generate_rollout_async
from support.host.sample import PrefixCacheInfo, Sample, SpecInfo
from support.host.train_data import convert, fresh_rollout_ids, split_by_dp

ROWS = [{"prompt": f"q{i}", "label": "a", "metadata": {}} for i in range(3)]
IN_FLIGHT: list[int] = []
PEAKS: list[int] = []  # generate calls in flight as each one starts, so the peak is read exactly


def args_for(**overrides):
    overrides.setdefault("custom_generate_function_path", f"{__name__}.one_sample")
    overrides.setdefault("custom_rm_path", f"{__name__}.constant_rm")
    return host_args("http://127.0.0.1:9", hf_checkpoint="x", n_samples_per_prompt=2, **overrides)


async def one_sample(args, sample, sampling_params, evaluation=False):
    """A generate that finishes at once: two prompt and two response tokens, no reward yet."""
    IN_FLIGHT.append(1)
    PEAKS.append(len(IN_FLIGHT))
    await asyncio.sleep(0.01)
    IN_FLIGHT.pop()
    sample.tokens, sample.response_length, sample.status = [1, 2, 3, 4], 2, Sample.Status.COMPLETED
    return sample


async def two_samples(args, sample, sampling_params, evaluation=False):
    first = await one_sample(args, sample, sampling_params)
    first.rollout_id = sample.index
    second = Sample(group_index=sample.group_index, index=sample.index, rollout_id=sample.index)
    second.tokens, second.response_length, second.status = [5, 6, 7], 1, Sample.Status.COMPLETED
    return [first, second]


async def constant_rm(args, sample_or_samples, **kwargs):
    return [1.0] * len(sample_or_samples) if isinstance(sample_or_samples, list) else 1.0


async def short_rm(args, samples, **kwargs):
    return [1.0]


async def dict_rm(args, samples, **kwargs):
    return {"a": 1.0, "b": 0.0}


def test_group_index_and_index_keep_counting_across_calls_and_epochs():
    source = DataSource(ROWS, 2)
    first, second = source.get_samples(2), source.get_samples(2)
    assert [[s.group_index for s in g] for g in first + second] == [[0, 0], [1, 1], [2, 2], [3, 3]]
    assert [s.index for g in first + second for s in g] == list(range(8))
    assert [g[0].prompt for g in first + second] == ["q0", "q1", "q2", "q0"], "the fourth group starts a new epoch"


def test_a_missing_rollout_id_gets_the_smallest_free_id_never_the_index():
    samples = [Sample(index=7, rollout_id=None), Sample(index=0, rollout_id=0), Sample(index=9, rollout_id=None)]
    assert fresh_rollout_ids(samples) == [1, 0, 2]


def _args(**overrides):
    overrides.setdefault("n_samples_per_prompt", 1)
    return host_args("http://h:1", hf_checkpoint="x", **overrides)


def test_steps_hold_whole_rollouts_and_trailing_rollouts_are_dropped():
    ids = [0, 0, 1, 2, 2, 2, 3, 4]
    schedule = build_dp_schedule(_args(), parallel_config(), [10] * 8, global_batch_size=2, rollout_indices=ids)
    assert schedule.global_batch_sizes == [2, 2] and sorted(schedule.partitions[0]) == [0, 1, 2, 3, 4, 5, 6]


def test_micro_batches_respect_the_token_budget_and_tile_each_ranks_rows():
    lengths = [300, 500, 200, 900, 100, 400]
    args = _args(max_tokens_per_gpu=600)
    schedule = build_dp_schedule(
        args, parallel_config(dp_size=2), lengths, global_batch_size=6, rollout_indices=list(range(6))
    )
    for rank in range(2):
        partition, micro = schedule.partitions[rank], schedule.micro_batch_indices[rank]
        assert [i for mb in micro for i in mb] == list(range(len(partition))), "micro-batches tile the rank's rows"
        for mb in micro:
            tokens = sum(lengths[partition[i]] for i in mb)
            assert tokens <= 600 or len(mb) == 1, "only a row longer than the budget rides alone"
    assert len(set(schedule.num_microbatches)) == 1 and sorted(p for rank in schedule.partitions for p in rank) == list(
        range(6)
    )


@pytest.mark.parametrize(
    ("lengths", "ids", "gbs", "dp", "overrides", "message"),
    [
        ([10, 10], [0, 1], 3, 1, {}, r"num_rollouts \(2\) < global_batch_size \(3\)"),
        ([10, 10], [0, 0], 1, 4, {}, "2 samples < dp_size 4"),
        ([10, 10, 10], [0, 1, 2], 3, 2, {"use_dynamic_batch_size": False, "micro_batch_size": 3}, "static path"),
    ],
)
def test_the_split_asserts_where_the_host_asserts(lengths, ids, gbs, dp, overrides, message):
    with pytest.raises(AssertionError, match=message):
        build_dp_schedule(
            _args(**overrides), parallel_config(dp_size=dp), lengths, global_batch_size=gbs, rollout_indices=ids
        )


def test_the_split_cannot_run_without_rollout_ids():
    data = {"tokens": [[1, 2]], "raw_reward": [1.0], "loss_masks": [[1]]}
    with pytest.raises(KeyError, match="rollout_ids"):
        split_by_dp(_args(), data, parallel_config())


@pytest.mark.parametrize(
    ("rm", "error", "message"),
    [("short_rm", ValueError, "returned 1 rewards for 2 samples"), ("dict_rm", TypeError, "returned dict instead")],
)
def test_a_batched_rm_must_return_one_reward_per_sample_and_nothing_is_assigned_otherwise(rm, error, message):
    args = args_for(custom_generate_function_path=f"{__name__}.two_samples", custom_rm_path=f"{__name__}.{rm}")
    sample = Sample(group_index=0, index=0, prompt="q")

    async def go():
        return await generate_and_rm(RolloutState.for_args(args), sample, {})

    with pytest.raises(error, match=message):
        asyncio.run(go())
    assert sample.reward is None


def test_the_metrics_read_spec_info_and_prefix_cache_info_as_objects():
    args = _args(vllm_speculative_config={"method": "mtp"})
    sample = Sample(
        group_index=0,
        reward=1.0,
        response_length=2,
        spec_info=SpecInfo(3, 4, 2, 4),
        prefix_cache_info=PrefixCacheInfo(5, 10),
    )
    metrics = compute_metrics_from_samples(args, [sample])
    assert metrics["spec_accept_rate"] == 0.75 and metrics["prefix_cache_hit_rate"] == 0.5
    sample.prefix_cache_info = {"cached_tokens": 5}
    with pytest.raises(AttributeError):
        compute_metrics_from_samples(args, [sample])


def test_the_semaphore_bounds_generate_calls_and_a_wrong_group_size_fails_the_hosts_assert():
    args = args_for(vllm_server_concurrency=2, rollout_batch_size=3)

    def run(source):
        return asyncio.run(generate_rollout_async(RolloutState.for_args(args), source))

    PEAKS.clear()
    output = run(DataSource(ROWS, 2))
    assert len(output.samples) == 3 and len(PEAKS) == 6, "three groups of two: six generate calls"
    assert max(PEAKS) == 2, "never more than two generate calls at once, and two do run together"
    with pytest.raises(AssertionError, match="group of 3 for n=2"):
        run(DataSource(ROWS, 3))


def test_the_hosts_own_convert_normalises_by_position_and_keeps_remove_sample():
    """slime's built-in GRPO reshapes into n-sized groups only when the count is rollout_batch_size x n."""
    samples = [
        Sample(index=i, group_index=i // 2, reward=r, tokens=[1, 2], response_length=1)
        for i, r in enumerate([1.0, 0.0, 1.0, 1.0])
    ]
    samples[1].remove_sample = True
    args = _args(
        custom_convert_samples_to_train_data_path=None,
        custom_reward_post_process_path=None,
        n_samples_per_prompt=2,
        rollout_batch_size=2,
        grpo_std_normalization=False,
    )
    data = convert(args, samples)
    assert data["rewards"] == [0.5, -0.5, 0.0, 0.0] and data["loss_masks"][1] == [0]
    assert data["rollout_ids"] == [0, 1, 2, 3]
