"""What a model folder's tokenizer files say, and whether transformers would read them as we do.

transformers 5 does not simply load `tokenizer.json`: `AutoTokenizer` picks a tokenizer class,
and for Qwen2's class rebuilds the tokenizer from the file's vocabulary and merges with its own
normaliser, pre-tokeniser and decoder; it takes special tokens from `tokenizer_config.json` (an
absent one from the class's defaults) and added tokens from `added_tokens_decoder` there (or, where
absent, from legacy files or `tokenizer.json`). `unsupported_reasons` lists every way such a folder
could make transformers' tokenizer differ from `tokenizer.json` read as it is; the light loader
reads a folder only when the list is empty.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer

NAMED_SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
QWEN2_CLASSES = frozenset({"Qwen2Tokenizer", "Qwen2TokenizerFast"})
# The pre-tokenisation pattern of every Qwen2/Qwen3 tokenizer.json, which transformers' Qwen2
# tokenizer class also builds into the tokenizer it makes from the vocabulary.
QWEN2_SPLIT_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def _token_text(value: Any) -> str | None:
    """A special token as tokenizer_config.json writes it: a string, or an AddedToken object."""
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


def special_tokens(config: Mapping[str, Any]) -> tuple[dict[str, str | None], list[str]]:
    """Named special tokens (the standard seven, then model-specific `*_token` entries) and extras."""
    named: dict[str, str | None] = {name: _token_text(config.get(name)) for name in NAMED_SPECIAL_TOKENS}
    specific = {
        key: _token_text(value)
        for key, value in config.items()
        if key.endswith("_token") and key not in named and _token_text(value) is not None
    }
    extra = config.get("extra_special_tokens") or config.get("additional_special_tokens") or []
    if isinstance(extra, dict):
        specific.update({key: _token_text(value) for key, value in extra.items()})
        extra = []
    named.update(specific)
    return named, [text for text in (_token_text(value) for value in extra) if text is not None]


def unsupported_reasons(folder: Path, config: Mapping[str, Any], backend: Tokenizer) -> list[str]:
    """Why transformers might build a different tokenizer from this folder; empty when it cannot."""
    reasons = []
    tokenizer_class = config.get("tokenizer_class")
    if tokenizer_class not in QWEN2_CLASSES:
        reasons.append(f"tokenizer class {tokenizer_class!r} (this loader reads Qwen2Tokenizer only)")
    if "auto_map" in config:
        reasons.append("the tokenizer comes with its own code (auto_map)")
    model_type = _model_type(folder)
    if model_type is not None and not model_type.startswith("qwen"):
        reasons.append(f"model type {model_type!r} is not a Qwen model")
    absent = [name for name in ("bos_token", "eos_token", "unk_token", "pad_token") if name not in config]
    if absent:
        reasons.append(f"tokenizer_config.json leaves {', '.join(absent)} to the class default")
    if backend.truncation is not None or backend.padding is not None:
        reasons.append("tokenizer.json stores truncation or padding")
    reasons += _added_token_mismatches(folder, config, backend)
    if tokenizer_class in QWEN2_CLASSES:
        reasons += _qwen2_part_mismatches(config, backend)
    return reasons


def _model_type(folder: Path) -> str | None:
    path = folder / "config.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return "unreadable config.json"


def _added_token_mismatches(folder: Path, config: Mapping[str, Any], backend: Tokenizer) -> list[str]:
    """The added tokens transformers would give the tokenizer must be tokenizer.json's own.

    It takes them from `added_tokens_decoder` in tokenizer_config.json, or, where that is absent
    (transformers 5 does not write it), from legacy files if present, else from tokenizer.json;
    the Qwen2 class adds them in id order after the base vocabulary, so their ids must follow it.
    """
    fields = ("content", "special", "lstrip", "rstrip", "normalized", "single_word")
    added = backend.get_added_tokens_decoder()
    have = {index: {field: getattr(token, field) for field in fields} for index, token in added.items()}
    reasons = []
    listed = config.get("added_tokens_decoder")
    if isinstance(listed, dict):
        want = {int(index): {field: token.get(field, False) for field in fields} for index, token in listed.items()}
        if want != have:
            differ = sorted(index for index in set(want) | set(have) if want.get(index) != have.get(index))
            reasons.append(f"the added tokens of tokenizer_config.json and tokenizer.json differ (ids {differ[:5]})")
    else:
        legacy = [name for name in ("special_tokens_map.json", "added_tokens.json") if (folder / name).is_file()]
        if legacy:
            reasons.append(f"{' and '.join(legacy)} would be merged in (legacy files)")
    base = backend.get_vocab_size(with_added_tokens=False)
    if sorted(have) != list(range(base, base + len(have))):
        reasons.append("the added tokens' ids do not follow the base vocabulary")
    specials = {token["content"] for token in have.values() if token["special"]}
    named, extra = special_tokens(config)
    missing = [token for token in [*named.values(), *extra] if token is not None and token not in specials]
    if missing:
        reasons.append(f"special tokens {missing[:5]} are not added tokens marked special in tokenizer.json")
    return reasons


def _qwen2_part_mismatches(config: Mapping[str, Any], backend: Tokenizer) -> list[str]:
    """The parts transformers' Qwen2 class builds itself must be the ones tokenizer.json holds."""
    add_prefix_space = bool(config.get("add_prefix_space") or False)
    split = {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT_PATTERN}, "behavior": "Isolated", "invert": False}
    byte_level = {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "use_regex": False}
    expected_pre = {"type": "Sequence", "pretokenizers": [split, byte_level]}
    model = backend.model
    reasons = []
    if _state(backend.normalizer) != {"type": "NFC"}:
        reasons.append("tokenizer.json's normaliser is not NFC")
    if _state(backend.pre_tokenizer, drop=("trim_offsets",)) != expected_pre:
        reasons.append("tokenizer.json's pre-tokeniser is not Qwen2's")
    if (_state(backend.decoder) or {}).get("type") != "ByteLevel":
        reasons.append("tokenizer.json's decoder is not byte-level")
    if type(model).__name__ != "BPE":
        reasons.append(f"tokenizer.json's model is {type(model).__name__}, not BPE")
    else:
        flags = (model.dropout, model.unk_token, model.continuing_subword_prefix, model.end_of_word_suffix)
        flags += (model.fuse_unk, model.byte_fallback, model.ignore_merges)
        if flags != (None, None, "", "", False, False, False):
            reasons.append("tokenizer.json's BPE settings are not Qwen2's")
    return reasons


def _state(part: Any, drop: tuple[str, ...] = ()) -> Any:
    """A tokenizer component as JSON, without fields that change offsets only."""
    if part is None:
        return None

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key not in drop}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return strip(json.loads(part.__getstate__()))
