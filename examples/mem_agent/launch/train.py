"""GRPO training of Qwen3-4B as a MemAgent on slime or vime, through Ray (run-qwen3-4b-train.sh).

Every check of a launch, once (in docs/settings.md's order; a value that fails its own check stands in
as its default, and nothing is derived from it), then the join, the dry run's commands, or the Ray head
and the job. JOIN=1 checks only what joining needs: nodes often share one environment file, whose paths
the joining node may lack. Stdout carries only the commands a dry run prints."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from mem_agent.common.printable import printable, shell_line
from mem_agent.common.usage import Problems
from mem_agent.launch.ray_job import run_job
from mem_agent.launch.recipe import Schedule, TrainPlan, recipe
from mem_agent.launch.train_settings import TrainSettings
from mem_agent.serving.processes import answers, port_in_use
from mem_agent.settings.command import Command, read
from mem_agent.settings.config import ENV_NAMES, config_problems
from mem_agent.settings.report import settings_lines

SCRIPT = Path(__file__).resolve().parents[1] / "run-qwen3-4b-train.sh"
EXAMPLES = SCRIPT.parents[1]  # holds mem_agent/: on the job's PYTHONPATH after Megatron and the trainer
# Ray's unix socket paths (RAY_TEMP_DIR/session_<date>_<pid>/sockets/plasma_store) must stay under
# 108 bytes; the part Ray appends takes up to 67.
RAY_TEMP_DIR_MAX = 40
JOIN_SETTINGS = ("DRY_RUN", "JOIN", "GPUS_PER_NODE", "MASTER_ADDR", "RAY_PORT")
HEAD_PORTS = "RAY_PORT RAY_DASHBOARD_PORT RAY_AGENT_PORT RAY_CLIENT_PORT"  # the ports the Ray head binds


def plan_training(environ: Mapping[str, str], problems: Problems, *, machine: bool = True) -> TrainPlan:
    """Every check of a launch, into `problems`; `machine=False` (and JOIN=1) leaves out what this machine has."""
    s = read(TrainSettings, environ, problems)
    machine = machine and not s.join  # checked_plan checks what joining needs
    entry = Path(s.trainer_root) / ("train_async.py" if s.async_mode else "train.py")
    host = _checked_paths(s, entry, problems) if machine else s.host_trainer or "slime"
    _mode_rules(s, host, environ, problems)
    derived = problems if not problems.found else Problems()  # values that failed make no reports
    schedule = _schedule(s, derived)
    gpu_split = _gpu_split(s, derived) if s.async_mode else None
    if (s.join or s.nnodes > 1) and (s.master_addr.startswith("127.") or s.master_addr in ("localhost", "::1")):
        needs = "JOIN=1" if s.join else f"NNODES={s.nnodes}"
        problems.problem(f"MASTER_ADDR={s.master_addr} is loopback: {needs} needs the head's address all nodes reach")
    address = s.ray_job_address or f"http://{s.ray_dashboard_host}:{s.ray_dashboard_port}"
    temp_dir = "" if s.use_existing_ray else _ray_temp_dir(s, environ, problems)
    agent_settings = dict(environ)  # MEM_PROMPTS absolute: the workers read it in the trainer's folder
    if prompts := environ.get("MEM_PROMPTS", "").strip():
        agent_settings["MEM_PROMPTS"] = str(Path.cwd() / Path(prompts).expanduser())
    if machine:
        _machine_checks(s, address, problems)
        problems.extend(config_problems(agent_settings))
    submission = s.submission_id or f"mem_agent_qwen3_4b_{time.strftime('%Y%m%d_%H%M%S')}_{os.getpid()}"
    runtime_env = runtime_env_json(s, agent_settings)
    return TrainPlan(s, host, entry, schedule, gpu_split, address, temp_dir, submission, agent_settings, runtime_env)


def _checked_paths(s: TrainSettings, entry: Path, problems: Problems) -> str:
    """Every path the launch reads; the host: HOST_TRAINER, or the checkout's `slime/` or `vime/` package."""
    paths = ("trainer_root", "megatron_path", "hf_ckpt", "torch_dist", "train_data", "eval_data")
    s.require(problems, *paths, inside=entry.name)
    root = entry.parent
    if s.host_trainer or (found := [name for name in ("vime", "slime") if (root / name).is_dir()]):
        return s.host_trainer or found[0]
    if root.is_dir():
        problems.problem(
            f"TRAINER_ROOT={root} has neither a slime/ nor a vime/ package folder; point it at a"
            " checkout or set HOST_TRAINER"
        )
    elif problems.dry_run:
        problems.warnings.append(
            "HOST_TRAINER is unknown without the checkout: the commands below assume slime"
            " (set HOST_TRAINER=vime for vime)"
        )
    return "slime"


def _mode_rules(s: TrainSettings, host: str, environ: Mapping[str, str], problems: Problems) -> None:
    """Settings the chosen mode would silently ignore, judged on what the user set."""
    batch_set = bool(environ.get("GLOBAL_BATCH_SIZE", "").strip())
    for ignored, names, why in (
        (
            not s.eval_data,
            "EVAL_INTERVAL EVAL_TEMPERATURE EVAL_TOP_P",
            "evaluation during training is off without EVAL_DATA",
        ),
        (not s.async_mode, "ACTOR_GPUS_PER_NODE ROLLOUT_NUM_GPUS", "they split the GPUs for ASYNC=1 only"),
        (
            batch_set,
            "UPDATES_PER_ROLLOUT",
            "GLOBAL_BATCH_SIZE sets the updates per rollout (ROLLOUT_BATCH_SIZE x"
            " N_SAMPLES / GLOBAL_BATCH_SIZE); set one of them",
        ),
        (not s.wandb_project, "WANDB_GROUP", "Weights & Biases is off without WANDB_PROJECT"),
        (host == "slime", "VLLM_GPU_MEMORY_UTILIZATION", "slime's rollout engines are SGLang (SGLANG_MEM_FRACTION)"),
        (host != "slime", "SGLANG_MEM_FRACTION", "vime's rollout engines are vLLM (VLLM_GPU_MEMORY_UTILIZATION)"),
        (
            s.use_existing_ray,
            f"{HEAD_PORTS} RAY_DASHBOARD_HOST RAY_TEMP_DIR KEEP_RAY",
            "USE_EXISTING_RAY=1 starts no Ray head (RAY_JOB_ADDRESS names the cluster)",
        ),
    ):
        if ignored:
            problems.unused(names.split(), environ, why)


def _schedule(s: TrainSettings, problems: Problems) -> Schedule:
    trajectories = s.rollout_batch_size * s.n_samples
    batch = s.global_batch_size or trajectories // s.updates_per_rollout
    if s.global_batch_size is None and trajectories % s.updates_per_rollout:
        batch = trajectories  # a GLOBAL_BATCH_SIZE the user never set is never reported
        problems.problem(
            f"UPDATES_PER_ROLLOUT={s.updates_per_rollout} does not divide the {trajectories}"
            " trajectories of a rollout (ROLLOUT_BATCH_SIZE x N_SAMPLES)"
        )
    elif trajectories % batch:  # the hosts drop the trajectories that do not fill a last update
        problems.problem(
            f"GLOBAL_BATCH_SIZE={batch} does not divide the {trajectories} trajectories of a rollout;"
            " the host would drop the rest"
        )
    updates = max(trajectories // batch, 1)
    # MemAgent's verl steps its LR scheduler once per rollout; Megatron steps it once per update.
    warmup = s.lr_warmup_iters if s.lr_warmup_iters is not None else 20 * updates
    return Schedule(trajectories, batch, updates, warmup)


def _gpu_split(s: TrainSettings, problems: Problems) -> tuple[int, int] | None:
    """train_async.py cannot colocate: training and rollout get GPUs of their own."""
    gpus = s.gpus_per_node
    if gpus < 2:
        problems.problem(
            f"ASYNC=1 needs GPUS_PER_NODE >= 2 (it is {gpus}): training and rollout need GPUs of their own"
        )
        return None
    actor = s.actor_gpus_per_node or gpus // 2
    if actor >= gpus:
        problems.problem(
            f"ACTOR_GPUS_PER_NODE={actor} must be below GPUS_PER_NODE={gpus}: ASYNC=1 gives the rest of"
            " each node to rollout"
        )
    return actor, s.rollout_num_gpus or s.nnodes * max(gpus - actor, 1)


def _ray_temp_dir(s: TrainSettings, environ: Mapping[str, str], problems: Problems) -> str:
    folder = s.ray_temp_dir or str(Path(s.save_path) / "ray")
    if not s.ray_temp_dir and len(folder) > RAY_TEMP_DIR_MAX:
        folder = f"{environ.get('TMPDIR') or '/tmp'}/ray_mem_agent_{os.getuid()}_{s.ray_port}"
    if len(folder) > RAY_TEMP_DIR_MAX:
        problems.problem(
            f"RAY_TEMP_DIR={folder} is longer than {RAY_TEMP_DIR_MAX} characters: Ray's unix socket"
            " paths under it would not fit; choose a shorter folder"
        )
    return folder


def _machine_checks(s: TrainSettings, address: str, problems: Problems) -> None:
    problems.require_command("ray", "install the trainer's requirements (ray[default], for the job API)")
    if problems.dry_run:
        return
    if s.use_existing_ray:
        if not answers(f"{address}/api/version", 10.0):
            problems.problem(f"USE_EXISTING_RAY=1 but no Ray job API answers at RAY_JOB_ADDRESS={address}")
        return
    # Two heads on one node collide on these ports unless told apart, and a head whose job agent
    # cannot bind refuses every job ("No available agent"): a taken port is a problem here.
    for name in HEAD_PORTS.split():
        if port_in_use(port := getattr(s, name.lower())):
            why = "cluster?): USE_EXISTING_RAY=1 submits to it, or" if name == "RAY_PORT" else "on this node?):"
            problems.problem(f"port {port} ({name}) is already in use (another Ray {why} set {name}")


def checked_plan(environ: Mapping[str, str], out: TextIO = sys.stderr) -> TrainPlan:
    """The plan once every check passed (JOIN=1: what joining needs); the warnings to `out`, then
    a UsageError with every problem."""
    problems = Problems()  # a dry run once DRY_RUN is read
    if (plan := plan_training(environ, problems)).settings.join:
        problems.found = [problem for problem in problems.found if re.split("[= ]", problem)[0] in JOIN_SETTINGS]
        problems.require_command("ray", "install the trainer's requirements on this node")
    problems.raise_if_any(out)  # warnings first, and nothing is printed for a launch that cannot start
    return plan


def runtime_env_json(s: TrainSettings, environ: Mapping[str, str]) -> str:
    """The job's Ray runtime env: PYTHONPATH, CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron overlaps
    communication and compute with it), unbuffered output, the MEM_* settings set. Never a secret: it is
    on a command line (ps), in Ray's job table and logs; the workers inherit secrets from `ray start`."""
    env = {"PYTHONPATH": f"{s.megatron_path}:{s.trainer_root}:{EXAMPLES}", "CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    env["PYTHONUNBUFFERED"] = "1"
    env.update({name: environ[name] for name in ENV_NAMES.values() if environ.get(name, "").strip()})
    return json.dumps({"env_vars": env})


def _summary(plan: TrainPlan, environ: Mapping[str, str]) -> list[str]:
    """What a person reads before the launch starts; a W&B key is never shown, only whether it is set."""
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
    return [*lines, f"runtime env: {plan.runtime_env}"]


TRAIN = Command(
    "mem_agent.launch.train",
    TrainSettings,
    "run-qwen3-4b-train.sh",
    "GRPO training of Qwen3-4B as a MemAgent through slime (SGLang rollout) or vime (vLLM rollout): check"
    " every setting, start a Ray head on this node, submit the trainer's train.py with the mem_agent hooks,"
    " and stop only the Ray head this script started.",
    "MEM_* agent settings (docs/settings.md) travel to the workers only when set; WANDB_API_KEY only in the"
    " environment of `ray start` on each node. PYTHON: the trainer's interpreter, with mem-agent installed"
    " (default: python3). docs/training.md tells the launch step by step.",
)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ) -> int:
    """--help; or every check, the summary, then the join, the dry run's commands or the launch."""
    return TRAIN.run(argv, environ, lambda given, problems: (checked_plan(given), given), _launch)


def _launch(planned: tuple[TrainPlan, Mapping[str, str]]) -> int:
    plan, environ = planned
    s = plan.settings
    if s.join:  # on another node: join MASTER_ADDR's cluster, `ray start --block` as this process
        print(
            f"joining the Ray cluster at {printable(s.master_addr)}:{s.ray_port}; Ctrl-C (or SIGTERM) leaves it",
            file=sys.stderr,
        )
        join = [
            "ray",
            "start",
            "--address",
            f"{s.master_addr}:{s.ray_port}",
            "--num-gpus",
            str(s.gpus_per_node),
            "--disable-usage-stats",
            "--block",
        ]
        if not s.dry_run:
            sys.stdout.flush()
            os.execvp("ray", join)
        print(shell_line(join))
        return 0
    print("\n".join(map(printable, _summary(plan, environ))), file=sys.stderr)
    groups = recipe(plan)
    head = (
        []
        if s.use_existing_ray
        else [  # its dashboard and job API on RAY_DASHBOARD_HOST (loopback unless set)
            *("ray", "start", "--head", "--node-ip-address", s.master_addr, "--port", str(s.ray_port)),
            *("--num-gpus", str(s.gpus_per_node), "--disable-usage-stats", "--dashboard-host", s.ray_dashboard_host),
            *("--dashboard-port", str(s.ray_dashboard_port), "--dashboard-agent-listen-port", str(s.ray_agent_port)),
            *("--ray-client-server-port", str(s.ray_client_port), "--temp-dir", plan.ray_temp_dir, "--block"),
        ]
    )
    job = [
        *("ray", "job", "submit", "--address", plan.ray_job_address, "--submission-id", plan.submission_id),
        *("--runtime-env-json", plan.runtime_env, "--", environ.get("PYTHON") or "python3", str(plan.entry)),
        *(word for group in groups for word in group.words),
    ]
    if s.dry_run:
        print("\n".join(f"{group.name}=({shell_line(group.words)})" for group in groups), file=sys.stderr)
        print("\n".join(shell_line(command) for command in (head, job) if command))
        return 0
    return run_job(head, job, s, plan.ray_job_address, plan.submission_id)


if __name__ == "__main__":
    raise SystemExit(main())
