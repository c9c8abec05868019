"""Our prompt wording, and templates that splice token ids instead of re-tokenising text.

Each turn is a fresh single-user-message chat in the model's own chat template (Qwen3: thinking
off unless asked). The template is rendered once with placeholder markers, cut at the markers,
and each static piece is tokenised once. A prompt is then the concatenation of those pieces with
the token ids of the problem, the memory and the chunk. This keeps two invariants:

- the memory the model reads is exactly the token ids it generated (no decode and re-encode);
- a document is tokenised once, never per chunk.

The structure follows MemAgent (problem, memory and section blocks; a fixed "no memory yet" start;
the final answer in \\boxed{}); the words are ours. A template file (`MEM_PROMPTS`, prompt_file.py)
replaces them, and prompt_sets.py decides how its prompts are assembled.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mem_agent.templates.template_file import template_fields
from mem_agent.tokenization.tokenizer import TOKEN_DTYPE, encode

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

# ReMemR1 mode (MEM_MODE=rememr1): the same reading task, with a recalled earlier note in its own block.
REMEMR1_MEMORY_TURN_TEXT = """You are reading a long document one section at a time so that you can answer a question \
about it later. Only your notes are kept from one section to the next, but you may ask to see one of your \
earlier notes again.

<problem>
{problem}
</problem>

<recalled_memory>
{recalled}
</recalled_memory>

<memory>
{memory}
</memory>

<section>
{section}
</section>

Write your updated notes inside <update></update>: keep every fact from the memory that may help answer \
the problem and add the facts from this section that matter for it. If this section refers to something \
you read earlier but no longer have in your notes, also write one <recall>a short query</recall>, and the \
earlier note that best matches it will be shown to you with the next section."""

REMEMR1_FINAL_TURN_TEXT = FINAL_TURN_TEXT.replace(
    "<problem>\n{problem}\n</problem>\n",
    "<problem>\n{problem}\n</problem>\n\n<recalled_memory>\n{recalled}\n</recalled_memory>\n",
)
NO_RECALL_TEXT = "(nothing recalled)"


def built_in_facts(*texts: str, **extra: str) -> dict[str, str]:
    """What a run records about built-in prompts: a sha256 of their wording, so that a rerun into a
    folder whose answers came from other wording is refused like one with other settings."""
    digest = hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()
    return {"kind": "built-in", "sha256": digest, **extra}


_MARKER = "\u2063MEMAGENT-SLOT-{name}\u2063"  # invisible separator: never written by a chat template
_MARKER_PATTERN = re.compile("\u2063MEMAGENT-SLOT-([a-z_]+)\u2063")
_MESSAGE_MARKER = "\u2063MEMAGENT-MESSAGE\u2063"


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


def render_chat(tokenizer: PreTrainedTokenizerBase, message: str, *, thinking: bool | None) -> str:
    """`message` as one user turn of a fresh chat, with the assistant's generation prompt.

    `thinking=None` passes no enable_thinking at all, so the chat template's own default decides,
    as it does for a client that sends /v1/chat/completions without chat_template_kwargs.
    """
    switch = {} if thinking is None else {"enable_thinking": thinking}
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True, **switch
    )


def compile_template(
    tokenizer: PreTrainedTokenizerBase, message: str, *, thinking: bool | None, around_placeholder: bool = False
) -> TokenTemplate:
    """Render `message` (str.format syntax, {slot} fields) through the chat template and cut it into pieces.

    Markers, not the {slot} text itself, go through the chat template, so text with braces that the
    template adds (a default system prompt) is never taken for a slot, and a template that reorders
    or drops a slot is an error, not a silent splice. With `around_placeholder` the chat template is
    rendered around one placeholder message and the message is put in its place afterwards, as
    MemAgent's and ReMemR1's training clients do (`chat_template(tokenizer).format(message=...)`):
    a chat template that transforms the content (trims it, inspects it) then never sees it.
    """
    slot_names = tuple(template_fields(message))
    marked = message.format(**{name: _MARKER.format(name=name) for name in slot_names})
    if around_placeholder:
        outer = render_chat(tokenizer, _MESSAGE_MARKER, thinking=thinking)
        if outer.count(_MESSAGE_MARKER) != 1:
            raise ValueError("the chat template did not keep the user message exactly once")
        rendered = outer.replace(_MESSAGE_MARKER, marked)
    else:
        rendered = render_chat(tokenizer, marked, thinking=thinking)
    split = _MARKER_PATTERN.split(rendered)
    texts, found = split[0::2], tuple(split[1::2])
    if found != slot_names:
        raise ValueError(f"chat template reordered or dropped prompt slots: expected {slot_names}, got {found}")
    return TokenTemplate(pieces=tuple(encode(tokenizer, text) for text in texts), slots=slot_names)
