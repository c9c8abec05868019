"""The launch the preflight checks, as data: `PRINT_FLAGS=1 bash run-qwen3-4b-train.sh`.

The preflight must parse exactly what the launch script submits, so it asks the script: with
PRINT_FLAGS=1 the script checks its settings as a dry run does, starts nothing and prints the
launch as NUL-terminated fields (the format tag, `entry PATH`, then `group NAME OWNER COUNT
WORD...` per flag array in launch order). Each array holds the flags of one owner: `megatron`
(Megatron-LM's parser, which the preflight stands in for: host_args.py builds that stand-in from
these groups), `host` (the trainer's own parser, which runs for real) or `user` (words the user
appended, EXTRA_ARGS and EXTRA_BACKEND_ARGS, owner unknown). Only the scale and the paths come
from the preflight (one rollout of a few prompts, its scratch files); every other knob, the
user's EXTRA_ARGS and MEM_* settings included, is the user's environment, as in a real launch.

The script checks that the paths it is given exist. Two of them name what only a GPU run has,
and the preflight stands in for them with scratch folders (listed in its report): the
Megatron-LM checkout (put on the job's PYTHONPATH) and the torch_dist checkpoint (`--ref-load`),
which holds the marker file a Megatron checkpoint folder has, so the host's own validation of
`--ref-load` passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.guarded_files import write_text_atomic
from mem_agent.common.usage import UsageError
from mem_agent.preflight.failures import CheckFailed

LAUNCH_SCRIPT = Path(__file__).resolve().parents[1] / "run-qwen3-4b-train.sh"
FORMAT = "mem_agent-launch-flags/1"
OWNERS = ("megatron", "host", "user")
CHECKPOINT_MARKER = "latest_checkpointed_iteration.txt"  # what a Megatron checkpoint folder holds
SCRIPT_TIMEOUT_S = 120


class LaunchDataError(ValueError):
    """The launch script's PRINT_FLAGS output is not the launch as data."""


@dataclass(frozen=True)
class Group:
    """One flag array of the launch: its name, the parser that owns its flags, its words."""

    name: str
    owner: str
    words: tuple[str, ...]

    def flags(self) -> list[str]:
        return [word for word in self.words if word.startswith("--")]


@dataclass(frozen=True)
class Launch:
    """What the launch script submits: the entry point it runs and its flag groups in order."""

    entry: Path
    groups: tuple[Group, ...]
    stand_ins: tuple[str, ...] = ()

    def words(self) -> list[str]:
        return [word for group in self.groups for word in group.words]

    def owned_by(self, owner: str) -> list[Group]:
        return [group for group in self.groups if group.owner == owner]


def parse_launch_data(data: bytes) -> tuple[Path, list[Group]]:
    """The entry and the groups of PRINT_FLAGS output (see the module docstring)."""
    fields = data.decode().split("\0")
    if fields[-1] != "":
        raise LaunchDataError("the launch data does not end with a NUL byte")
    fields.pop()
    if fields[:1] != [FORMAT] or fields[1:2] != ["entry"] or len(fields) < 3:
        raise LaunchDataError(f"the launch data does not start with {FORMAT} and the entry")
    entry, index, groups = Path(fields[2]), 3, []
    while index < len(fields):
        head = fields[index : index + 4]
        if len(head) < 4 or head[0] != "group" or head[2] not in OWNERS or not head[3].isdigit():
            raise LaunchDataError(f"field {index} of the launch data is not `group NAME OWNER COUNT`: {head}")
        count = int(head[3])
        words = fields[index + 4 : index + 4 + count]
        if len(words) < count:
            raise LaunchDataError(f"group {head[1]} announces {count} words and has {len(words)}")
        groups.append(Group(head[1], head[2], tuple(words)))
        index += 4 + count
    return entry, groups


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


def read_launch(
    root: Path,
    host: str,
    *,
    hf_checkpoint: str,
    prompts: Path,
    workdir: Path,
    scale: Scale,
    script: Path = LAUNCH_SCRIPT,
) -> Launch:
    """The launch script's flags for `host` at `root`, with the preflight's scale and scratch paths."""
    env = {
        **os.environ,
        **_scratch(workdir),
        "PRINT_FLAGS": "1",
        "PYTHON": os.environ.get("PYTHON") or sys.executable,  # the script's checks import mem_agent
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
    for name in ("UPDATES_PER_ROLLOUT", "ASYNC", "USE_EXISTING_RAY", "JOIN", "DRY_RUN"):
        env.pop(name, None)  # the preflight's own schedule: one rollout, GLOBAL_BATCH_SIZE set above
    try:
        result = subprocess.run(["bash", str(script)], env=env, capture_output=True, timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CheckFailed("launch", str(script), f"PRINT_FLAGS=1 did not finish within {SCRIPT_TIMEOUT_S} s") from None
    if result.returncode != 0:
        lines = [line for line in result.stderr.decode(errors="replace").splitlines() if line.strip()]
        raise UsageError(f"the launch script refused these settings: {' '.join(lines)[-600:]}")
    try:
        entry, groups = parse_launch_data(result.stdout)
    except (LaunchDataError, UnicodeDecodeError) as error:
        raise CheckFailed("launch", str(script), f"PRINT_FLAGS=1 printed no launch data: {error}") from None
    stand_ins = (
        "the Megatron-LM checkout (an empty scratch folder on the job's PYTHONPATH)",
        f"the torch_dist checkpoint --ref-load (a scratch folder holding {CHECKPOINT_MARKER})",
    )
    return Launch(entry, tuple(groups), stand_ins)
