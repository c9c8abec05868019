"""A tiny, randomly initialised Qwen3 for running the whole pipeline on a CPU.

Built deterministically from a seed and cached by content key, so the demo, the tests and the
benchmarks all talk to the same 50 MB model and only the first run pays the ~10 s build.

A uniformly random Qwen3 almost never samples its end-of-sequence token (1 in 151936), so every
response would run to `max_tokens`; and sharpening by temperature 0.7 (MemAgent's evaluation
setting) would make any single favoured token dominate. So one residual channel is held constant
(every input embedding has 1.0 in channel 0) and only a small vocabulary reads it from the untied
output head: about 65 common English words and EOS, all with the same gain. After RMSNorm that
channel is about sqrt(hidden) wide, so this set holds ~96% of the probability at temperature 1
(~98% at 0.7), and EOS, one member of it, is sampled about 1.5% of the time at either temperature:
responses end on their own with a geometric length near 65 tokens, in word salad such as "the
city of was born river". The text is still nonsense: tests assert structure, never content.

vLLM's CPU attention needs head_dim >= 32.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from mem_agent.common.guarded_files import write_text_atomic
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3, resolve_tokenizer_path

QWEN3_VOCAB = 151936
QWEN3_EOS = 151645  # <|im_end|>
QWEN3_PAD = 151643  # <|endoftext|>
DEFAULT_CACHE_DIR = Path("~/.cache/mem_agent")
_FORMAT_VERSION = 2  # bump when the construction below changes
COMMON_WORDS = (
    "the of and to in is was for on with as by at from that this it be are an or his her their city river town "
    "born founded company film year first new he she which who where when what after before during under over "
    "between most also only other into than then there these they its our one two three four five six"
).split()


@dataclass(frozen=True)
class TinyQwen3Spec:
    seed: int = 0
    vocabulary_gain: float = 1.5
    # The rest are Qwen3Config's own arguments, passed as they are.
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 32
    max_position_embeddings: int = 40960

    def cache_key(self, tokenizer_dir: Path) -> str:
        digest = hashlib.sha256()
        digest.update(json.dumps({"v": _FORMAT_VERSION, **asdict(self)}, sort_keys=True).encode())
        digest.update((tokenizer_dir / "tokenizer.json").read_bytes())
        return digest.hexdigest()[:16]


def cache_dir() -> Path:
    return Path(os.environ.get("MEM_CACHE_DIR", str(DEFAULT_CACHE_DIR))).expanduser()


def ensure_tiny_qwen3(
    spec: TinyQwen3Spec = TinyQwen3Spec(),
    tokenizer: str = BUNDLED_QWEN3,
    root: Path | None = None,
) -> Path:
    """Return the folder of the tiny model, building it first if it is not cached."""
    tokenizer_dir = resolve_tokenizer_path(tokenizer)
    root = (root or cache_dir()).expanduser()
    target = root / f"tiny-qwen3-{spec.cache_key(tokenizer_dir)}"
    if (target / "config.json").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    # Build beside the target and rename into place: a crash mid-build never leaves a half model
    # that a later run would take for a finished one.
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        _build(spec, tokenizer_dir, staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "config.json").is_file():  # another process won the race: use its copy
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _build(spec: TinyQwen3Spec, tokenizer_dir: Path, out: Path) -> None:
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    architecture = {name: value for name, value in asdict(spec).items() if name not in ("seed", "vocabulary_gain")}
    config = Qwen3Config(
        vocab_size=QWEN3_VOCAB,
        **architecture,
        tie_word_embeddings=False,
        bos_token_id=QWEN3_PAD,
        eos_token_id=QWEN3_EOS,
        pad_token_id=QWEN3_PAD,
    )
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(spec.seed)
        model = Qwen3ForCausalLM(config)
    finally:
        torch.random.set_rng_state(generator_state)
    favoured = [*_single_token_ids(tokenizer_dir, COMMON_WORDS), QWEN3_EOS]
    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] = 1.0
        model.lm_head.weight[:, 0] = 0.0
        model.lm_head.weight[favoured, 0] = spec.vocabulary_gain
    model.to(torch.bfloat16).save_pretrained(out)
    AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True).save_pretrained(out)
    write_text_atomic(out / "mem_agent_tiny_spec.json", json.dumps(asdict(spec), indent=2) + "\n")


def _single_token_ids(tokenizer_dir: Path, words: list[str]) -> list[int]:
    """Ids of the words (with their leading space) that are one token each."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    encoded = (tokenizer.encode(" " + word, add_special_tokens=False).ids for word in words)
    return sorted({ids[0] for ids in encoded if len(ids) == 1})
