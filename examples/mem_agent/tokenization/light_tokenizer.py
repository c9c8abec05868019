"""A tokenizer read straight from `tokenizer.json` with `tokenizers`: no torch, no transformers.

Why: loading a tokenizer through `transformers.AutoTokenizer` imports torch and takes about 6 s,
which was the whole start-up cost of the evaluator and of `run_document`. Reading the same files
with the Rust `tokenizers` library takes about half a second, and the chat template is a Jinja
program we render the way transformers does (`mem_agent.tokenization.chat_template`).

The ids must be exactly transformers' ids, so `load` reads only folders for which it knows what
transformers 5 would build (Qwen2, Qwen2.5 and Qwen3 tokenizers whose files agree with each
other) and otherwise raises `UnsupportedTokenizerError` with every reason
(`mem_agent.tokenization.tokenizer_folder`).

What `LightTokenizer` offers is the part of transformers' interface the package uses:
`backend_tokenizer`, `apply_chat_template`, `decode` (with transformers' rule for
`clean_up_tokenization_spaces`), `convert_tokens_to_ids`, the special tokens and their ids, `len()`.
An argument of transformers' that it does not implement is an error, never silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mem_agent.tokenization import chat_template as templating
from mem_agent.tokenization.tokenizer_folder import special_tokens, unsupported_reasons

if TYPE_CHECKING:
    from tokenizers import Tokenizer

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


class TokenizerFileError(ValueError):
    """A tokenizer file that is not valid JSON or not a tokenizer at all."""


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

    def convert_ids_to_tokens(self, ids: int | Sequence[int], skip_special_tokens: bool = False) -> Any:
        """Token strings of `ids` (byte-level pieces such as "Ġparis"), as transformers returns them."""
        if isinstance(ids, int):
            return self._backend.id_to_token(ids)
        special = set(self.all_special_ids) if skip_special_tokens else set()
        return [self._backend.id_to_token(int(i)) for i in ids if int(i) not in special]

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
        _check_template_arguments(conversation, tools, documents, kwargs)
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
        masks = [[1] * len(one) for one in ids]
        return (
            {"input_ids": ids, "attention_mask": masks}
            if batched
            else {"input_ids": ids[0], "attention_mask": masks[0]}
        )


def _check_template_arguments(conversation: Sequence[Any], tools: Any, documents: Any, kwargs: dict[str, Any]) -> None:
    """Refuse what we do not implement (removing the harmless defaults from the template variables)."""
    asked = [name for name in UNSUPPORTED_TEMPLATE_ARGUMENTS if kwargs.pop(name, None) not in (None, False)]
    if asked:
        raise TypeError(
            f"apply_chat_template({', '.join(asked)}=...) needs transformers: set MEM_TOKENIZER=transformers"
        )
    if tools is not None and not all(isinstance(tool, dict) for tool in tools):
        raise TypeError("tools must be JSON schemas (dicts) here; functions need MEM_TOKENIZER=transformers")
    if documents is not None and not all(isinstance(document, dict) for document in documents):
        raise TypeError("Documents should be a list of dicts with 'title' and 'text' keys!")
    if not conversation:
        raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")


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


def load(folder: Path) -> LightTokenizer:
    """Read `folder`, or raise UnsupportedTokenizerError saying why transformers' ids are not assured.

    Files that cannot be read at all raise TokenizerFileError instead: no loader could use them.
    """
    from tokenizers import Tokenizer

    tokenizer_file, config_file = folder / "tokenizer.json", folder / "tokenizer_config.json"
    missing = [path.name for path in (tokenizer_file, config_file) if not path.is_file()]
    if missing:
        raise UnsupportedTokenizerError(f"{folder} has no {' or '.join(missing)}")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TokenizerFileError(f"cannot read {config_file}: {error}") from None
    try:
        backend = Tokenizer.from_file(str(tokenizer_file))
    except Exception as error:  # tokenizers raises a bare Exception for a malformed file
        raise TokenizerFileError(f"cannot read {tokenizer_file}: {error}") from None
    reasons = unsupported_reasons(folder, config, backend)
    if reasons:
        raise UnsupportedTokenizerError(f"{folder}: {'; '.join(reasons)}")
    return LightTokenizer(backend, config, templating.read_chat_templates(folder, config), str(folder))
