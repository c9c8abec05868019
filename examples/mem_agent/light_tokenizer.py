"""A tokenizer read straight from `tokenizer.json` with `tokenizers`: no torch, no transformers.

Why: loading a tokenizer through `transformers.AutoTokenizer` imports torch and takes about 6 s,
which is the whole start-up cost of the evaluator and of `run_document`. Reading the same files
with the Rust `tokenizers` library takes under a second, and the chat template is a Jinja program
we render the way transformers does (`mem_agent.chat_template`).

The ids must be exactly transformers' ids, so this loader reads only folders for which it knows
what transformers 5 would build, and says why it cannot read any other (`unsupported_reasons`):

- the tokenizer class is Qwen2's (`Qwen2Tokenizer`: every Qwen2, Qwen2.5 and Qwen3 model). For
  that class transformers rebuilds the tokenizer from the file's vocabulary and merges with its
  own normaliser, pre-tokeniser and decoder, so those parts of `tokenizer.json` must be the ones
  it would build;
- the named special tokens are all written in `tokenizer_config.json` (an absent one would take
  the class's default), and every special token is already an added token marked special;
- the added tokens listed in `tokenizer_config.json` (if it lists them) are those of
  `tokenizer.json`, and their ids follow the base vocabulary;
- no truncation or padding is stored in `tokenizer.json`, and no tokenizer code comes with the model.

What it offers is the part of transformers' interface the package uses: `backend_tokenizer`,
`apply_chat_template`, `decode` (with transformers' `clean_up_tokenization_spaces` rule),
`convert_tokens_to_ids`, the special tokens and their ids, `len()`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mem_agent import chat_template as templating

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
# Arguments of transformers' apply_chat_template that we do not implement; passed, they are an
# error (never silently a template variable, which is what any other keyword becomes).
UNSUPPORTED_TEMPLATE_ARGUMENTS = (
    "continue_final_message",
    "return_assistant_tokens_mask",
    "padding",
    "truncation",
    "max_length",
    "return_tensors",
    "tokenizer_kwargs",
)


class UnsupportedTokenizerError(ValueError):
    """A model folder this loader cannot read with transformers' exact ids; the message says why."""


class LightTokenizer:
    """The policy's tokenizer from `tokenizer.json` and `tokenizer_config.json` (see module doc)."""

    def __init__(self, backend: Tokenizer, config: Mapping[str, Any], templates: templating.ChatTemplates, name: str):
        self._backend = backend
        self.name_or_path = name
        self.chat_template = templates
        self.clean_up_tokenization_spaces = bool(config.get("clean_up_tokenization_spaces", False))
        self._clean_up_bpe = bool(config.get("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output"))
        self._named, self._extra = special_tokens(config)
        backend.encode_special_tokens = bool(config.get("split_special_tokens", False))

    @property
    def backend_tokenizer(self) -> Tokenizer:
        return self._backend

    @property
    def special_tokens_map(self) -> dict[str, str]:
        """Named special tokens that are set: the variables a chat template sees."""
        return {name: token for name, token in self._named.items() if token is not None}

    @property
    def all_special_tokens(self) -> list[str]:
        tokens = [token for token in self._named.values() if token is not None] + self._extra
        return list(dict.fromkeys(tokens))

    @property
    def all_special_ids(self) -> list[int]:
        return self.convert_tokens_to_ids(self.all_special_tokens)

    def __getattr__(self, name: str) -> Any:
        # bos_token, eos_token_id, ... and model-specific ones such as image_token, as in transformers.
        key = name.removesuffix("_id")
        named = self.__dict__.get("_named", {})
        if key not in named:
            raise AttributeError(f"{type(self).__name__} has no attribute {name}")
        token = named[key]
        if token is None or key == name:
            return token
        return self.convert_tokens_to_ids(token)

    def __len__(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=True)

    @property
    def vocab_size(self) -> int:
        return self._backend.get_vocab_size(with_added_tokens=False)

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> Any:
        if isinstance(tokens, str):
            found = self._backend.token_to_id(tokens)
            return self.unk_token_id if found is None else found
        return [self.convert_tokens_to_ids(token) for token in tokens]

    def decode(
        self,
        token_ids: int | Sequence[int] | Sequence[Sequence[int]] | np.ndarray,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
    ) -> Any:
        """Text of `token_ids` (or a list of texts for a batch), as transformers decodes it."""
        ids = _as_lists(token_ids)
        if ids and isinstance(ids[0], list):
            return [self._decode(one, skip_special_tokens, clean_up_tokenization_spaces) for one in ids]
        return self._decode(ids, skip_special_tokens, clean_up_tokenization_spaces)

    def _decode(self, ids: list[int], skip_special_tokens: bool, clean_up: bool | None) -> str:
        text = self._backend.decode(ids, skip_special_tokens=skip_special_tokens)
        clean_up = self.clean_up_tokenization_spaces if clean_up is None else clean_up
        # transformers skips the clean-up for BPE models (it would delete real spaces) unless forced.
        if clean_up and (type(self._backend.model).__name__ != "BPE" or self._clean_up_bpe):
            text = clean_up_tokenization(text)
        return text

    def apply_chat_template(
        self,
        conversation: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        documents: list[dict[str, Any]] | None = None,
        chat_template: str | None = None,
        add_generation_prompt: bool = False,
        tokenize: bool = True,
        return_dict: bool = True,
        **kwargs: Any,
    ) -> Any:
        """transformers' apply_chat_template for text or token ids (see the module doc for limits)."""
        asked = [name for name in UNSUPPORTED_TEMPLATE_ARGUMENTS if kwargs.pop(name, None) not in (None, False)]
        if asked:
            raise TypeError(
                f"apply_chat_template({', '.join(asked)}=...) needs transformers: set MEM_TOKENIZER=transformers"
            )
        if tools is not None and not all(isinstance(tool, dict) for tool in tools):
            raise TypeError("tools must be JSON schemas (dicts) here; functions need MEM_TOKENIZER=transformers")
        if documents is not None and not all(isinstance(document, dict) for document in documents):
            raise TypeError("Documents should be a list of dicts with 'title' and 'text' keys!")
        if isinstance(conversation, list | tuple) and not conversation:
            raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
        batched = isinstance(conversation[0], list | tuple) or hasattr(conversation[0], "messages")
        chats = [getattr(chat, "messages", chat) for chat in conversation] if batched else [conversation]
        template = templating.choose_template(self.chat_template, chat_template, tools)
        variables = {**self.special_tokens_map, **kwargs}  # a keyword wins over a special token
        texts = [
            templating.render(
                template,
                chat,
                add_generation_prompt=add_generation_prompt,
                tools=tools,
                documents=documents,
                variables=variables,
            )
            for chat in chats
        ]
        if not tokenize:
            return texts if batched else texts[0]
        ids = [encoding.ids for encoding in self._backend.encode_batch(texts, add_special_tokens=False)]
        if not return_dict:
            return ids if batched else ids[0]
        encoded = [{"input_ids": one, "attention_mask": [1] * len(one)} for one in ids]
        if not batched:
            return encoded[0]
        return {key: [one[key] for one in encoded] for key in ("input_ids", "attention_mask")}


def clean_up_tokenization(text: str) -> str:
    """transformers' clean-up of spaces before punctuation and English contractions."""
    for spaced, joined in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(spaced, joined)
    return text


def _as_lists(token_ids: Any) -> Any:
    if isinstance(token_ids, np.ndarray):
        token_ids = token_ids.tolist()
    if isinstance(token_ids, int | np.integer):
        return [int(token_ids)]
    return [_as_lists(one) if isinstance(one, list | tuple | np.ndarray) else int(one) for one in token_ids]


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
    bpe = (
        (
            type(model).__name__,
            model.dropout,
            model.unk_token,
            model.continuing_subword_prefix,
            model.end_of_word_suffix,
            model.fuse_unk,
            model.byte_fallback,
            model.ignore_merges,
        )
        if type(model).__name__ == "BPE"
        else (type(model).__name__,)
    )
    if bpe != ("BPE", None, None, "", "", False, False, False):
        reasons.append("tokenizer.json's model is not a plain byte-level BPE")
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


def load(folder: Path) -> LightTokenizer:
    """Read `folder`, or raise UnsupportedTokenizerError saying why transformers' ids are not assured."""
    from tokenizers import Tokenizer

    tokenizer_file, config_file = folder / "tokenizer.json", folder / "tokenizer_config.json"
    missing = [path.name for path in (tokenizer_file, config_file) if not path.is_file()]
    if missing:
        raise UnsupportedTokenizerError(f"{folder} has no {' or '.join(missing)}")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    backend = Tokenizer.from_file(str(tokenizer_file))
    reasons = unsupported_reasons(folder, config, backend)
    if reasons:
        raise UnsupportedTokenizerError(f"{folder}: {'; '.join(reasons)}")
    return LightTokenizer(backend, config, templating.read_chat_templates(folder, config), str(folder))
