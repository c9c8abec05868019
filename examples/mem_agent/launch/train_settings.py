"""run-qwen3-4b-train.sh's settings, declared once: every knob of the training launch with its variable,
default, bounds, help line and section. The script has no default of its own (PYTHON aside); the
mode rules and derived values are in launch/train.py.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from mem_agent.launch.trainer_paths import PATHS, TrainingPaths
from mem_agent.settings.declared import Switch, setting

RECIPE = "Recipe (MemAgent's GRPO; docs/training.md's recipe table gives each value's source)"
EVALUATION = "Evaluation during training (off unless EVAL_DATA is set)"
CLUSTER = "Cluster"
PERFORMANCE = "Performance"
LOGGING = "Logging and extras"
PORT = "a port number (1 to 65535)"


class LossWeighting(StrEnum):
    TOKEN = "token"  # --calculate-per-token-loss: MemAgent's token mean over an update
    TRAJECTORY = "trajectory"  # the hosts' default reducer: every trajectory weighs the same


def _count(default: int, doc: str, env: str, section: str, **bounds: Any) -> Any:
    bounds = bounds or {"gt": 0}
    return setting(default, doc, env=env, section=section, **bounds)


def _port(default: int, doc: str, env: str) -> Any:
    return setting(default, doc, env=env, section=CLUSTER, values=PORT, ge=1, le=65535)


class TrainSettings(TrainingPaths):
    host_trainer: str = setting(
        "",
        "slime or vime (default: detected: TRAINER_ROOT has a slime/ or vime/ package folder).",
        env="HOST_TRAINER",
        values="slime or vime",
        section=PATHS,
        pattern="^(slime|vime)$",
    )
    # ---- the recipe
    num_rollout: int = _count(100, "Rollouts to train.", "NUM_ROLLOUT", RECIPE)
    rollout_batch_size: int = _count(128, "Prompts per rollout.", "ROLLOUT_BATCH_SIZE", RECIPE)
    n_samples: int = _count(16, "Trajectories per prompt.", "N_SAMPLES", RECIPE)
    updates_per_rollout: int = _count(
        16, "Optimizer updates per rollout (MemAgent: 128 prompts in mini-batches of 8).", "UPDATES_PER_ROLLOUT", RECIPE
    )
    global_batch_size: int | None = setting(
        None,
        "Trajectories per optimizer update (default: ROLLOUT_BATCH_SIZE x N_SAMPLES / UPDATES_PER_ROLLOUT). slime"
        " and vime count it in trajectories, never in turn rows, and keep a trajectory's turns in one update.",
        env="GLOBAL_BATCH_SIZE",
        values="a positive integer",
        section=RECIPE,
        gt=0,
    )
    loss_weighting: LossWeighting = setting(
        LossWeighting.TOKEN,
        "token: every response token of an update weighs the same (MemAgent's token mean,"
        " --calculate-per-token-loss); trajectory: every trajectory weighs the same (the hosts' default).",
        env="LOSS_WEIGHTING",
        section=RECIPE,
    )
    grpo_std_norm: Switch = setting(
        False,
        "1 divides advantages by the group's std (the hosts' default); MemAgent's recipe does not.",
        env="GRPO_STD_NORM",
        section=RECIPE,
    )
    lr: float = setting(1e-6, "Learning rate, constant after the warmup.", env="LR", section=RECIPE, gt=0)
    lr_warmup_iters: int | None = setting(
        None,
        "LR warmup in optimizer updates (default: 20 x the updates per rollout: MemAgent warms up over 20 rollouts).",
        env="LR_WARMUP_ITERS",
        values="an integer >= 0",
        section=RECIPE,
        ge=0,
    )
    weight_decay: float = setting(
        0.01, "AdamW weight decay (Megatron's adam decouples it).", env="WEIGHT_DECAY", section=RECIPE, ge=0
    )
    adam_beta1: float = setting(0.9, "Adam beta1.", env="ADAM_BETA1", section=RECIPE, gt=0, le=1)
    adam_beta2: float = setting(0.999, "Adam beta2.", env="ADAM_BETA2", section=RECIPE, gt=0, le=1)
    kl_coef: float = setting(0.001, "KL loss coefficient (low_var_kl).", env="KL_COEF", section=RECIPE, ge=0)
    eps_clip: float = setting(0.2, "PPO clip, low side.", env="EPS_CLIP", section=RECIPE, gt=0)
    eps_clip_high: float = setting(0.2, "PPO clip, high side.", env="EPS_CLIP_HIGH", section=RECIPE, gt=0)
    eps_clip_c: float = setting(3.0, "Dual clip.", env="EPS_CLIP_C", section=RECIPE, gt=1)
    save_interval: int = _count(50, "Rollouts between checkpoints.", "SAVE_INTERVAL", RECIPE)
    temperature: float = setting(1.0, "Rollout sampling temperature.", env="TEMPERATURE", section=RECIPE, gt=0)
    rollout_max_response_len: int = _count(
        1024,
        "The host's response budget; each turn uses MEM_MAX_MEMORY or MEM_MAX_FINAL.",
        "ROLLOUT_MAX_RESPONSE_LEN",
        RECIPE,
    )
    shuffle: Switch = setting(
        False,
        "0: prompts in file order (MemAgent's data.shuffle=False); 1: --rollout-shuffle.",
        env="SHUFFLE",
        section=RECIPE,
    )
    # ---- evaluation during training
    eval_data: str = setting(
        "",
        "JSONL from mem_agent.prepare_data; set, it turns evaluation on.",
        env="EVAL_DATA",
        path=True,
        section=EVALUATION,
    )
    eval_interval: int = _count(20, "Rollouts between evaluations.", "EVAL_INTERVAL", EVALUATION)
    eval_temperature: float = setting(
        0.7, "Evaluation temperature (MemAgent's evaluation).", env="EVAL_TEMPERATURE", section=EVALUATION, ge=0
    )
    eval_top_p: float = setting(0.95, "Evaluation top_p.", env="EVAL_TOP_P", section=EVALUATION, gt=0, le=1)
    # ---- the cluster
    nnodes: int = _count(1, "Nodes.", "NNODES", CLUSTER)
    gpus_per_node: int = _count(8, "GPUs per node.", "GPUS_PER_NODE", CLUSTER)
    master_addr: str = setting(
        "127.0.0.1", "The head node's address (set it when NNODES > 1).", env="MASTER_ADDR", section=CLUSTER
    )
    ray_port: int = _port(6379, "The head's GCS port.", "RAY_PORT")
    ray_dashboard_host: str = setting(
        "127.0.0.1", "Where the dashboard and job API listen.", env="RAY_DASHBOARD_HOST", section=CLUSTER
    )
    ray_dashboard_port: int = _port(8265, "Dashboard and job API port.", "RAY_DASHBOARD_PORT")
    ray_agent_port: int = _port(52365, "The dashboard agent's port.", "RAY_AGENT_PORT")
    ray_client_port: int = _port(
        10001, "Ray client port (a second head on one node needs all four ports set apart).", "RAY_CLIENT_PORT"
    )
    ray_job_address: str = setting(
        "",
        "Where jobs are submitted (default: http://RAY_DASHBOARD_HOST:RAY_DASHBOARD_PORT).",
        env="RAY_JOB_ADDRESS",
        values="a URL",
        section=CLUSTER,
    )
    ray_temp_dir: str = setting(
        "",
        "The head's Ray folder (default: SAVE_PATH/ray, or a short folder under TMPDIR when that is too long"
        " for Ray's unix sockets).",
        env="RAY_TEMP_DIR",
        path=True,
        section=CLUSTER,
    )
    join: Switch = setting(
        False, "On another node: join MASTER_ADDR's cluster and wait (Ctrl-C leaves).", env="JOIN", section=CLUSTER
    )
    use_existing_ray: Switch = setting(
        False, "Submit to a cluster you started yourself; start no head.", env="USE_EXISTING_RAY", section=CLUSTER
    )
    keep_ray: Switch = setting(
        False, "Leave the head this script started running when it ends.", env="KEEP_RAY", section=CLUSTER
    )
    ray_start_timeout: int = _count(
        180, "Seconds for the head's job API to answer (and to submit).", "RAY_START_TIMEOUT", CLUSTER
    )
    ray_stop_timeout: int = _count(60, "Seconds the head has to stop before SIGKILL.", "RAY_STOP_TIMEOUT", CLUSTER)
    submission_id: str = setting(
        "", "The Ray job's id (default: mem_agent_qwen3_4b_<date>_<pid>).", env="SUBMISSION_ID", section=CLUSTER
    )
    async_mode: Switch = setting(
        False,
        "train_async.py, not colocated: ACTOR_GPUS_PER_NODE train, ROLLOUT_NUM_GPUS generate.",
        env="ASYNC",
        section=CLUSTER,
    )
    actor_gpus_per_node: int | None = setting(
        None,
        "ASYNC=1: training GPUs per node (default: GPUS_PER_NODE / 2).",
        env="ACTOR_GPUS_PER_NODE",
        values="a positive integer",
        section=CLUSTER,
        gt=0,
    )
    rollout_num_gpus: int | None = setting(
        None,
        "ASYNC=1: rollout GPUs (default: the rest of all nodes' GPUs).",
        env="ROLLOUT_NUM_GPUS",
        values="a positive integer",
        section=CLUSTER,
        gt=0,
    )
    # ---- performance
    tp: int = _count(2, "Tensor parallel size.", "TP", PERFORMANCE)
    pp: int = _count(1, "Pipeline parallel size.", "PP", PERFORMANCE)
    cp: int = _count(1, "Context parallel size.", "CP", PERFORMANCE)
    max_tokens_per_gpu: int = _count(9216, "Tokens per GPU micro-batch.", "MAX_TOKENS_PER_GPU", PERFORMANCE)
    rollout_gpus_per_engine: int = _count(1, "GPUs per rollout engine.", "ROLLOUT_GPUS_PER_ENGINE", PERFORMANCE)
    server_concurrency: int = _count(64, "Requests in flight per engine.", "SERVER_CONCURRENCY", PERFORMANCE)
    sglang_mem_fraction: float = setting(
        0.7, "slime: SGLang's static memory fraction.", env="SGLANG_MEM_FRACTION", section=PERFORMANCE, gt=0, le=1
    )
    vllm_gpu_memory_utilization: float = setting(
        0.7,
        "vime: vLLM's GPU memory utilization.",
        env="VLLM_GPU_MEMORY_UTILIZATION",
        section=PERFORMANCE,
        gt=0,
        le=1,
    )
    # ---- logging and extras
    wandb_project: str = setting("", "Turns on Weights & Biases.", env="WANDB_PROJECT", section=LOGGING)
    wandb_group: str = setting("qwen3-4b-memagent", "The W&B group.", env="WANDB_GROUP", section=LOGGING)
    extra_backend_args: str = setting(
        "", "More trainer flags (the engine's), appended as words.", env="EXTRA_BACKEND_ARGS", section=LOGGING
    )
    extra_args: str = setting("", "More trainer flags, appended last as words.", env="EXTRA_ARGS", section=LOGGING)
    dry_run: Switch = setting(
        False,
        "Print every command, start nothing; what this machine lacks (ray, the checkouts) is a warning.",
        env="DRY_RUN",
        section=LOGGING,
    )
