"""A checked training launch (what launch/train.py decides), the job's runtime env, the Ray commands
it runs, and the lines a person reads before the launch starts.

The lines go to stderr: stdout carries only the commands a dry run prints. A W&B key is never
shown, only whether it is set.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.printable import printable
from mem_agent.launch.train_settings import TrainSettings
from mem_agent.settings.config import ENV_NAMES
from mem_agent.settings.report import settings_lines

SCRIPT = Path(__file__).resolve().parents[1] / "run-qwen3-4b-train.sh"
EXAMPLES = SCRIPT.parents[1]  # holds mem_agent/: on the job's PYTHONPATH after Megatron and the trainer


@dataclass(frozen=True)
class Schedule:
    """A rollout's trajectories and the optimizer updates they make."""

    trajectories: int
    global_batch_size: int
    updates: int
    lr_warmup_iters: int


@dataclass(frozen=True)
class TrainPlan:
    settings: TrainSettings
    host: str  # slime | vime
    entry: Path  # the trainer's train.py or train_async.py
    schedule: Schedule
    gpu_split: tuple[int, int] | None  # ASYNC=1: (actor GPUs per node, rollout GPUs)
    ray_job_address: str
    ray_temp_dir: str
    submission_id: str
    agent_env: dict[str, str]  # the environment the MEM_* settings are read from (MEM_PROMPTS absolute)
    runtime_env: str


def agent_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with MEM_PROMPTS absolute: the workers read it in the trainer's folder, not this one."""
    env = dict(environ)
    prompts = env.get("MEM_PROMPTS", "").strip()
    if prompts:
        env["MEM_PROMPTS"] = str(Path.cwd() / Path(prompts).expanduser())
    return env


def runtime_env_json(settings: TrainSettings, environ: Mapping[str, str]) -> str:
    """The job's Ray runtime env: PYTHONPATH (Megatron, the trainer, this package),
    CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron overlaps communication and compute with it), unbuffered
    output, and the MEM_* settings the user set. Never a secret such as WANDB_API_KEY: this JSON is on
    the `ray job submit` command line (visible in ps), in Ray's job table and its runtime_env agent's
    log; the workers inherit secrets from the environment of the `ray start` of their node."""
    env = {
        "PYTHONPATH": f"{settings.megatron_path}:{settings.trainer_root}:{EXAMPLES}",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.update({name: environ[name] for name in ENV_NAMES.values() if environ.get(name, "").strip()})
    return json.dumps({"env_vars": env})


def summary_lines(plan: TrainPlan, environ: Mapping[str, str]) -> list[str]:
    s, schedule = plan.settings, plan.schedule
    lines = [
        f"host trainer: {plan.host} ({s.trainer_root}), {plan.entry.name}, {s.nnodes} node(s) x {s.gpus_per_node}"
        " GPU(s)",
        f"schedule: {s.rollout_batch_size} prompts x {s.n_samples} = {schedule.trajectories} trajectories a rollout;"
        f" {schedule.updates} optimizer updates of {schedule.global_batch_size} trajectories ({plan.host} counts"
        f" --global-batch-size in trajectories); loss weighting: {s.loss_weighting.value}; LR warmup"
        f" {schedule.lr_warmup_iters} updates",
        "data order: shuffled each epoch (SHUFFLE=1: --rollout-shuffle)"
        if s.shuffle
        else "data order: the file's order (SHUFFLE=0, MemAgent's data.shuffle=False)",
        "agent settings (MEM_*; only the ones set travel to the workers, which default the rest the same way):",
        *(f"  {line}" for line in settings_lines(plan.agent_env)),
    ]
    if s.wandb_project:
        key = (
            "WANDB_API_KEY=<set>, inherited by the workers from the environment of ray start"
            if environ.get("WANDB_API_KEY", "").strip()
            else "WANDB_API_KEY is not set here: export it (or run wandb login) on every node before ray start"
        )
        lines.append(f"wandb: project {s.wandb_project}; {key}")
    if s.use_existing_ray:
        lines.append(f"submitting to the existing Ray cluster at {plan.ray_job_address} (no head started)")
    if s.nnodes > 1:
        lines.append(
            f"on each of the other {s.nnodes - 1} node(s), run: MASTER_ADDR={s.master_addr} RAY_PORT={s.ray_port}"
            f" GPUS_PER_NODE={s.gpus_per_node} JOIN=1 bash {SCRIPT} (the job waits until their GPUs have joined)"
        )
    lines.append(f"runtime env: {plan.runtime_env}")
    return lines


def head_command(plan: TrainPlan) -> list[str]:
    """A head of our own on this node (none with USE_EXISTING_RAY=1), its dashboard and job API on
    RAY_DASHBOARD_HOST (loopback unless set)."""
    s = plan.settings
    if s.use_existing_ray:
        return []
    return [
        *("ray", "start", "--head", "--node-ip-address", s.master_addr, "--port", str(s.ray_port)),
        *("--num-gpus", str(s.gpus_per_node), "--disable-usage-stats", "--dashboard-host", s.ray_dashboard_host),
        *("--dashboard-port", str(s.ray_dashboard_port), "--dashboard-agent-listen-port", str(s.ray_agent_port)),
        *("--ray-client-server-port", str(s.ray_client_port), "--temp-dir", plan.ray_temp_dir, "--block"),
    ]


def job_command(plan: TrainPlan, words: Sequence[str], python: str) -> list[str]:
    """`ray job submit` of the trainer's entry with `words` (the recipe's), its runtime env holding
    PYTHONPATH, CUDA_DEVICE_MAX_CONNECTIONS=1 and the MEM_* settings set, never a secret."""
    return [
        *("ray", "job", "submit", "--address", plan.ray_job_address, "--submission-id", plan.submission_id),
        *("--runtime-env-json", plan.runtime_env, "--", python, str(plan.entry), *words),
    ]


def join_command(s: TrainSettings) -> list[str]:
    """JOIN=1, on another node: join MASTER_ADDR's cluster and stay in the foreground."""
    return [
        *("ray", "start", "--address", f"{s.master_addr}:{s.ray_port}", "--num-gpus", str(s.gpus_per_node)),
        *("--disable-usage-stats", "--block"),
    ]


def print_summary(plan: TrainPlan, environ: Mapping[str, str]) -> None:
    print("\n".join(map(printable, summary_lines(plan, environ))), file=sys.stderr)


def print_join_line(settings: TrainSettings) -> None:
    print(
        printable(
            f"joining the Ray cluster at {settings.master_addr}:{settings.ray_port}; Ctrl-C (or SIGTERM) leaves it"
        ),
        file=sys.stderr,
    )
