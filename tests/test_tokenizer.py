"""The tokenizer and the one encode everything uses: transformers' own ids, compact arrays, bounded
memory on huge documents, and a model folder that cannot build the prompts is a one-line error.

Every case runs on the real Qwen3 tokenizer (the bundled one, its template in
tokenizer_config.json) and, where the folder layout matters, on the tiny model's folder (saved by
transformers: `chat_template.jinja`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem_agent.serving.tiny_model import ensure_tiny_qwen3
from mem_agent.tokenization.tokenizer import (
    BUNDLED_QWEN3,
    TOKEN_DTYPE,
    TokenizerNotFoundError,
    bundled_qwen3_dir,
    encode,
    load_tokenizer,
)

SPECIAL_TEXTS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|vision_pad|>"]
PLAIN_PIECES = ["\n", "\n\n", " ", "  ", ".", ",", "Document 7:", "Paris", "東京", "ü", "🙂", "'s", "\t", "42", "{{"]
TEXT_PIECES = st.sampled_from([*SPECIAL_TEXTS, *PLAIN_PIECES])
TEXTS = st.lists(TEXT_PIECES | st.text(max_size=8), max_size=80).map("".join)
FOLDERS = ("bundled", "tiny")


def _whole(tokenizer, text: str) -> list[int]:
    return tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids


def _folder(name: str) -> Path:
    return bundled_qwen3_dir() if name == "bundled" else ensure_tiny_qwen3()


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.integers(1, 40))
def test_segmented_encoding_gives_exactly_the_ids_of_one_encode(tokenizer, text, segment_chars):
    assert encode(tokenizer, text, segment_chars=segment_chars).tolist() == _whole(tokenizer, text)


@pytest.mark.parametrize("folder", FOLDERS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_encode_gives_the_ids_of_transformers_own_call(folder, text):
    """The encode goes to the Rust backend for speed; its ids are those of `tokenizer(text)`."""
    tokenizer = load_tokenizer(_folder(folder))
    assert encode(tokenizer, text).tolist() == tokenizer(text, add_special_tokens=False)["input_ids"]


def test_whole_documents_and_special_token_strings_encode_identically(tokenizer, qa_rows):
    text = "\n\n".join(
        f"Document {i}:\n{title}\n{''.join(sentences)}"
        for i, row in enumerate(qa_rows)
        for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True)
    )
    ids = encode(tokenizer, text, segment_chars=2000)
    assert ids.dtype == TOKEN_DTYPE and ids.tolist() == _whole(tokenizer, text)
    assert ids.tolist() == tokenizer(text, add_special_tokens=False)["input_ids"]
    specials = "".join(f"{token} x{token}\n" for token in SPECIAL_TEXTS)
    assert encode(tokenizer, specials).tolist() == tokenizer(specials, add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in encode(tokenizer, specials), "a special token's text"


def test_a_folder_that_splits_special_tokens_is_encoded_as_transformers_does(tmp_path):
    """split_special_tokens reaches the backend the encode calls: "<|im_end|>" is then plain text."""
    tokenizer = load_tokenizer(_variant(tmp_path, {"split_special_tokens": True}))
    ids = encode(tokenizer, "a<|im_end|>b").tolist()
    assert ids == tokenizer("a<|im_end|>b", add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") not in ids


def test_the_bundled_tokenizer_is_the_real_qwen3_one_loaded_once(tokenizer):
    assert (bundled_qwen3_dir() / "tokenizer.json").is_file()
    assert tokenizer.convert_tokens_to_ids(["<|im_end|>", "<think>", "</think>"]) == [151645, 151667, 151668]
    assert len(tokenizer) == 151669
    assert load_tokenizer(BUNDLED_QWEN3) is load_tokenizer(BUNDLED_QWEN3), "loaded once per process"


def test_a_missing_tokenizer_folder_is_a_clear_error(tmp_path):
    with pytest.raises(TokenizerNotFoundError, match="is not a folder"):
        load_tokenizer(tmp_path / "nowhere")


def test_empty_text_is_an_empty_array(tokenizer):
    assert encode(tokenizer, "").shape == (0,) and encode(tokenizer, "").dtype == np.int32


# --- model folders of our own making: what a command says about one it cannot use ---------------------------


def _variant(tmp_path: Path, config: dict | None = None, drop=()) -> Path:
    """A copy of the bundled folder (tokenizer files linked) with its tokenizer_config.json changed."""
    source = bundled_qwen3_dir()
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("tokenizer.json", "vocab.json", "merges.txt"):
        (folder / name).symlink_to(source / name)
    settings_ = {**json.loads((source / "tokenizer_config.json").read_text()), **(config or {})}
    for key in drop:
        settings_.pop(key)
    (folder / "tokenizer_config.json").write_text(json.dumps(settings_))
    return folder


def _command(tmp_path: Path, command: str, folder: Path) -> int:
    from mem_agent import eval_ruler_hqa, run_document

    argv = ["--url", "http://127.0.0.1:9", "--tokenizer", str(folder)]
    if command == "run_document":
        return run_document.main([*argv, "--question", "q?", "--document", "-"])
    data = tmp_path / "eval_1.json"
    data.write_text(json.dumps([{"input": "q?", "answers": ["a"], "context": "Some text."}]))
    return eval_ruler_hqa.main([*argv, "--data", str(data), "--output-dir", str(tmp_path / "out")])


# (tokenizer_config.json changes, keys dropped, words of the template's own the message must carry)
BROKEN_TEMPLATES = {
    "missing": ({}, ("chat_template",), None),
    "syntax error": ({"chat_template": "{% if messages %}never closed"}, (), None),
    "drops the message": (
        {"chat_template": "{% for m in messages %}[{{ m.role }}]{% endfor %}<|im_start|>assistant\n"},
        (),
        None,
    ),
    "raises": ({"chat_template": "{{ raise_exception('this model takes no user turns') }}"}, (), "no user turns"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_TEMPLATES))
@pytest.mark.parametrize("command", ["run_document", "eval_ruler_hqa"])
def test_a_chat_template_that_cannot_build_the_prompts_is_a_one_line_error(tmp_path, capsys, case, command):
    """A folder without a chat template, or with one that fails or drops the message, is a user's
    mistake: exit 2 and one line naming the folder, never a traceback."""
    config, drop, words = BROKEN_TEMPLATES[case]
    folder = _variant(tmp_path, config, drop)
    code = _command(tmp_path, command, folder)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: --tokenizer {folder}: ")
    assert words is None or words in err


@pytest.mark.parametrize("command", ["run_document", "eval_ruler_hqa"])
def test_an_unreadable_tokenizer_file_is_a_one_line_error_of_the_command(tmp_path, capsys, command):
    folder = _variant(tmp_path)
    (folder / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(TokenizerNotFoundError, match=re.escape(str(folder))):
        load_tokenizer(folder)
    assert _command(tmp_path, command, folder) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(folder) in err


@pytest.mark.parametrize("command", ["run_document", "eval_ruler_hqa"])
def test_the_server_address_is_checked_before_the_tokenizer_is_loaded(tmp_path, capsys, command):
    from mem_agent import eval_ruler_hqa, run_document

    argv = ["--url", "ftp://127.0.0.1:9", "--tokenizer", str(tmp_path / "no-model-here")]
    if command == "run_document":
        code = run_document.main([*argv, "--question", "q?", "--document", "-"])
    else:
        code = eval_ruler_hqa.main([*argv, "--data", str(tmp_path / "eval_1.json")])
    assert code == 2
    assert capsys.readouterr().err == "error: --url ftp://127.0.0.1:9 must start with http:// or https://\n"
