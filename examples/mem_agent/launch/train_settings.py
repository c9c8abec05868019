"""The training side's settings, declared once: the paths the launch and the conversion share
(`TrainerPaths`), and run-qwen3-4b-train.sh's (the script has no default of its own, PYTHON aside);
the rules between them are launch/train.py's."""

from __future__ import annotations

from enum import StrEnum
from functools import partial
from pathlib import Path

from pydantic import BaseModel

from mem_agent.common.usage import Problems
from mem_agent.settings.declared import ENV_MODEL_CONFIG, Switch, env_name, setting

PATHS = "Paths (relative paths are made absolute)"
_path = partial(setting, path=True, section=PATHS)
RECIPE = "Recipe (MemAgent's GRPO; docs/training.md's recipe table gives each value's source)"
_recipe = partial(setting, section=RECIPE)
_eval = partial(setting, section="Evaluation during training (off unless EVAL_DATA is set)")
_cluster = partial(setting, section="Cluster")
_port = partial(_cluster, values="a port number (1 to 65535)", ge=1, le=65535)
_perf = partial(setting, section="Performance")
_logging = partial(setting, section="Logging and extras")
POSITIVE = {"values": "a positive integer", "gt": 0}  # an optional count: its default is a rule of train.py


class LossWeighting(StrEnum):
    TOKEN = "token"  # --calculate-per-token-loss: MemAgent's token mean over an update
    TRAJECTORY = "trajectory"  # the hosts' default reducer: every trajectory weighs the same


class TrainerPaths(BaseModel):
    model_config = ENV_MODEL_CONFIG

    trainer_root: str = _path(
        "~/slime",
        "slime or vime checkout (git clone https://github.com/THUDM/slime or vllm-project/vime).",
        env="TRAINER_ROOT",
    )
    megatron_path: str = _path(
        "${TRAINER_ROOT}/../Megatron-LM", "Megatron-LM checkout, put on the workers' PYTHONPATH.", env="MEGATRON_PATH"
    )
    models_dir: str = _path("~/models", "Where the models below are by default.", env="MODELS_DIR")
    hf_ckpt: str = _path("${MODELS_DIR}/Qwen3-4B", "Qwen3-4B in Hugging Face format.", env="HF_CKPT")
    save_path: str = _path(
        "~/mem_agent_runs/qwen3-4b-memagent",
        "Training save folder: checkpoints (iter_XXXXXXX), trajectories/ (metrics and records), Ray logs.",
        env="SAVE_PATH",
    )

    def require(self, problems: Problems, *names: str, inside: str) -> None:
        """Each path of `names` that is set exists (a missing one is named with what its help says it
        holds), and TRAINER_ROOT holds `inside`, as a slime or vime checkout does."""
        for name in names:
            info = type(self).model_fields[name]
            if value := getattr(self, name):
                problems.require_path(env_name(info), Path(value), str(info.description).split(";")[0].rstrip("."))
        root = Path(self.trainer_root)
        if root.exists() and not (root / inside).is_file():
            problems.missing(f"{root / inside} not found: TRAINER_ROOT is not a slime or vime checkout")


class TrainSettings(TrainerPaths):
    torch_dist: str = _path(
        "${MODELS_DIR}/Qwen3-4B_torch_dist",
        "Qwen3-4B in Megatron torch_dist format, made by the trainer's tools/convert_hf_to_torch_dist.py.",
        env="TORCH_DIST",
    )
    train_data: str = _path(
        "~/mem_agent_data/hotpotqa_train.jsonl", "Training JSONL from `mem-agent prepare-data`.", env="TRAIN_DATA"
    )
    host_trainer: str = setting(
        "",
        "slime or vime (default: detected: TRAINER_ROOT has a slime/ or vime/ package folder).",
        env="HOST_TRAINER",
        values="slime or vime",
        section=PATHS,
        pattern="^(slime|vime)$",
    )
    num_rollout: int = _recipe(100, "Rollouts to train.", env="NUM_ROLLOUT", gt=0)
    rollout_batch_size: int = _recipe(128, "Prompts per rollout.", env="ROLLOUT_BATCH_SIZE", gt=0)
    n_samples: int = _recipe(16, "Trajectories per prompt.", env="N_SAMPLES", gt=0)
    updates_per_rollout: int = _recipe(
        16,
        "Optimizer updates per rollout (MemAgent: 128 prompts in mini-batches of 8).",
        env="UPDATES_PER_ROLLOUT",
        gt=0,
    )
    global_batch_size: int | None = _recipe(
        None,
        "Trajectories per optimizer update (default: ROLLOUT_BATCH_SIZE x N_SAMPLES / UPDATES_PER_ROLLOUT). slime"
        " and vime count it in trajectories, never in turn rows, and keep a trajectory's turns in one update.",
        env="GLOBAL_BATCH_SIZE",
        **POSITIVE,
    )
    loss_weighting: LossWeighting = _recipe(
        LossWeighting.TOKEN,
        "token: every response token of an update weighs the same (MemAgent's token mean,"
        " --calculate-per-token-loss); trajectory: every trajectory weighs the same (the hosts' default).",
        env="LOSS_WEIGHTING",
    )
    grpo_std_norm: Switch = _recipe(
        False,
        "1 divides advantages by the group's std (the hosts' default); MemAgent's recipe does not.",
        env="GRPO_STD_NORM",
    )
    lr: float = _recipe(1e-6, "Learning rate, constant after the warmup.", env="LR", gt=0)
    lr_warmup_iters: int | None = _recipe(
        None,
        "LR warmup in optimizer updates (default: 20 x the updates per rollout: MemAgent warms up over 20 rollouts).",
        env="LR_WARMUP_ITERS",
        values="an integer >= 0",
        ge=0,
    )
    weight_decay: float = _recipe(0.01, "AdamW weight decay (Megatron's adam decouples it).", env="WEIGHT_DECAY", ge=0)
    adam_beta1: float = _recipe(0.9, "Adam beta1.", env="ADAM_BETA1", gt=0, le=1)
    adam_beta2: float = _recipe(0.999, "Adam beta2.", env="ADAM_BETA2", gt=0, le=1)
    kl_coef: float = _recipe(0.001, "KL loss coefficient (low_var_kl).", env="KL_COEF", ge=0)
    eps_clip: float = _recipe(0.2, "PPO clip, low side.", env="EPS_CLIP", gt=0)
    eps_clip_high: float = _recipe(0.2, "PPO clip, high side.", env="EPS_CLIP_HIGH", gt=0)
    eps_clip_c: float = _recipe(3.0, "Dual clip.", env="EPS_CLIP_C", gt=1)
    save_interval: int = _recipe(50, "Rollouts between checkpoints.", env="SAVE_INTERVAL", gt=0)
    temperature: float = _recipe(1.0, "Rollout sampling temperature.", env="TEMPERATURE", gt=0)
    rollout_max_response_len: int = _recipe(
        1024,
        "The host's response budget; each turn uses MEM_MAX_MEMORY or MEM_MAX_FINAL.",
        env="ROLLOUT_MAX_RESPONSE_LEN",
        gt=0,
    )
    shuffle: Switch = _recipe(
        False, "0: prompts in file order (MemAgent's data.shuffle=False); 1: --rollout-shuffle.", env="SHUFFLE"
    )
    eval_data: str = _eval(
        "", "Evaluation JSONL from mem_agent.prepare_data; set, it turns evaluation on.", env="EVAL_DATA", path=True
    )
    eval_interval: int = _eval(20, "Rollouts between evaluations.", env="EVAL_INTERVAL", gt=0)
    eval_temperature: float = _eval(
        0.7, "Evaluation temperature (MemAgent's evaluation).", env="EVAL_TEMPERATURE", ge=0
    )
    eval_top_p: float = _eval(0.95, "Evaluation top_p.", env="EVAL_TOP_P", gt=0, le=1)
    nnodes: int = _cluster(1, "Nodes.", env="NNODES", gt=0)
    gpus_per_node: int = _cluster(8, "GPUs per node.", env="GPUS_PER_NODE", gt=0)
    master_addr: str = _cluster("127.0.0.1", "The head node's address (set it when NNODES > 1).", env="MASTER_ADDR")
    ray_port: int = _port(6379, "The head's GCS port.", env="RAY_PORT")
    ray_dashboard_host: str = _cluster("127.0.0.1", "Where the dashboard and job API listen.", env="RAY_DASHBOARD_HOST")
    ray_dashboard_port: int = _port(8265, "Dashboard and job API port.", env="RAY_DASHBOARD_PORT")
    ray_agent_port: int = _port(52365, "The dashboard agent's port.", env="RAY_AGENT_PORT")
    ray_client_port: int = _port(
        10001, "Ray client port (a second head on one node needs all four ports set apart).", env="RAY_CLIENT_PORT"
    )
    ray_job_address: str = _cluster(
        "",
        "Where jobs are submitted (default: http://RAY_DASHBOARD_HOST:RAY_DASHBOARD_PORT).",
        env="RAY_JOB_ADDRESS",
        values="a URL",
    )
    ray_temp_dir: str = _cluster(
        "",
        "The head's Ray folder (default: SAVE_PATH/ray, or a short folder under TMPDIR when that is too long"
        " for Ray's unix sockets).",
        env="RAY_TEMP_DIR",
        path=True,
    )
    join: Switch = _cluster(False, "On another node: join MASTER_ADDR's cluster and wait (Ctrl-C leaves).", env="JOIN")
    use_existing_ray: Switch = _cluster(
        False, "Submit to a cluster you started yourself; start no head.", env="USE_EXISTING_RAY"
    )
    keep_ray: Switch = _cluster(False, "Leave the head this script started running when it ends.", env="KEEP_RAY")
    ray_start_timeout: int = _cluster(
        180, "Seconds for the head's job API to answer (and to submit).", env="RAY_START_TIMEOUT", gt=0
    )
    ray_stop_timeout: int = _cluster(60, "Seconds the head has to stop before SIGKILL.", env="RAY_STOP_TIMEOUT", gt=0)
    submission_id: str = _cluster(
        "", "The Ray job's id (default: mem_agent_qwen3_4b_<date>_<pid>).", env="SUBMISSION_ID"
    )
    async_mode: Switch = _cluster(
        False, "train_async.py, not colocated: ACTOR_GPUS_PER_NODE train, ROLLOUT_NUM_GPUS generate.", env="ASYNC"
    )
    actor_gpus_per_node: int | None = _cluster(
        None, "ASYNC=1: training GPUs per node (default: GPUS_PER_NODE / 2).", env="ACTOR_GPUS_PER_NODE", **POSITIVE
    )
    rollout_num_gpus: int | None = _cluster(
        None, "ASYNC=1: rollout GPUs (default: the rest of all nodes' GPUs).", env="ROLLOUT_NUM_GPUS", **POSITIVE
    )
    tp: int = _perf(2, "Tensor parallel size.", env="TP", gt=0)
    pp: int = _perf(1, "Pipeline parallel size.", env="PP", gt=0)
    cp: int = _perf(1, "Context parallel size.", env="CP", gt=0)
    max_tokens_per_gpu: int = _perf(9216, "Tokens per GPU micro-batch.", env="MAX_TOKENS_PER_GPU", gt=0)
    rollout_gpus_per_engine: int = _perf(1, "GPUs per rollout engine.", env="ROLLOUT_GPUS_PER_ENGINE", gt=0)
    server_concurrency: int = _perf(64, "Requests in flight per engine.", env="SERVER_CONCURRENCY", gt=0)
    sglang_mem_fraction: float = _perf(
        0.7, "slime: SGLang's static memory fraction.", env="SGLANG_MEM_FRACTION", gt=0, le=1
    )
    vllm_gpu_memory_utilization: float = _perf(
        0.7, "vime: vLLM's GPU memory utilization.", env="VLLM_GPU_MEMORY_UTILIZATION", gt=0, le=1
    )
    wandb_project: str = _logging("", "Turns on Weights & Biases.", env="WANDB_PROJECT")
    wandb_group: str = _logging("qwen3-4b-memagent", "The W&B group.", env="WANDB_GROUP")
    extra_backend_args: str = _logging(
        "", "More trainer flags (the engine's), appended as words.", env="EXTRA_BACKEND_ARGS"
    )
    extra_args: str = _logging("", "More trainer flags, appended last as words.", env="EXTRA_ARGS")
    dry_run: Switch = _logging(
        False,
        "Print every command, start nothing; what this machine lacks (ray, the checkouts) is a warning.",
        env="DRY_RUN",
    )
