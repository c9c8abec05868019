"""Which model a run evaluated, recorded in summary.json's run facts so that two runs can be told apart.

`{"name": ..., "path": ..., "sha256": ...}`:
- name: `--model` where given (what every request sends), else the server's one model at
  `/v1/models` (vLLM serves a model under the path it was started with), else the local folder;
  None where none of these is known;
- path: the `--tokenizer` folder when it is a model folder (it holds config.json); run-eval.sh passes
  MODEL_PATH there, the folder it serves. None for the bundled tokenizer or a tokenizer-only folder;
- sha256: the folder's fingerprint (`model_fingerprint`), None without a folder.

Older summaries have no model, or `--model`'s text alone; every reader shows what is missing as
"unknown" (`describe_model`), never as a value two runs share.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mem_agent.inference.client import ClientSettings
from mem_agent.inference.served_models import served_model_name
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3

UNKNOWN = "unknown"
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
WEIGHT_SUFFIXES = (".safetensors", ".bin")
TAIL_BYTES = 1 << 20  # of each weights file: its last tensors' values, which training changes


def model_fingerprint(folder: Path) -> str | None:
    """sha256 over, in order: config.json's bytes; the weights index's bytes
    (model.safetensors.index.json, else pytorch_model.bin.index.json) where there is one; then for
    each weights file (*.safetensors, *.bin, by name) its name, its size and its last MiB. Each part
    is preceded by its name, so moving bytes between parts changes the digest.

    Why more than config.json and the index: two checkpoints of one training run have the same
    config and, sharded alike, the same index (tensor names and total size), so those alone would
    call step 99 and step 199 one model; the last MiB of each file holds weight values, which differ.
    Reading whole files (8 GB for a 4B model in bf16, tens of seconds) before every run was not worth
    it: this tells checkpoints apart, it does not prove two folders equal byte for byte.
    None when the folder has no config.json."""
    config = folder / "config.json"
    if not config.is_file():
        return None
    digest = hashlib.sha256()
    index = next((folder / name for name in WEIGHT_INDEXES if (folder / name).is_file()), None)
    for part in [config] if index is None else [config, index]:
        digest.update(f"{part.name}\0".encode())
        digest.update(part.read_bytes())
    for weights in sorted(p for p in folder.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()):
        size = weights.stat().st_size
        digest.update(f"\0{weights.name}\0{size}\0".encode())
        with weights.open("rb") as handle:
            handle.seek(max(0, size - TAIL_BYTES))
            digest.update(handle.read())
    return digest.hexdigest()


def model_folder(tokenizer: str) -> Path | None:
    """The `--tokenizer` folder when it is a model folder (config.json), else None."""
    if tokenizer == BUNDLED_QWEN3:
        return None
    folder = Path(tokenizer).expanduser().resolve()
    return folder if (folder / "config.json").is_file() else None


def model_facts(model: str | None, tokenizer: str, servers: Sequence[ClientSettings]) -> dict[str, Any]:
    """The run's model (see the module docstring); asks the first server only when `model` is None."""
    folder = model_folder(tokenizer)
    name = model or (served_model_name(servers[0]) if servers else None) or (str(folder) if folder else None)
    return {
        "name": name,
        "path": None if folder is None else str(folder),
        "sha256": None if folder is None else model_fingerprint(folder),
    }


def describe_model(value: object) -> str:
    """A run's model in one line for the views: the name and the first 12 hex digits of its
    fingerprint; "unknown" for what a run did not record (an older summary's null or no key)."""
    if isinstance(value, str) and value:  # an older run: `--model`'s text
        return value
    if not isinstance(value, dict):
        return UNKNOWN
    name, digest = value.get("name") or value.get("path"), value.get("sha256")
    if not isinstance(name, str) or not name:
        return UNKNOWN
    return f"{name} (sha256 {digest[:12]})" if isinstance(digest, str) and digest else f"{name} (no fingerprint)"
