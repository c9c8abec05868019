"""The one encode everything uses: exact ids, compact arrays, bounded memory on huge documents."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem_agent.tokenization.tokenizer import (
    TOKEN_DTYPE,
    TokenizerNotFoundError,
    bundled_qwen3_dir,
    encode,
    load_tokenizer,
)

TEXT_PIECES = st.sampled_from(
    ["\n", "\n\n", " ", "  ", ".", ",", "Document 7:", "Paris", "東京", "ü", "🙂", "'s", "\t", "42"]
)


def _whole(tokenizer, text: str) -> list[int]:
    return tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT_PIECES | st.text(max_size=8), max_size=80), st.integers(1, 40))
def test_segmented_encoding_gives_exactly_the_ids_of_one_encode(tokenizer, pieces, segment_chars):
    text = "".join(pieces)
    assert encode(tokenizer, text, segment_chars=segment_chars).tolist() == _whole(tokenizer, text)


def test_whole_documents_encode_identically_in_segments(tokenizer, qa_rows):
    text = "\n\n".join(
        f"Document {i}:\n{title}\n{''.join(sentences)}"
        for i, row in enumerate(qa_rows)
        for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True)
    )
    ids = encode(tokenizer, text, segment_chars=2000)
    assert ids.dtype == TOKEN_DTYPE and ids.tolist() == _whole(tokenizer, text)


def test_the_bundled_tokenizer_is_the_real_qwen3_one(tokenizer):
    assert (bundled_qwen3_dir() / "tokenizer.json").is_file()
    assert tokenizer.convert_tokens_to_ids(["<|im_end|>", "<think>", "</think>"]) == [151645, 151667, 151668]
    assert len(tokenizer) == 151669


def test_a_missing_tokenizer_folder_is_a_clear_error(tmp_path):
    with pytest.raises(TokenizerNotFoundError, match="is not a folder"):
        load_tokenizer(tmp_path / "nowhere")


def test_empty_text_is_an_empty_array(tokenizer):
    assert encode(tokenizer, "").shape == (0,) and encode(tokenizer, "").dtype == np.int32
