"""A training folder written by our real log hook over real rollout steps of the host double (the
scripted engine answers; see hook_bench): `SAVE/trajectories/metrics.jsonl` with every rollout's
figures, the sampled `rollout_<id>.jsonl` records, and an eval set's line after the last rollout."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from mem_agent.host.clients import close_clients
from support.hook_bench import bench_args, right_for_even_seeds, run_async, small_agent
from support.host.data_source import DataSource
from support.host.eval_loop import eval_rollout_single_dataset
from support.host.metrics import log_eval_rollout_data
from support.host.rollout_loop import RolloutState
from support.host.step import run_step
from support.scripted_engine import scripted_engine


def hooked_training_run(
    tokenizer,
    rows: list[dict],
    save: Path,
    rollout_ids: Sequence[int],
    *,
    n: int = 4,
    hard: Iterable[str] = (),
    evaluate: bool = True,
    **settings: str,
) -> Path:
    """Rollouts `rollout_ids` of `rows` (n samples each; even positions right, `hard` questions
    always wrong), then one eval of the rows logged at the last rollout id; `settings` are MEM_*."""
    with small_agent(**settings), scripted_engine(tokenizer, right_for_even_seeds(rows, hard)) as engine:
        args = bench_args(engine.url, n=n, rollout_batch_size=len(rows), global_batch_size=n, save=str(save))
        for rollout_id in rollout_ids:
            run_step(args, DataSource(rows, n), closers=(close_clients,), rollout_id=rollout_id)
        if evaluate:
            data = run_async(lambda: eval_rollout_single_dataset(RolloutState.for_args(args), "hqa", rows))
            log_eval_rollout_data(rollout_ids[-1], args, data, None)
    return save
