"""The paths the training-side scripts share (launch, conversion, and the evaluation of a converted
checkpoint), declared once: a script's settings model inherits them."""

from __future__ import annotations

from functools import partial

from pydantic import BaseModel

from mem_agent.settings.declared import ENV_MODEL_CONFIG, setting

PATHS = "Paths (relative paths are made absolute)"
_path = partial(setting, path=True, section=PATHS)


class TrainerPaths(BaseModel):
    model_config = ENV_MODEL_CONFIG

    trainer_root: str = _path("~/slime", "slime or vime checkout.", env="TRAINER_ROOT")
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


class TrainingPaths(TrainerPaths):
    """What a training launch reads besides: the Megatron checkpoint and the data."""

    torch_dist: str = _path(
        "${MODELS_DIR}/Qwen3-4B_torch_dist",
        "The same in Megatron torch_dist format, made by the trainer's tools/convert_hf_to_torch_dist.py.",
        env="TORCH_DIST",
    )
    train_data: str = _path(
        "~/mem_agent_data/hotpotqa_train.jsonl", "Training JSONL from `mem-agent prepare-data`.", env="TRAIN_DATA"
    )
