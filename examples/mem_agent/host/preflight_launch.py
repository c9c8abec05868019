"""The trainer flags our launch script passes, word for word, for the preflight's small step.

The preflight must parse exactly what `run-qwen3-4b-train.sh` submits, so it asks the script
itself: a dry run (DRY_RUN=1 starts nothing) prints the `ray job submit ... -- python train.py
FLAGS` line, and the flags are the words after train.py. Only the scale and the paths come from
the preflight (one rollout of a few prompts, its scratch files); every other knob, the user's
EXTRA_ARGS and MEM_* settings included, is the user's environment, as in a real launch.

The script checks that the paths it is given exist. Two of them name what only a GPU run has,
and the preflight stands in for them with scratch folders (listed in its report): the
Megatron-LM checkout (put on the job's PYTHONPATH) and the torch_dist checkpoint (`--ref-load`),
which holds the marker file a Megatron checkpoint folder has, so the host's own validation of
`--ref-load` passes.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.usage import UsageError

LAUNCH_SCRIPT = Path(__file__).resolve().parents[1] / "run-qwen3-4b-train.sh"
CHECKPOINT_MARKER = "latest_checkpointed_iteration.txt"  # what a Megatron checkpoint folder holds


@dataclass(frozen=True)
class LaunchFlags:
    """What the launch script submits: the entry point it runs and the flags it passes."""

    entry: Path
    flags: list[str]
    stand_ins: tuple[str, ...]


def _scratch(workdir: Path) -> dict[str, str]:
    megatron = workdir / "Megatron-LM"
    torch_dist = workdir / "torch_dist"
    megatron.mkdir(exist_ok=True)
    torch_dist.mkdir(exist_ok=True)
    (torch_dist / CHECKPOINT_MARKER).write_text("release\n")
    return {"MEGATRON_PATH": str(megatron), "TORCH_DIST": str(torch_dist), "SAVE_PATH": str(workdir / "save")}


def launch_flags(
    root: Path, host: str, *, hf_checkpoint: str, prompts: Path, workdir: Path, scale: dict[str, int], extra: list[str]
) -> LaunchFlags:
    """The launch script's flags for `host` at `root`, with the preflight's scale and scratch paths."""
    env = {
        **os.environ,
        **_scratch(workdir),
        "DRY_RUN": "1",
        "PYTHON": os.environ.get("PYTHON") or sys.executable,  # the script's checks import mem_agent
        "TRAINER_ROOT": str(root),
        "HOST_TRAINER": host,
        "HF_CKPT": hf_checkpoint,
        "TRAIN_DATA": str(prompts),
        "NUM_ROLLOUT": "1",
        "ROLLOUT_BATCH_SIZE": str(scale["prompts"]),
        "N_SAMPLES": str(scale["samples"]),
        "GLOBAL_BATCH_SIZE": str(scale["global_batch_size"]),
        "GPUS_PER_NODE": str(scale["gpus"]),
        "EXTRA_ARGS": " ".join([os.environ.get("EXTRA_ARGS", ""), *map(shlex.quote, extra)]).strip(),
    }
    for name in ("UPDATES_PER_ROLLOUT", "ASYNC", "USE_EXISTING_RAY", "JOIN"):
        env.pop(name, None)  # the preflight's own schedule: one rollout, GLOBAL_BATCH_SIZE set above
    result = subprocess.run(["bash", str(LAUNCH_SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raise UsageError(f"the launch script refused these settings: {' '.join(lines)[-600:]}")
    submit = next((line for line in result.stdout.splitlines() if line.startswith("ray job submit")), None)
    if submit is None:
        raise UsageError(f"{LAUNCH_SCRIPT.name} printed no `ray job submit` line in its dry run")
    words = shlex.split(submit)
    command = words[words.index("--") + 1 :]
    entry = next(index for index, word in enumerate(command) if word.endswith(".py"))
    stand_ins = (
        "the Megatron-LM checkout (an empty scratch folder on the job's PYTHONPATH)",
        f"the torch_dist checkpoint --ref-load (a scratch folder holding {CHECKPOINT_MARKER})",
    )
    return LaunchFlags(Path(command[entry]), command[entry + 1 :], stand_ins)
