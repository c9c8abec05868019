"""Our prompt wording, and templates that splice token ids instead of re-tokenising text.

Each turn is a fresh single-user-message chat in the model's own chat template (Qwen3: thinking
off unless asked). The template is rendered once with placeholder markers, cut at the markers,
and each static piece is tokenised once. A prompt is then the concatenation of those pieces with
the token ids of the problem, the memory and the chunk. This keeps two invariants:

- the memory the model reads is exactly the token ids it generated (no decode and re-encode);
- a document is tokenised once, never per chunk.

The structure follows MemAgent (problem, memory and section blocks; a fixed "no memory yet" start;
the final answer in \\boxed{}); the words are ours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mem_agent.tokenizer import TOKEN_DTYPE, encode

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

MEMORY_TURN_TEXT = """You are reading a long document one section at a time so that you can answer a question \
about it later. You will not see this section again: only the notes you write now are kept.

<problem>
{problem}
</problem>

<memory>
{memory}
</memory>

<section>
{section}
</section>

Write your updated notes. Keep every fact from the memory that may help answer the problem, add \
the facts from this section that matter for it, and leave out everything else. Reply with the notes only."""

FINAL_TURN_TEXT = """You have finished reading a long document. All you kept from it are your notes.

<problem>
{problem}
</problem>

<memory>
{memory}
</memory>

Answer the problem from your notes. Reason briefly, then give the final answer inside \\boxed{{}}."""

NO_MEMORY_TEXT = "(no notes yet)"

_MARKER = "\u2063MEMAGENT-SLOT-{name}\u2063"  # invisible separator: never written by a chat template
_MARKER_PATTERN = re.compile("\u2063MEMAGENT-SLOT-([a-z_]+)\u2063")


@dataclass(frozen=True)
class TokenTemplate:
    """A chat-templated prompt with named slots that take token-id arrays."""

    pieces: tuple[np.ndarray, ...]  # static token ids around the slots; len(slots) + 1 of them
    slots: tuple[str, ...]

    @property
    def static_tokens(self) -> int:
        return sum(int(piece.shape[0]) for piece in self.pieces)

    def render(self, **values: np.ndarray) -> np.ndarray:
        if set(values) != set(self.slots):
            raise TypeError(f"template slots are {sorted(self.slots)}, got {sorted(values)}")
        parts: list[np.ndarray] = [self.pieces[0]]
        for name, piece in zip(self.slots, self.pieces[1:], strict=True):
            parts.append(values[name])
            parts.append(piece)
        return np.concatenate(parts).astype(TOKEN_DTYPE, copy=False)


def compile_template(tokenizer: PreTrainedTokenizerBase, message: str, *, thinking: bool) -> TokenTemplate:
    """Render `message` (with {slot} fields) through the chat template and cut it into pieces."""
    slot_names = tuple(re.findall(r"(?<!\{)\{([a-z_]+)\}(?!\})", message))
    marked = message.format(**{name: _MARKER.format(name=name) for name in slot_names})
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": marked}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=thinking,
    )
    split = _MARKER_PATTERN.split(rendered)
    texts, found = split[0::2], tuple(split[1::2])
    if found != slot_names:
        raise ValueError(f"chat template reordered or dropped prompt slots: expected {slot_names}, got {found}")
    return TokenTemplate(pieces=tuple(encode(tokenizer, text) for text in texts), slots=slot_names)


@dataclass(frozen=True)
class MemAgentPrompts:
    memory_turn: TokenTemplate  # slots: problem, memory, section
    final_turn: TokenTemplate  # slots: problem, memory
    no_memory: np.ndarray

    @classmethod
    def build(cls, tokenizer: PreTrainedTokenizerBase, *, thinking: bool = False) -> MemAgentPrompts:
        return cls(
            memory_turn=compile_template(tokenizer, MEMORY_TURN_TEXT, thinking=thinking),
            final_turn=compile_template(tokenizer, FINAL_TURN_TEXT, thinking=thinking),
            no_memory=encode(tokenizer, NO_MEMORY_TEXT),
        )
