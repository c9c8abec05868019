"""Every host flag that touches rewards, groups or samples: supported through the double, or refused.

Our hooks run inside the host double (tests/support/host, slime HEAD and current vime) against
the scripted engine, a whole rollout step at a time: the rollout loop, `log_rollout_data` over
the flat samples, the convert and the DP split. Refusals are checked at the first call of
generate, before any request.
"""

from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace

import pytest

from mem_agent import rollout
from mem_agent.custom_convert import convert_samples_to_train_data
from mem_agent.dynamic_filter import keep_groups_with_reward_contrast
from mem_agent.host.clients import close_clients
from mem_agent.host.flags import HostConfigError, check_host_args
from mem_agent.settings.config import AgentMode, MemAgentConfig
from support.hook_bench import (
    bench_args,
    host_modules_loaded,
    right_for_even_seeds,
    run_async,
    small_agent,
    step,
    until,
)
from support.host import filters
from support.host.data_source import DataSource
from support.host.eval_loop import eval_rollout_single_dataset
from support.host.metrics import log_eval_rollout_data
from support.host.rollout_loop import RolloutState, abort, generate_and_rm_group, sampling_params
from support.host.sample import Sample
from support.host.step import run_step
from support.host.train_data import flatten_rollout
from support.scripted_engine import scripted_engine
from support.trainer_rows import trainer_rows

pytestmark = pytest.mark.usefixtures("fresh_settings")
BACKENDS = ("vime", "slime")
HOOKED: list[int] = []


@pytest.fixture(scope="module")
def rows(synthetic_rows) -> list[dict]:
    return trainer_rows(synthetic_rows, 6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reward_key_turns_every_reward_into_a_dict_that_each_host_reader_accepts(tokenizer, rows, backend):
    """`--reward-key score`: metrics, convert and split read `reward["score"]`; the accuracy fields ride along."""
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:2])) as engine:
        args = bench_args(engine.url, backend=backend, rollout_batch_size=2, global_batch_size=4, reward_key="score")
        result = step(args, rows[:2], dp_size=2)
    rewards = [sample.reward for sample in result.samples]
    assert all(set(r) == {"score", "strict", "sub_em", "em", "f1", "outcome"} for r in rewards)
    assert all(r["score"] == r["strict"] and r["outcome"] == ("correct" if r["score"] else "wrong") for r in rewards)
    assert result.data["raw_reward"] == [r["score"] for r in rewards] and set(result.data["raw_reward"]) == {0.0, 1.0}
    assert result.log["rollout/truncated_ratio"] == 0.0
    assert sorted(p for rank in result.ranks for p in rank["partition"]) == list(range(len(result.samples)))


def test_without_a_reward_key_rewards_stay_numbers_the_metrics_can_round(tokenizer, rows):
    hard = {rows[0]["prompt"]}
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:2], hard)) as engine:
        result = step(bench_args(engine.url, rollout_batch_size=2, global_batch_size=8), rows[:2])
    assert all(isinstance(sample.reward, float) for sample in result.samples)
    assert result.log["rollout/zero_std/count_0.0"] == 1, "the hard question's group scored 0 everywhere"


@pytest.mark.parametrize("backend", BACKENDS)
def test_evaluation_with_n_samples_reads_the_eval_reward_key_and_logs_pass_at_n(tokenizer, rows, backend):
    """n > 1 per eval prompt: one final-answer sample each; `--eval-reward-key sub_em` reports MemAgent's metric."""
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:3])) as engine:
        args = bench_args(
            engine.url,
            backend=backend,
            reward_key="score",
            eval_reward_key="sub_em",
            n_samples_per_eval_prompt=2,
            log_passrate=True,
        )
        data = run_async(lambda: eval_rollout_single_dataset(RolloutState.for_args(args), "hqa", rows[:3]))
    samples = data["hqa"]["samples"]
    assert [sample.index for sample in samples] == list(range(6)) and all(s.group_index is None for s in samples)
    assert data["hqa"]["rewards"] == [sample.reward["sub_em"] for sample in samples]
    assert all(sample.metadata["mem_agent"]["turn"] == "final" for sample in samples)
    log = log_eval_rollout_data(0, args, data, None)
    assert log["eval/hqa"] == sum(data["hqa"]["rewards"]) / 6 and "eval/hqa-pass@2" in log


def test_log_reward_category_outcome_counts_right_and_wrong_answers(tokenizer, rows):
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:1])) as engine:
        args = bench_args(engine.url, reward_key="score", log_reward_category="outcome")
        result = step(args, rows[:1])
    assert result.log["rollout/error_cat/correct"] == result.log["rollout/error_cat/wrong"] == 0.5


def test_our_dynamic_filter_drops_groups_without_contrast_and_over_sampling_refills(tokenizer, rows):
    """DAPO per trajectory: the two hard questions are dropped, the host fetches more, group numbers keep rising."""
    hard = {rows[0]["prompt"], rows[2]["prompt"]}
    with small_agent(), host_modules_loaded(), scripted_engine(tokenizer, right_for_even_seeds(rows, hard)) as engine:
        args = bench_args(
            engine.url,
            rollout_batch_size=2,
            over_sampling_batch_size=3,
            global_batch_size=4,
            dynamic_sampling_filter_path="mem_agent.dynamic_filter.keep_groups_with_reward_contrast",
        )
        result = step(args, rows)
    kept = {sample.group_index for sample in result.samples}
    assert kept <= {1, 3, 4, 5} and len(kept) == 2, "only groups with contrast are trained"
    assert result.output.metrics == {"rollout/dynamic_filter/drop_zero_std_0.0": 2}, "the host's drop metric"
    seen = [group[0][0].group_index for group in result.output.all_groups]
    assert len(seen) == len(set(seen)) and max(seen) >= 3, "a refill continues the run's group numbering"
    assert set(result.data["raw_reward"]) == {0.0, 1.0}


def test_our_dynamic_filter_ends_a_rollout_on_a_model_without_contrast(tokenizer, rows, caplog):
    """A model that always scores 0: each rollout drops MEM_FILTER_MAX_ROUNDS rounds, then keeps what it has.

    The host (slime's loop, which the double mirrors) would draw new prompts without end; the
    bound makes every rollout end after rounds x --over-sampling-batch-size drops and warn once.
    """
    always_wrong = right_for_even_seeds(rows, hard=[row["prompt"] for row in rows])
    with (
        small_agent(MEM_FILTER_MAX_ROUNDS="2"),
        host_modules_loaded(),
        scripted_engine(tokenizer, always_wrong) as engine,
        caplog.at_level("WARNING", logger="mem_agent.host.group_filter"),
    ):
        args = bench_args(
            engine.url,
            n=2,
            rollout_batch_size=2,
            over_sampling_batch_size=3,
            global_batch_size=4,
            dynamic_sampling_filter_path="mem_agent.dynamic_filter.keep_groups_with_reward_contrast",
        )
        source = DataSource(rows, args.n_samples_per_prompt)
        results = [run_step(args, source, closers=(close_clients,)) for _ in range(2)]
    drops = [result.output.metrics["rollout/dynamic_filter/drop_zero_std_0.0"] for result in results]
    assert drops[0] >= 2 * 3, "2 rounds of 3 dropped before the first rollout keeps what it has"
    # A group finishing in the same host wait as the rollout's last one is judged by the next
    # rollout's count (module docstring): a rollout's drops may be off by the groups in flight.
    assert all(count <= 2 * 3 + 3 for count in drops), drops
    for result in results:
        assert len(result.output.samples) == 2 and set(result.data["raw_reward"]) == {0.0}
        drawn = {group[0][0].group_index for group in result.output.all_groups}
        assert len(drawn) <= 2 * 3 + 3 + 2, "no draw beyond the bound's rounds and the groups in flight"
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 2 and all("MEM_FILTER_MAX_ROUNDS=2 rounds of 3" in text for text in warnings)


def test_the_filter_bound_counts_each_rollout_afresh():
    """Drops of one rollout never count towards the next: the bound is per rollout, a full batch resets it."""
    args = bench_args("http://127.0.0.1:9", rollout_batch_size=1, over_sampling_batch_size=1)
    same = [_trajectory(0, 0, 0.0, 2), _trajectory(0, 1, 0.0, 2)]
    contrast = [_trajectory(0, 0, 1.0, 2), _trajectory(0, 1, 0.0, 2)]
    with small_agent(MEM_FILTER_MAX_ROUNDS="3"):
        first = [keep_groups_with_reward_contrast(args, same) for _ in range(4)]
        second = [keep_groups_with_reward_contrast(args, group) for group in (same, same, contrast, same)]
    assert first == [False, False, False, True], "three rounds of one dropped, then kept"
    assert second == [False, False, True, False], "a new rollout drops again; its contrast group fills it"


def _trajectory(group: int, rollout_id: int, reward: float, turns: int, status=Sample.Status.COMPLETED):
    rows = []
    for step_index in range(turns):
        info = {"turn": "final" if step_index == turns - 1 else "memory", "trajectory_status": status.value}
        reward_here = reward if status == Sample.Status.COMPLETED else 0.0
        rows.append(
            Sample(
                group_index=group,
                rollout_id=rollout_id,
                reward=reward_here,
                status=status,
                metadata={"mem_agent": info},
            )
        )
    return rows


def test_the_filter_counts_trajectories_not_turns_and_ignores_broken_ones():
    args = bench_args("http://127.0.0.1:9")
    same = [_trajectory(0, 0, 1.0, 5), _trajectory(0, 1, 1.0, 2)]
    contrast = [_trajectory(0, 0, 1.0, 5), _trajectory(0, 1, 0.0, 2)]
    broken = [_trajectory(0, 0, 1.0, 3), _trajectory(0, 1, 0.0, 2, Sample.Status.ABORTED)]
    assert keep_groups_with_reward_contrast(args, same) is False
    assert keep_groups_with_reward_contrast(args, contrast) is True
    assert keep_groups_with_reward_contrast(args, broken) is False, "an aborted trajectory is no contrast"


def test_the_filter_answers_in_the_hosts_own_type_when_the_host_is_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "slime.rollout.filter_hub.base_types", filters)
    args = bench_args("http://127.0.0.1:9")
    output = rollout_filter_fill(args, [_trajectory(0, 0, 1.0, 2), _trajectory(0, 1, 1.0, 2)])
    assert isinstance(output, filters.DynamicFilterOutput) and output.reason == "zero_std_1.0"
    assert output.keep_when_insufficient and not filters.should_drop_dynamic_filter_output(
        output, remaining_batch_size=2, target_data_size=2
    )


def rollout_filter_fill(args, group):
    from mem_agent.dynamic_filter import keep_groups_with_reward_contrast_or_fill

    return keep_groups_with_reward_contrast_or_fill(args, group)


def test_the_hosts_own_filter_would_crash_on_turn_lists_so_it_is_refused_naming_ours():
    args = bench_args("http://127.0.0.1:9")
    with pytest.raises(AttributeError, match="get_reward_value"):
        filters.check_reward_nonzero_std(args, [_trajectory(0, 0, 1.0, 2), _trajectory(0, 1, 0.0, 2)])
    host_filter = "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std"
    refused = bench_args("http://127.0.0.1:9", dynamic_sampling_filter_path=host_filter)
    with pytest.raises(HostConfigError, match=r"use mem_agent\.dynamic_filter\.keep_groups"):
        check_host_args(refused)


def record_turn(args, sample, *, rollout_id=None, evaluation=False):
    """A host sample hook (--rollout-sample-hook-path test_host_flags.record_turn)."""
    HOOKED.append(sample.index)
    sample.metadata["hooked"] = True


def test_sample_hooks_see_every_turn_sample_and_the_rows_still_train(tokenizer, rows):
    HOOKED.clear()
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:1])) as engine:
        args = bench_args(engine.url, rollout_sample_hook_path=["test_host_flags.record_turn"])
        result = step(args, rows[:1])
    assert len(HOOKED) == len(result.samples) and all(sample.metadata["hooked"] for sample in result.samples)
    assert sum(len(mask) for mask in result.data["loss_masks"]) == sum(map(sum, result.data["loss_masks"]))


async def generate_without_abort_mode(args, sample, sampling_params, evaluation=False):
    """Our generate hook as a host sees a function that does not declare `abort_mode`."""
    return await rollout.generate(args, sample, sampling_params, evaluation=evaluation)


@pytest.mark.parametrize("server_mode", [False, True], ids=["request_mode", "server_mode"])
def test_an_abort_ends_every_trajectory_in_flight_and_request_mode_touches_nothing_else(tokenizer, rows, server_mode):
    """Request mode (ours): the host cancels our calls, our HTTP requests close, no server-wide abort is sent."""
    assert rollout.generate.abort_mode == "request"
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:1]), hold_from=0) as engine:
        overrides = {"custom_generate_function_path": f"{__name__}.generate_without_abort_mode"} if server_mode else {}
        args = bench_args(engine.url, **overrides)

        async def go():
            state = RolloutState.for_args(args)
            group = [
                Sample(
                    group_index=0,
                    index=i,
                    prompt=rows[0]["prompt"],
                    label=rows[0]["label"],
                    metadata=dict(rows[0]["metadata"]),
                )
                for i in range(4)
            ]
            task = asyncio.ensure_future(generate_and_rm_group(state, group, sampling_params(args)))
            state.pendings.add(task)
            await until(lambda: engine.held == 4)  # every trajectory's first request is in flight
            await abort(state)
            return task.result()

        output = run_async(go)
        requests_after = len(engine.requests)
        if not server_mode:  # the engine notices a closed connection at its next check of the request
            engine.wait_for_disconnects(4, timeout_s=5)
    assert engine.server_aborts == int(server_mode)
    assert engine.disconnected == (0 if server_mode else 4), "request mode closes exactly our in-flight requests"
    statuses = [member[0].status if isinstance(member, list) else member.status for member in output]
    assert statuses == [Sample.Status.ABORTED] * 4 and requests_after == len(engine.requests) == 4


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"partial_rollout": True}, "--partial-rollout"),
        ({"group_rm": True}, "--group-rm"),
        ({"rollout_top_p": 0.95}, "--rollout-top-p 0.95"),
        ({"log_passrate": True}, "--log-passrate"),
        ({"apply_chat_template": True}, "--apply-chat-template"),
        ({"rollout_sample_filter_path": "x.y"}, "--rollout-sample-filter-path"),
        ({"rollout_all_samples_process_path": "x.y"}, "--rollout-all-samples-process-path"),
        ({"use_dynamic_global_batch_size": True}, "--use-dynamic-global-batch-size"),
        ({"dynamic_sampling_filter_path": "x.y"}, "--dynamic-sampling-filter-path x.y"),
        ({"reward_key": "sub_em"}, "--reward-key sub_em names one of the reward's own fields"),
        ({"eval_reward_key": "sub_em"}, "--eval-reward-key sub_em without --reward-key"),
        ({"reward_key": "score", "eval_reward_key": "outcome"}, "--eval-reward-key outcome is a text label"),
        ({"log_reward_category": "outcome"}, "--log-reward-category outcome"),
        ({"reward_key": "score", "log_reward_category": "why"}, "--log-reward-category why"),
        ({"rollout_max_context_len": 300}, "--rollout-max-context-len 300 is shorter than a memory turn"),
    ],
)
def test_flags_the_fan_out_cannot_work_with_are_refused_in_one_line_before_any_request(tokenizer, overrides, message):
    with small_agent(), scripted_engine(tokenizer, lambda text, seed: "x") as engine:
        args = bench_args(engine.url, **overrides)
        sample = Sample(index=0, group_index=0, prompt="Q?", label="a", metadata={"context": "text"})
        with pytest.raises(HostConfigError, match=message) as refused:
            run_async(lambda: rollout.generate(args, sample, sampling_params(args)))
    assert "\n" not in str(refused.value) and engine.requests == []


def test_in_rememr1_mode_a_memory_turn_also_holds_the_recalled_memory():
    """chunk 5000 + memory read, memory written and memory recalled (3 x 1024) + 512 = 8584 tokens."""
    args = SimpleNamespace(rollout_max_context_len=8000)
    check_host_args(args, training=False, config=MemAgentConfig())  # MemAgent: 5000 + 2 x 1024 + 512 fits
    with pytest.raises(HostConfigError) as refused:
        check_host_args(args, training=False, config=MemAgentConfig(mode=AgentMode.REMEMR1))
    assert str(refused.value) == (
        "--rollout-max-context-len 8000 is shorter than a memory turn (MEM_CHUNK_TOKENS 5000 + 3 x MEM_MAX_MEMORY "
        "1024 + ~512 prompt tokens = 8584); raise it or lower MEM_CHUNK_TOKENS / MEM_MAX_MEMORY"
    )


def test_the_refusal_prints_the_formula_of_the_turn_that_set_the_bound():
    """A long answer budget makes the final turn the longest: the message says so, with its own sum."""
    config = MemAgentConfig(chunk_tokens=256, max_memory_tokens=100, max_final_tokens=4096)
    with pytest.raises(HostConfigError) as refused:
        check_host_args(SimpleNamespace(rollout_max_context_len=2000), training=False, config=config)
    assert str(refused.value) == (
        "--rollout-max-context-len 2000 is shorter than the final turn (1 x MEM_MAX_MEMORY 100 + MEM_MAX_FINAL "
        "4096 + ~512 prompt tokens = 4708); raise it or lower MEM_MAX_MEMORY / MEM_MAX_FINAL"
    )


def test_a_context_length_that_fits_the_turn_budgets_is_accepted(tokenizer, rows):
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:1])) as engine:
        result = step(bench_args(engine.url, rollout_max_context_len=16384), rows[:1])
    assert len({sample.rollout_id for sample in result.samples}) == 4


def test_the_convert_refuses_training_flags_too_when_the_host_skipped_generate():
    args = bench_args("http://127.0.0.1:9", use_dynamic_global_batch_size=True)
    with pytest.raises(HostConfigError, match="--use-dynamic-global-batch-size"):
        convert_samples_to_train_data(args, flatten_rollout([[_trajectory(0, 0, 1.0, 2)]]))


@pytest.mark.parametrize("balance_data", [False, True])
def test_num_steps_per_rollout_and_balance_data_act_on_whole_trajectories(tokenizer, rows, balance_data):
    """--num-steps-per-rollout 2: global batch = 2 x 4 / 2 = 4 trajectories; --balance-data moves micro-batches only."""
    with small_agent(), scripted_engine(tokenizer, right_for_even_seeds(rows[:2])) as engine:
        args = bench_args(engine.url, rollout_batch_size=2, num_steps_per_rollout=2, balance_data=balance_data)
        result = step(args, rows[:2], dp_size=2)
    assert args.global_batch_size == 4 and result.schedule.global_batch_sizes == [4, 4]
    step_of_row = {}
    for rank in result.ranks:
        micro = iter(rank["micro_batch_indices"])
        for number, count in enumerate(result.schedule.num_microbatches):
            for _ in range(count):
                step_of_row |= {rank["partition"][i]: number for i in next(micro)}
    for rollout_id in set(result.data["rollout_ids"]):
        rows_of = [i for i, rid in enumerate(result.data["rollout_ids"]) if rid == rollout_id]
        assert len({step_of_row[i] for i in rows_of}) == 1, "a trajectory stays in one update"
