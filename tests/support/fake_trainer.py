"""Fake slime / vime checkouts built from the host double, laid out as the real ones are.

Each checkout has what the preflight runs, at the real paths, with the real names and
signatures, implemented by tests/support/host:

    train.py                      imports parse_args and create_rollout_manager as the real one does
    <host>/utils/arguments.py     parse_args, _pre_parse_mode, get_<host>_extra_args_provider,
                                  <host>_validate_args (support/host/parser.py)
    <host>/ray/placement_group.py create_rollout_manager: RolloutManager.options(...).remote(args, pg)
    <host>/ray/rollout.py         @ray.remote RolloutManager: loads the data source, rollout function
                                  and hooks by args' paths; generate(rollout_id) = rollout, rollout-id
                                  check, flatten, log_rollout_data, convert, DP split
    engine start-up               start_rollout_servers: slime beside the manager in slime/ray/rollout.py;
                                  vime in vime/backends/vllm_utils/deployment.py, imported inside
                                  RolloutManager.__init__
    data source                   slime: slime/rollout/data_source.py; vime: vime/data/data_source.py
    convert and split             slime: RolloutManager._convert_samples_to_train_data /
                                  _split_train_data_by_dp; vime: vime/data/batch_builder.py BatchBuilder
    <host>/rollout/<engine>_rollout.py  GenerateState, generate_and_rm_group, generate_rollout
    <host>/utils/types.py, misc.py, dp_schedule.py, async_utils.py (the rollout runs on one background
                                  event loop, as the hosts' `run` does); observability/ rollout_data_utils

`incompatible=` writes one change a newer or older host could make, so the preflight has
something to find (see `BREAKS`).
"""

from __future__ import annotations

import inspect
from pathlib import Path

from support.host import sample as double_sample

ENGINE = {"slime": "sglang", "vime": "vllm"}

_TRAIN = """
import ray

from {host}.ray.placement_group import create_rollout_manager
from {host}.utils.arguments import parse_args


def train(args):
    rollout_manager, _ = create_rollout_manager(args, None)
    for rollout_id in range(args.num_rollout):
        ray.get(rollout_manager.generate.remote(rollout_id))


if __name__ == "__main__":
    train(parse_args())
"""
_ARGUMENTS = """
import argparse

from support.host import parser as double_parser


def _pre_parse_mode():
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    double_parser.pre_parse_arguments(parser)
    return parser.parse_known_args()[0]


def get_{host}_extra_args_provider():
    def add_{host}_arguments(parser):
        double_parser.add_host_arguments(parser, "{host}", drop=DROPPED)
        return parser

    return add_{host}_arguments


DROPPED = ()


def {host}_validate_args(args):
    double_parser.validate_host_args(args)
{validate_return}

def parse_args():
    raise RuntimeError("needs Megatron's parser (the preflight stands in for it)")
"""
_PLACEMENT = """
def create_rollout_manager(args, pg):
    from .rollout import RolloutManager

    manager = RolloutManager.options(num_cpus=1, num_gpus=0).remote(args, pg)
    return manager, None
"""
_MANAGER = """
import time

import ray

from support.host import metrics, train_data
from {host}.utils.misc import Box, load_function
from {host}.utils.dp_schedule import build_dp_schedule
{builder_import}{engine_start}

@ray.remote
class RolloutManager:
    def __init__(self, args, pg):
        self.args = args
{engine_start_import}        self.servers, _ = start_rollout_servers(args, pg)
        self.data_source = load_function(args.data_source_path)(args)
        self.generate_rollout = load_function(args.rollout_function_path)
        self.eval_generate_rollout = load_function(args.eval_function_path)
{builder_init}
    def set_train_parallel_config(self, config):
        self.train_parallel_config = config

    def generate(self, rollout_id):
        start = time.time()
        output = self.generate_rollout(self.args, rollout_id, self.data_source, evaluation=False)
        data = train_data.flatten_rollout(output.samples)
        metrics.log_rollout_data(rollout_id, self.args, data, output.metrics, time.time() - start)
        data = self._convert_samples_to_train_data(data)
        return self._split_train_data_by_dp(data)
{manager_convert}
"""
_SLIME_CONVERT = """
    def _convert_samples_to_train_data(self, samples):
        data = train_data.convert(self.args, samples)
        return data

    def _split_train_data_by_dp(self, data):
        return split(self.args, data, self.train_parallel_config)


ROW_KEYS = [key for key in train_data.SLIME_ROW_KEYS]


def split(args, data, parallel):
    total_lengths = [len(tokens) for tokens in data["tokens"]]
    partitions, micro, num_micro, global_sizes = build_dp_schedule(
        args, parallel, total_lengths, global_batch_size=args.global_batch_size, rollout_indices=data["rollout_ids"]
    )
    refs = []
    for rank, partition in enumerate(partitions):
        part = {{"partition": partition}}
        for key in ROW_KEYS:
            if key in data:
                part[key] = [data[key][i] for i in partition]
        part["raw_reward"], part["total_lengths"] = data["raw_reward"], total_lengths
        part |= {{"global_batch_sizes": global_sizes, "num_microbatches": num_micro}}
        part["micro_batch_indices"] = micro[rank]
        train_data._tensorise(part)
        refs.append(Box(ray.put(part)))
    return refs
"""
# slime defines its engine start-up beside the manager; current vime's manager imports it from its
# engine's deployment module when it starts (inside __init__).
_START_UP = """
def start_rollout_servers(args, pg) -> tuple[dict, list]:
    raise RuntimeError("starts the rollout engines: needs GPUs")
"""
_VIME_START_UP_IMPORT = "        from vime.backends.vllm_utils.deployment import start_rollout_servers\n\n"
_VIME_MANAGER_CONVERT = """
    def _convert_samples_to_train_data(self, samples):
        return self.batch_builder.convert(samples)

    def _split_train_data_by_dp(self, data):
        self.batch_builder.train_parallel_config = self.train_parallel_config
        return self.batch_builder.split_by_dp(data)
"""
_BATCH_BUILDER = """
import ray

from support.host import train_data
from vime.utils.dp_schedule import build_dp_schedule
from vime.utils.misc import Box

ROW_KEYS = [key for key in train_data.VIME_ROW_KEYS]


class BatchBuilder:
    def __init__(self, args):
        self.args = args

    def convert(self, samples):
        data = train_data.convert(self.args, samples)
        return data

    def split_by_dp(self, data):
        total_lengths = [len(tokens) for tokens in data["tokens"]]
        partitions, micro, num_micro, global_sizes = build_dp_schedule(
            self.args, self.train_parallel_config, total_lengths, global_batch_size=self.args.global_batch_size,
            rollout_indices=data["rollout_ids"],
        )
        refs = []
        for rank, partition in enumerate(partitions):
            part = {"partition": partition}
            for key in ROW_KEYS:
                if key in data:
                    part[key] = [data[key][i] for i in partition]
            part["raw_reward"], part["total_lengths"] = data["raw_reward"], total_lengths
            part |= {"global_batch_sizes": global_sizes, "num_microbatches": num_micro}
            part["micro_batch_indices"] = micro[rank]
            train_data._tensorise(part)
            refs.append(Box(ray.put(part)))
        return refs
"""
_DATA_SOURCE = """
import json

from support.host.data_source import DataSource
from {host}.utils.types import Sample


class RolloutDataSourceWithBuffer:
    def __init__(self, args):
        with open(args.prompt_data) as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        rows = [dict(row, prompt=row[args.input_key], label=row.get(args.label_key)) for row in rows]
        self.source = DataSource(rows, args.n_samples_per_prompt, sample_type=Sample)

    def get_samples(self, num_samples):
        return self.source.get_samples(num_samples)
"""
_ROLLOUT = """
from dataclasses import dataclass

from support.host import rollout_loop

from ..utils.async_utils import run

_STATES = {{}}
_DOUBLE_GROUP = rollout_loop.generate_and_rm_group  # the double's loop is pointed at ours below


@dataclass
class RolloutFnTrainOutput:
    samples: list
    metrics: dict = None


class GenerateState:
    def __new__(cls, args):
        if id(args) not in _STATES:
            state = object.__new__(cls)
            state.run = rollout_loop.RolloutState.for_args(args)
            state.sampling_params = rollout_loop.sampling_params(args)
            _STATES[id(args)] = state
        return _STATES[id(args)]


async def generate_and_rm_group(args, group, sampling_params, evaluation=False):
    return await _DOUBLE_GROUP(GenerateState(args).run, group, sampling_params, evaluation)


async def generate_rollout_async(args, rollout_id, data_source):
    state = GenerateState(args).run = rollout_loop.RolloutState.for_args(args)  # reset per rollout
    rollout_loop.generate_and_rm_group = lambda _state, group, params, evaluation=False: generate_and_rm_group(
        args, group, params, evaluation
    )
    return await rollout_loop.generate_rollout_async(state, data_source)


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    output = run(generate_rollout_async(args, rollout_id, data_source))
    return RolloutFnTrainOutput(samples=output.samples, metrics=output.metrics)
"""
_COMMON = {
    "utils/types.py": "from support.host.sample import Sample  # noqa: F401\n",
    "utils/misc.py": """
from support.host.loader import load_function  # noqa: F401


class Box:
    def __init__(self, inner):
        self._inner = inner

    @property
    def inner(self):
        return self._inner
""",
    "utils/async_utils.py": """
import asyncio
import threading

_LOOP = None


def run(coro):
    global _LOOP
    if _LOOP is None:  # one loop for the process's life, in its own thread, as the hosts keep theirs
        _LOOP = asyncio.new_event_loop()
        threading.Thread(target=_LOOP.run_forever, daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _LOOP).result()
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
    "observability/rollout_data_utils.py": """
from support.host.train_data import _tensorise as tensorize_rollout_data_for_training  # noqa: F401
from support.host.train_data import validate_rollout_id_annotated  # noqa: F401
""",
    "rollout/filter_hub/base_types.py": "from support.host.filters import *  # noqa: F403\n",
    "rollout/filter_hub/dynamic_sampling_filters.py": (
        "from support.host.filters import check_reward_nonzero_std  # noqa: F401\n"
    ),
}


def _renamed_sample(old: str, new: str) -> str:
    """The double's Sample class with one field renamed (its Status and info types shared)."""
    source = inspect.getsource(double_sample.Sample)
    assert f"    {old}:" in source
    head = "from dataclasses import dataclass, field\nfrom typing import Any\nimport argparse\n\n"
    head += "from support.host.sample import PrefixCacheInfo, SpecInfo, Status\n\n\n"
    return head + source.replace(f"    {old}:", f"    {new}:")


def _files(host: str) -> dict[str, str]:
    engine = ENGINE[host]
    files = {f"{host}/{path}": text for path, text in _COMMON.items()}
    files["train.py"] = _TRAIN.format(host=host)
    # current vime's validation returns (args, ...) and fills the data source path; slime's returns nothing
    returned = "    return args, None\n" if host == "vime" else ""
    files[f"{host}/utils/arguments.py"] = _ARGUMENTS.format(host=host, validate_return=returned)
    files[f"{host}/ray/placement_group.py"] = _PLACEMENT
    files[f"{host}/rollout/{engine}_rollout.py"] = _ROLLOUT.format()
    if host == "slime":
        files["slime/rollout/data_source.py"] = _DATA_SOURCE.format(host=host)
        files["slime/ray/rollout.py"] = _MANAGER.format(
            host=host,
            builder_import="",
            engine_start=_START_UP,
            engine_start_import="",
            builder_init="",
            manager_convert=_SLIME_CONVERT.format(),
        )
    else:
        files["vime/data/data_source.py"] = _DATA_SOURCE.format(host=host)
        files["vime/data/batch_builder.py"] = _BATCH_BUILDER
        files["vime/backends/vllm_utils/deployment.py"] = _START_UP
        files["vime/ray/rollout.py"] = _MANAGER.format(
            host=host,
            builder_import="from vime.data.batch_builder import BatchBuilder\n",
            engine_start="",
            engine_start_import=_VIME_START_UP_IMPORT,
            builder_init="        self.batch_builder = BatchBuilder(args)\n",
            manager_convert=_VIME_MANAGER_CONVERT,
        )
    return files


def _convert_file(host: str) -> str:
    return "slime/ray/rollout.py" if host == "slime" else "vime/data/batch_builder.py"


def _split_file(host: str) -> str:
    return _convert_file(host)


# Each break: (file, text to find, its replacement); {convert}/{split} name the host's own file.
BREAKS: dict[str, tuple[str, str, str]] = {
    # a field renamed in the host's Sample only: our hooks' logprobs land on a stray attribute
    "sample_field_renamed": ("{host}/utils/types.py", "", ""),
    # renamed everywhere: Sample and the split's key list
    "renamed_everywhere": ("{split}", "[key for key in", "[key.replace('log_probs', 'logprobs') for key in"),
    # renamed in the split's key list only: our convert's key is never forwarded to a rank
    "split_key_renamed": ("{split}", "[key for key in", "[key.replace('log_probs', 'logprobs') for key in"),
    # the host's convert requires a key our convert does not produce
    "convert_requires_key": (
        "{convert}",
        "        return data\n",
        '        assert "response_token_counts" in data\n        return data\n',
    ),
    # the host's split reads a new key
    "split_reads_new_key": (
        "{split}",
        'total_lengths = [len(tokens) for tokens in data["tokens"]]',
        'total_lengths = [len(tokens) for tokens in data["tokens"]]\n{indent}starts = data["prompt_starts"]',
    ),
    # the rollout function the host's --rollout-function-path default names is gone
    "generate_rollout_removed": (
        "{host}/rollout/{engine}_rollout.py",
        "def generate_rollout(",
        "def _generate_rollout(",
    ),
    # train.py is gone
    "train_removed": ("train.py", "", ""),
    # build_dp_schedule's keyword renamed (an older host counts samples, not rollouts)
    "sample_counted_split": (
        "{host}/utils/dp_schedule.py",
        "*, global_batch_size, rollout_indices)",
        "*, global_batch_size, rollout_ids)",
    ),
    # load_function removed from the host's utils
    "load_function_removed": (
        "{host}/utils/misc.py",
        "from support.host.loader import load_function  # noqa: F401\n",
        "",
    ),
    # the rollout function's group task removed
    "group_task_removed": (
        "{host}/rollout/{engine}_rollout.py",
        "async def generate_and_rm_group(",
        "async def _generate_and_rm_group(",
    ),
    # log_rollout_data rounds sample.reward itself, ignoring --reward-key
    "float_rewards": (
        "{host}/ray/rollout.py",
        "metrics.log_rollout_data(rollout_id, self.args, data, output.metrics, time.time() - start)",
        "[round(sample.reward, 1) for sample in data]",
    ),
    # the host calls the custom convert with a new keyword (a hook signature that no longer matches)
    "convert_called_differently": (
        "{convert}",
        "data = train_data.convert(self.args, samples)",
        "data = load_function(self.args.custom_convert_samples_to_train_data_path)(self.args, samples, rollout_id=0)",
    ),
    # a flag our launch script passes, dropped from the host's parser
    "flag_removed": ("{host}/utils/arguments.py", "DROPPED = ()", 'DROPPED = ("--custom-reward-post-process-path",)'),
    # a flag of a host group of the launch that is not a Megatron flag, dropped from the host's parser
    "dynamic_batch_flag_removed": (
        "{host}/utils/arguments.py",
        "DROPPED = ()",
        'DROPPED = ("--use-dynamic-batch-size",)',
    ),
    # the engine start-up renamed where it is defined
    "start_up_renamed": ("{start_up}", "def start_rollout_servers(", "def launch_rollout_servers("),
    # train.py ends the process that imports it, interrupts it, leaves it with no verdict, or never returns
    "exits_at_import": ("train.py", "import ray\n", "import sys\n\nimport ray\n\nsys.exit(0)\n"),
    "interrupted_at_import": ("train.py", "import ray\n", "import ray\n\nraise KeyboardInterrupt\n"),
    "os_exit_at_import": ("train.py", "import ray\n", "import os\n\nimport ray\n\nos._exit(0)\n"),
    "hangs_at_import": (
        "train.py",
        "import ray\n",
        "import os\nimport time\n\nimport ray\n\n"
        'with open(os.path.join(os.path.dirname(__file__), "import.pid"), "w") as pid:\n'
        "    pid.write(str(os.getpid()))\n"
        "time.sleep(10**6)\n",
    ),
}


def write_fake_trainer(root: Path, host: str = "slime", incompatible: str | None = None) -> Path:
    """A checkout at `root` with a `host` package built from the double; returns `root`."""
    files = _files(host)
    if incompatible is not None:
        target, old, new = BREAKS[incompatible]
        names = {"host": host, "engine": ENGINE[host], "convert": _convert_file(host), "split": _split_file(host)}
        names["start_up"] = "slime/ray/rollout.py" if host == "slime" else "vime/backends/vllm_utils/deployment.py"
        target = target.format(**names)
        if incompatible == "train_removed":
            del files["train.py"]
        elif incompatible == "sample_field_renamed":
            files[target] = _renamed_sample("rollout_log_probs", "rollout_logprobs")
        else:
            text = files[target]
            assert old in text, (incompatible, old)
            if incompatible == "renamed_everywhere":
                files[f"{host}/utils/types.py"] = _renamed_sample("rollout_log_probs", "rollout_logprobs")
            indent = " " * 8 if host == "vime" else " " * 4
            files[target] = text.replace(old, new.replace("{indent}", indent), 1)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))
    for folder in {path.parent for path in (root / host).rglob("*.py")} | {root / host}:
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text("")
    return root
