"""GRPO training of Qwen3-4B as a MemAgent on slime or vime, through Ray (run-qwen3-4b-train.sh).

Every check of a training launch, once, then the join, the dry run's commands, or the Ray head and
the job (launch/ray_job.py), with the recipe's flags (launch/recipe.py).

The order matters for one message that is right: the settings' own values first (a bad value's
default stands in, so the checks after still run), then the rules between settings judged on
what the user set, then the derived schedule and GPU split (only from values that passed, so no
made-up value is ever reported), then what this machine has (paths, `ray`, free ports, an
existing cluster's job API: warnings in a dry run), then the MEM_* settings by the workers' own
code. JOIN=1 checks only what joining needs: nodes often share one environment file, and the
paths may not exist on the node that joins.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from mem_agent.launch.problems import Problems, port_in_use
from mem_agent.launch.ray_job import job_api_answers, run_job
from mem_agent.launch.recipe import recipe
from mem_agent.launch.script_settings import Command, read
from mem_agent.launch.train_plan import (
    Schedule,
    TrainPlan,
    agent_env,
    head_command,
    job_command,
    join_command,
    print_join_line,
    print_summary,
    runtime_env_json,
)
from mem_agent.launch.train_settings import TrainSettings
from mem_agent.settings.config import config_problems

# Ray's unix socket paths (RAY_TEMP_DIR/session_<date>_<pid>/sockets/plasma_store) must stay under
# 108 bytes; the part Ray appends takes up to 67.
RAY_TEMP_DIR_MAX = 40
JOIN_SETTINGS = ("DRY_RUN", "JOIN", "GPUS_PER_NODE", "MASTER_ADDR", "RAY_PORT")
RAY_WHY = "install the trainer's requirements (ray[default], for the job API)"


def plan_training(environ: Mapping[str, str], problems: Problems, *, machine: bool = True) -> TrainPlan:
    """Every check of a launch, into `problems`; `machine=False` leaves out what this machine has."""
    settings = read(TrainSettings, environ, problems)
    problems.dry_run = settings.dry_run
    host, entry = _host_and_entry(settings, problems, machine)
    _mode_rules(settings, host, environ, problems)
    derived = problems if not problems.found else Problems()  # values that failed make no reports
    schedule = _schedule(settings, derived)
    gpu_split = _gpu_split(settings, derived) if settings.async_mode else None
    if settings.nnodes > 1 and _is_loopback(settings.master_addr):
        derived.problem(
            f"NNODES={settings.nnodes} needs MASTER_ADDR set to this node's address that the other nodes can reach"
        )
    address = settings.ray_job_address or f"http://{settings.ray_dashboard_host}:{settings.ray_dashboard_port}"
    temp_dir = "" if settings.use_existing_ray else _ray_temp_dir(settings, environ, problems)
    agent_settings = agent_env(environ)
    if machine:
        _machine_checks(settings, address, problems)
        problems.extend(config_problems(agent_settings))
    submission = settings.submission_id or f"mem_agent_qwen3_4b_{time.strftime('%Y%m%d_%H%M%S')}_{os.getpid()}"
    runtime_env = runtime_env_json(settings, agent_settings)
    return TrainPlan(
        settings, host, entry, schedule, gpu_split, address, temp_dir, submission, agent_settings, runtime_env
    )


def _host_and_entry(settings: TrainSettings, problems: Problems, machine: bool) -> tuple[str, Path]:
    root = Path(settings.trainer_root)
    entry = root / ("train_async.py" if settings.async_mode else "train.py")
    if not machine:
        return settings.host_trainer or "slime", entry
    hint = "git clone https://github.com/THUDM/slime or vllm-project/vime"
    problems.require_path("TRAINER_ROOT", root, "slime or vime checkout", hint)
    host = settings.host_trainer or _detected_host(root, problems)
    if root.is_dir() and not entry.is_file():
        problems.missing(f"{entry} not found: TRAINER_ROOT is not a slime or vime checkout")
    for name, value, what, how in (
        ("MEGATRON_PATH", settings.megatron_path, "Megatron-LM checkout", ""),
        ("HF_CKPT", settings.hf_ckpt, "Qwen3-4B in Hugging Face format", ""),
        (
            "TORCH_DIST",
            settings.torch_dist,
            "Megatron torch_dist checkpoint",
            "make it with the trainer's tools/convert_hf_to_torch_dist.py",
        ),
        ("TRAIN_DATA", settings.train_data, "training JSONL", "make it with python -m mem_agent.prepare_data"),
        ("EVAL_DATA", settings.eval_data, "evaluation JSONL", ""),
    ):
        if value:
            problems.require_path(name, Path(value), what, how)
    return host, entry


def _detected_host(root: Path, problems: Problems) -> str:
    """What the checkout holds: slime ships the `slime/` package folder, vime the `vime/` one."""
    for name in ("vime", "slime"):
        if (root / name).is_dir():
            return name
    if root.is_dir():
        problems.problem(
            f"TRAINER_ROOT={root} has neither a slime/ nor a vime/ package folder; point it at a checkout or set"
            " HOST_TRAINER"
        )
    elif problems.dry_run:
        problems.warnings.append(
            "HOST_TRAINER is unknown without the checkout: the commands below assume slime (set HOST_TRAINER=vime"
            " for vime)"
        )
    return "slime"


def _mode_rules(settings: TrainSettings, host: str, environ: Mapping[str, str], problems: Problems) -> None:
    """Settings the chosen mode would silently ignore, judged on what the user set."""
    if not settings.eval_data:
        why = "evaluation during training is off without EVAL_DATA"
        problems.unused(("EVAL_INTERVAL", "EVAL_TEMPERATURE", "EVAL_TOP_P"), environ, why)
    if not settings.async_mode:
        problems.unused(("ACTOR_GPUS_PER_NODE", "ROLLOUT_NUM_GPUS"), environ, "they split the GPUs for ASYNC=1 only")
    if environ.get("GLOBAL_BATCH_SIZE", "").strip():
        why = (
            "GLOBAL_BATCH_SIZE sets the updates per rollout (ROLLOUT_BATCH_SIZE x N_SAMPLES / GLOBAL_BATCH_SIZE);"
            " set one of them"
        )
        problems.unused(("UPDATES_PER_ROLLOUT",), environ, why)
    if not settings.wandb_project:
        problems.unused(("WANDB_GROUP",), environ, "Weights & Biases is off without WANDB_PROJECT")
    if host == "slime":
        problems.unused(
            ("VLLM_GPU_MEMORY_UTILIZATION",), environ, "slime's rollout engines are SGLang (SGLANG_MEM_FRACTION)"
        )
    else:
        problems.unused(
            ("SGLANG_MEM_FRACTION",), environ, "vime's rollout engines are vLLM (VLLM_GPU_MEMORY_UTILIZATION)"
        )
    if settings.use_existing_ray:
        head = ("RAY_PORT", "RAY_DASHBOARD_HOST", "RAY_DASHBOARD_PORT", "RAY_AGENT_PORT", "RAY_CLIENT_PORT")
        why = "USE_EXISTING_RAY=1 starts no Ray head (RAY_JOB_ADDRESS names the cluster)"
        problems.unused((*head, "RAY_TEMP_DIR", "KEEP_RAY"), environ, why)


def _schedule(settings: TrainSettings, problems: Problems) -> Schedule:
    trajectories = settings.rollout_batch_size * settings.n_samples
    batch = settings.global_batch_size
    if batch is None and trajectories % settings.updates_per_rollout == 0:
        batch = trajectories // settings.updates_per_rollout
    elif batch is None:
        batch = trajectories  # a GLOBAL_BATCH_SIZE the user never set is never reported
        problems.problem(
            f"UPDATES_PER_ROLLOUT={settings.updates_per_rollout} does not divide the {trajectories} trajectories"
            " of a rollout (ROLLOUT_BATCH_SIZE x N_SAMPLES)"
        )
    elif trajectories % batch:  # the hosts drop the trajectories that do not fill a last update
        problems.problem(
            f"GLOBAL_BATCH_SIZE={batch} does not divide the {trajectories} trajectories of a rollout; the host would"
            " drop the rest"
        )
    updates = max(trajectories // batch, 1)
    # MemAgent's verl steps its LR scheduler once per rollout; Megatron steps it once per update.
    warmup = settings.lr_warmup_iters if settings.lr_warmup_iters is not None else 20 * updates
    return Schedule(trajectories, batch, updates, warmup)


def _gpu_split(settings: TrainSettings, problems: Problems) -> tuple[int, int] | None:
    """train_async.py cannot colocate: training and rollout get GPUs of their own."""
    gpus = settings.gpus_per_node
    if gpus < 2:
        problems.problem(
            f"ASYNC=1 needs GPUS_PER_NODE >= 2 (it is {gpus}): training and rollout each need GPUs of their own"
        )
        return None
    actor = settings.actor_gpus_per_node or gpus // 2
    if actor >= gpus:
        problems.problem(
            f"ACTOR_GPUS_PER_NODE={actor} must be below GPUS_PER_NODE={gpus}: ASYNC=1 gives the rest of each node to"
            " rollout"
        )
    return actor, settings.rollout_num_gpus or settings.nnodes * max(gpus - actor, 1)


def _ray_temp_dir(settings: TrainSettings, environ: Mapping[str, str], problems: Problems) -> str:
    folder = settings.ray_temp_dir
    if not folder:
        folder = str(Path(settings.save_path) / "ray")
        if len(folder) > RAY_TEMP_DIR_MAX:
            folder = f"{environ.get('TMPDIR') or '/tmp'}/ray_mem_agent_{os.getuid()}_{settings.ray_port}"
    if len(folder) > RAY_TEMP_DIR_MAX:
        problems.problem(
            f"RAY_TEMP_DIR={folder} is longer than {RAY_TEMP_DIR_MAX} characters: Ray's unix socket paths under it"
            " would not fit; choose a shorter folder"
        )
    return folder


def _machine_checks(settings: TrainSettings, address: str, problems: Problems) -> None:
    problems.require_command("ray", RAY_WHY)
    if problems.dry_run:
        return
    if not settings.use_existing_ray:
        # Two heads on one node collide on these ports unless told apart, and a head whose job agent
        # cannot bind refuses every job ("No available agent"): a taken port is a problem here.
        if port_in_use(settings.ray_port):
            problems.problem(
                f"port {settings.ray_port} (RAY_PORT) is already in use (another Ray cluster?): USE_EXISTING_RAY=1"
                " submits to it, or set RAY_PORT"
            )
        for name in ("RAY_DASHBOARD_PORT", "RAY_AGENT_PORT", "RAY_CLIENT_PORT"):
            port = getattr(settings, name.lower())
            if port_in_use(port):
                problems.problem(f"port {port} ({name}) is already in use (another Ray on this node?): set {name}")
    elif not job_api_answers(address):
        problems.problem(f"USE_EXISTING_RAY=1 but no Ray job API answers at RAY_JOB_ADDRESS={address}")


def _is_loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("localhost", "::1")


def _about(problem: str, names: tuple[str, ...]) -> bool:
    return problem.startswith(tuple(f"{name}{mark}" for name in names for mark in ("=", " ")))


def checked_plan(environ: Mapping[str, str], out: TextIO = sys.stderr) -> TrainPlan:
    """The plan once every check passed (JOIN=1: what joining needs); the warnings to `out`, then
    a UsageError with every problem."""
    problems = Problems(dry_run=environ.get("DRY_RUN", "").strip() == "1")
    join = environ.get("JOIN", "").strip() == "1"
    plan = plan_training(environ, problems, machine=not join)
    if join:
        problems.found = [problem for problem in problems.found if _about(problem, JOIN_SETTINGS)]
        problems.warnings = []
        problems.require_command("ray", "install the trainer's requirements on this node")
        if _is_loopback(plan.settings.master_addr):
            problems.problem(
                f"JOIN=1 needs MASTER_ADDR set to the head node's address, not {plan.settings.master_addr}"
            )
    problems.raise_if_any(out)  # warnings first, and nothing is printed for a launch that cannot start
    return plan


TRAIN = Command(
    "mem_agent.launch.train",
    TrainSettings,
    "run-qwen3-4b-train.sh",
    "GRPO training of Qwen3-4B as a MemAgent through slime (SGLang rollout) or vime (vLLM rollout): check"
    " every setting, start a Ray head on this node, submit the trainer's train.py with the mem_agent hooks,"
    " and stop only the Ray head this script started.",
    "MEM_* agent settings (docs/settings.md) are checked here and sent to every worker only when set; every"
    " one the job gets, set or defaulted, is printed before it starts. WANDB_API_KEY is read by the workers"
    " from the environment of `ray start` on each node, never put on a command line. PYTHON: the trainer's"
    " interpreter, with mem-agent installed (default: python3). Every problem is reported at once, before"
    " anything starts; a setting the chosen mode does not use is one (e.g. EVAL_INTERVAL without EVAL_DATA).",
)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] = os.environ) -> int:
    """--help; or every check, the summary, then the join, the dry run's commands or the launch."""
    return TRAIN.run(argv, environ, lambda given, problems: (checked_plan(given), given), _launch)


def _launch(planned: tuple[TrainPlan, Mapping[str, str]]) -> int:
    plan, environ = planned
    s = plan.settings
    if s.join:
        print_join_line(s)
        if not s.dry_run:  # `ray start --block` in the foreground, as this process
            sys.stdout.flush()
            os.execvp("ray", join_command(s))
        print(shlex.join(join_command(s)))
        return 0
    print_summary(plan, environ)
    groups = recipe(plan)
    head = head_command(plan)
    job = job_command(plan, [word for group in groups for word in group.words], environ.get("PYTHON") or "python3")
    if s.dry_run:
        print("\n".join(f"{group.name}=({shlex.join(group.words)})" for group in groups), file=sys.stderr)
        print("\n".join(shlex.join(command) for command in (head, job) if command))
        return 0
    return run_job(
        head,
        job,
        address=plan.ray_job_address,
        submission_id=plan.submission_id,
        save_path=Path(s.save_path),
        head_dir=Path(s.trainer_root),
        keep_head=s.keep_ray,
        start_timeout=s.ray_start_timeout,
        stop_timeout=s.ray_stop_timeout,
    )


if __name__ == "__main__":
    raise SystemExit(main())
