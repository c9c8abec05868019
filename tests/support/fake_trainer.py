"""Fake slime / vime checkouts built from the host double, for the preflight's tests.

Each module sits at the path of the real one and exposes the real one's API (the names and
signatures check_host calls), implemented by tests/support/host. `incompatible=` writes one
module the way an older or changed host has it, so the preflight has something to find:

- "sample_counted_split": slime v0.2-style `build_dp_schedule` without `rollout_indices` (it
  counts samples, not rollouts);
- "float_rewards": `log_rollout_data` that rounds `sample.reward` itself, ignoring --reward-key.
"""

from __future__ import annotations

from pathlib import Path

_COMMON = {
    "__init__.py": "",
    "utils/__init__.py": "",
    "utils/types.py": "from support.host.sample import Sample  # noqa: F401\n",
    "utils/misc.py": "from support.host.loader import load_function  # noqa: F401\n",
    "rollout/__init__.py": "",
    "rollout/data_source.py": """
import json

from support.host.data_source import DataSource


class RolloutDataSource:
    def __init__(self, args):
        with open(args.prompt_data) as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        self.source = DataSource(rows, args.n_samples_per_prompt)

    def get_samples(self, num_samples):
        return self.source.get_samples(num_samples)
""",
    "observability/__init__.py": "",
    "observability/rollout_data_utils.py": """
from support.host.train_data import _tensorise as tensorize_rollout_data_for_training  # noqa: F401
from support.host.train_data import validate_rollout_id_annotated  # noqa: F401
""",
    "observability/rollout_metrics.py": """
from support.host import metrics


def log_rollout_data(rollout_id, args, samples, rollout_extra_metrics, rollout_time):
    return metrics.log_rollout_data(rollout_id, args, samples, rollout_extra_metrics, rollout_time)
""",
    "utils/dp_schedule.py": """
from support.host import dp_schedule


def build_dp_schedule(args, train_parallel_config, total_lengths, *, global_batch_size, rollout_indices):
    schedule = dp_schedule.build_dp_schedule(
        args, train_parallel_config, total_lengths, global_batch_size=global_batch_size,
        rollout_indices=rollout_indices,
    )
    return schedule.partitions, schedule.micro_batch_indices, schedule.num_microbatches, schedule.global_batch_sizes
""",
}
_ROLLOUT = """
from support.host import rollout_loop

_STATES = {}


class GenerateState:
    def __new__(cls, args):
        if id(args) not in _STATES:
            state = object.__new__(cls)
            state.run = rollout_loop.RolloutState.for_args(args)
            state.sampling_params = rollout_loop.sampling_params(args)
            _STATES[id(args)] = state
        return _STATES[id(args)]


async def generate_and_rm_group(args, group, sampling_params, evaluation=False):
    return await rollout_loop.generate_and_rm_group(GenerateState(args).run, group, sampling_params, evaluation)
"""
_BATCH_BUILDER = """
import ray

from support.host import train_data


class Box:
    def __init__(self, inner):
        self.inner = inner


class BatchBuilder:
    def __init__(self, args):
        self.args = args

    def split_by_dp(self, data):
        ranks, _ = train_data.split_by_dp(self.args, data, self.train_parallel_config)
        return [Box(ray.put(rank)) for rank in ranks]
"""
_INCOMPATIBLE = {
    "sample_counted_split": (
        "utils/dp_schedule.py",
        """
def build_dp_schedule(args, train_parallel_config, total_lengths, *, global_batch_size):
    raise AssertionError("unreachable: the caller passes rollout_indices")
""",
    ),
    "float_rewards": (
        "observability/rollout_metrics.py",
        """
def log_rollout_data(rollout_id, args, samples, rollout_extra_metrics, rollout_time):
    return {"rollout/reward_mean": sum(round(sample.reward, 1) for sample in samples) / len(samples)}
""",
    ),
}


def write_fake_trainer(root: Path, host: str = "slime", incompatible: str | None = None) -> Path:
    """A checkout at `root` with a `host` package built from the double; returns `root`."""
    files = dict(_COMMON)
    files[f"rollout/{'sglang' if host == 'slime' else 'vllm'}_rollout.py"] = _ROLLOUT
    if host == "vime":
        files["data/__init__.py"] = ""
        files["data/batch_builder.py"] = _BATCH_BUILDER
    if incompatible is not None:
        path, text = _INCOMPATIBLE[incompatible]
        files[path] = text
    for relative, text in files.items():
        path = root / host / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))
    (root / "train.py").write_text("# the trainer's entry point (not used by the preflight)\n")
    return root
