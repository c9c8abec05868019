"""The paths the training-side scripts share (launch, conversion, and the evaluation of a converted
checkpoint), declared once: a script's settings model inherits them."""

from __future__ import annotations

from pydantic import BaseModel

from mem_agent.settings.declared import ENV_MODEL_CONFIG, setting

PATHS = "Paths (relative paths are made absolute)"


class TrainerPaths(BaseModel):
    model_config = ENV_MODEL_CONFIG

    trainer_root: str = setting("~/slime", "slime or vime checkout.", env="TRAINER_ROOT", path=True, section=PATHS)
    megatron_path: str = setting(
        "${TRAINER_ROOT}/../Megatron-LM",
        "Megatron-LM checkout, put on the workers' PYTHONPATH.",
        env="MEGATRON_PATH",
        path=True,
        section=PATHS,
    )
    models_dir: str = setting(
        "~/models", "Where the models below are by default.", env="MODELS_DIR", path=True, section=PATHS
    )
    hf_ckpt: str = setting(
        "${MODELS_DIR}/Qwen3-4B", "Qwen3-4B in Hugging Face format.", env="HF_CKPT", path=True, section=PATHS
    )
    save_path: str = setting(
        "~/mem_agent_runs/qwen3-4b-memagent",
        "Training save folder: checkpoints (iter_XXXXXXX), trajectories/ (metrics and records), Ray logs.",
        env="SAVE_PATH",
        path=True,
        section=PATHS,
    )


class TrainingPaths(TrainerPaths):
    """What a training launch reads besides: the Megatron checkpoint and the data."""

    torch_dist: str = setting(
        "${MODELS_DIR}/Qwen3-4B_torch_dist",
        "The same in Megatron torch_dist format, made by the trainer's tools/convert_hf_to_torch_dist.py.",
        env="TORCH_DIST",
        path=True,
        section=PATHS,
    )
    train_data: str = setting(
        "~/mem_agent_data/hotpotqa_train.jsonl",
        "Training JSONL from `mem-agent prepare-data`.",
        env="TRAIN_DATA",
        path=True,
        section=PATHS,
    )
