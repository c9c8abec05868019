"""The launch the preflight checks: the training launch's own checks and recipe, called in-process.

The settings are checked as a dry run of run-qwen3-4b-train.sh checks them (launch/train.py); the
recipe (launch/recipe.py) gives the flag groups in launch order, each with its owner (`megatron`:
host_args.py stands in for Megatron-LM's parser with these; `host`: the trainer's own parser runs
for real; `user`: EXTRA_ARGS and EXTRA_BACKEND_ARGS). Only the scale and the paths are the
preflight's (one rollout of a few prompts, its scratch files); every other knob, EXTRA_ARGS and
MEM_* included, is the user's environment, as in a real launch. Two paths name what only a GPU
run has, and scratch folders stand in for them (listed in the report): the Megatron-LM checkout
(on the job's PYTHONPATH) and the torch_dist checkpoint (`--ref-load`), which holds the marker
file of a Megatron checkpoint folder, so the host's own validation of `--ref-load` passes.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.guarded_files import write_text_atomic
from mem_agent.common.printable import printable
from mem_agent.common.usage import UsageError
from mem_agent.launch.recipe import Group, recipe
from mem_agent.launch.train import checked_plan

CHECKPOINT_MARKER = "latest_checkpointed_iteration.txt"  # what a Megatron checkpoint folder holds


@dataclass(frozen=True)
class Launch:
    """What the launch submits: the entry point it runs and its flag groups in order."""

    entry: Path
    groups: tuple[Group, ...]
    stand_ins: tuple[str, ...] = ()

    def words(self) -> list[str]:
        return [word for group in self.groups for word in group.words]

    def owned_by(self, owner: str) -> list[Group]:
        return [group for group in self.groups if group.owner == owner]


def _scratch(workdir: Path) -> dict[str, str]:
    megatron = workdir / "Megatron-LM"
    torch_dist = workdir / "torch_dist"
    megatron.mkdir(exist_ok=True)
    write_text_atomic(torch_dist / CHECKPOINT_MARKER, "release\n", root=workdir)
    return {"MEGATRON_PATH": str(megatron), "TORCH_DIST": str(torch_dist), "SAVE_PATH": str(workdir / "save")}


@dataclass(frozen=True)
class Scale:
    """The preflight's small launch: prompts, samples per prompt, trajectories per update, ranks."""

    prompts: int
    samples: int
    global_batch_size: int
    gpus: int


def read_launch(root: Path, host: str, *, hf_checkpoint: str, prompts: Path, workdir: Path, scale: Scale) -> Launch:
    """The launch's flags for `host` at `root`, with the preflight's scale and scratch paths."""
    env = {
        **os.environ,
        **_scratch(workdir),
        "DRY_RUN": "1",  # what this machine lacks for a real run (ray, GPUs) is no problem here
        "TRAINER_ROOT": str(root),
        "HOST_TRAINER": host,
        "HF_CKPT": hf_checkpoint,
        "TRAIN_DATA": str(prompts),
        "NUM_ROLLOUT": "1",
        "ROLLOUT_BATCH_SIZE": str(scale.prompts),
        "N_SAMPLES": str(scale.samples),
        "GLOBAL_BATCH_SIZE": str(scale.global_batch_size),
        "GPUS_PER_NODE": str(scale.gpus),
    }
    for name in ("UPDATES_PER_ROLLOUT", "ASYNC", "USE_EXISTING_RAY", "JOIN"):
        env.pop(name, None)  # the preflight's own schedule: one rollout, GLOBAL_BATCH_SIZE set above
    try:
        plan = checked_plan(env, out=io.StringIO())  # a dry run's warnings are about a real run
    except UsageError as refused:
        raise UsageError(f"the launch refuses these settings: {'; '.join(map(printable, refused.problems))}") from None
    stand_ins = (
        "the Megatron-LM checkout (an empty scratch folder on the job's PYTHONPATH)",
        f"the torch_dist checkpoint --ref-load (a scratch folder holding {CHECKPOINT_MARKER})",
    )
    return Launch(plan.entry, recipe(plan), stand_ins)
