"""How each prompt is assembled, and how a response becomes the next memory and the answer.

A prompt set is what the planners in workflow.py and rememr1.py build prompts with. Its slots (the
problem, the memory, a chunk, a recalled memory) are token ids in one assembly and text in the
other, and the planners never look inside them.

`TokenPrompts` (our built-in prompts; a template file with `assembly = "tokens"`): the chat template
is rendered once around the message, each static piece is tokenised once, and the ids of the
problem, the memory and the chunk are spliced in. The memory is the model's own ids, never
re-tokenised. With a file this is MemAgent's and ReMemR1's training client (`TokenTemplate`):
problem = ids of the question as given, chunk = a slice of the document's ids less any pad id,
memory = the response ids less pad and EOS ids, first memory = the ids of `no_memory`.

`TextPrompts` (a file with `assembly = "text"`): their evaluation client, which sends text to
/v1/chat/completions. Question and document are stripped; a chunk is the text of its ids decoded
with special tokens kept (a chunk boundary may split a character, which then decodes to U+FFFD);
the message is `template.format(...)` of those texts; the server would render it as the one user
message of a chat with the generation prompt and tokenise the result, so that is what we send as
ids. The memory is the response as text (decoded skipping special tokens, as the server returns
it), optionally only what follows the last `</think>`. The answer is what their evaluation scripts
score: the part after the last `</think>`, or the whole response when that part is empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from mem_agent.agent.prompts import (
    FINAL_TURN_TEXT,
    MEMORY_TURN_TEXT,
    NO_MEMORY_TEXT,
    NO_RECALL_TEXT,
    REMEMR1_FINAL_TURN_TEXT,
    REMEMR1_MEMORY_TURN_TEXT,
    TokenTemplate,
    built_in_facts,
    compile_template,
    render_chat,
)
from mem_agent.agent.scoring import THINK_END, after_think, answer_region
from mem_agent.settings.config import AgentMode, MemAgentConfig
from mem_agent.templates.template_file import Assembly, MemoryText, PromptFile
from mem_agent.tokenization.tokenizer import decode, encode

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

BUILT_IN_FACTS: dict[str, Any] = built_in_facts(
    MEMORY_TURN_TEXT,
    FINAL_TURN_TEXT,
    NO_MEMORY_TEXT,
    NO_RECALL_TEXT,
    REMEMR1_MEMORY_TURN_TEXT,
    REMEMR1_FINAL_TURN_TEXT,
)


class PromptSet(Protocol):
    """What a planner needs; a slot value (`Any` here) is an id array or a string, per assembly."""

    no_memory: Any
    no_recall: Any
    tokenizes_each_turn: bool  # a prompt is rendered and tokenised whole each turn (text assembly)

    def problem(self, question: str) -> Any: ...

    def context_text(self, document: str) -> str: ...

    def chunk(self, ids: np.ndarray) -> Any: ...

    def memory_prompt(self, **slots: Any) -> np.ndarray: ...

    def final_prompt(self, **slots: Any) -> np.ndarray: ...

    def memory(self, response_ids: np.ndarray) -> Any: ...

    def answer(self, response_ids: np.ndarray) -> str: ...

    def from_text(self, text: str) -> Any: ...

    def to_text(self, slot: Any) -> str: ...

    def to_ids(self, slot: Any) -> np.ndarray: ...


class ResponseCleaner:
    """Our rule: memory ids or answer text from a response, without re-tokenising anything."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, thinking: bool) -> None:
        self._tokenizer = tokenizer
        self._thinking = thinking
        self._special_ids = frozenset(int(i) for i in tokenizer.all_special_ids)
        think_end = tokenizer.convert_tokens_to_ids(THINK_END)
        self._think_end = think_end if isinstance(think_end, int) and think_end != tokenizer.unk_token_id else None
        self._blank_ids: dict[int, bool] = {}

    def visible_ids(self, response_ids: np.ndarray) -> np.ndarray:
        """The response less trailing special tokens (EOS) and, with thinking on, its <think> part.

        With thinking on, a response cut before `</think>` has no visible part: the memory
        becomes empty, which is the honest outcome of a turn that never wrote its notes.
        """
        ids = response_ids
        end = int(ids.shape[0])
        while end and int(ids[end - 1]) in self._special_ids:
            end -= 1
        ids = ids[:end]
        if not self._thinking or self._think_end is None:
            return ids
        closing = np.flatnonzero(ids == self._think_end)
        if closing.size == 0:
            return ids[:0]
        ids = ids[int(closing[-1]) + 1 :]
        start = 0
        while start < ids.shape[0] and self._is_blank(int(ids[start])):
            start += 1
        return ids[start:]

    def text(self, response_ids: np.ndarray) -> str:
        return decode(self._tokenizer, self.visible_ids(response_ids))

    def _is_blank(self, token_id: int) -> bool:
        if token_id not in self._blank_ids:
            self._blank_ids[token_id] = self._tokenizer.decode([token_id]).strip() == ""
        return self._blank_ids[token_id]


class PadEosStripper:
    """The authors' training rule (`unpad(..., remove_eos=True)`): every pad and EOS id removed."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self._tokenizer = tokenizer
        self.dropped = pad_and_eos_ids(tokenizer)

    def visible_ids(self, response_ids: np.ndarray) -> np.ndarray:
        return response_ids[~np.isin(response_ids, self.dropped)]

    def text(self, response_ids: np.ndarray) -> str:
        return decode(self._tokenizer, self.visible_ids(response_ids))


def pad_id(tokenizer: PreTrainedTokenizerBase) -> int:
    pad = getattr(tokenizer, "pad_token_id", None)
    return int(tokenizer.eos_token_id if pad is None else pad)  # verl pads with EOS when there is no pad token


def pad_and_eos_ids(tokenizer: PreTrainedTokenizerBase) -> np.ndarray:
    return np.asarray(sorted({pad_id(tokenizer), int(tokenizer.eos_token_id)}), dtype=np.int64)


@dataclass(frozen=True)
class TokenPrompts:
    tokenizes_each_turn: ClassVar[bool] = False

    tokenizer: Any
    memory_turn: TokenTemplate
    final_turn: TokenTemplate
    no_memory: np.ndarray
    no_recall: np.ndarray | None
    cleaner: ResponseCleaner | PadEosStripper
    chunk_drop: np.ndarray | None = None  # ids removed from a chunk (the training client's pad id)

    def problem(self, question: str) -> np.ndarray:
        return encode(self.tokenizer, question)

    def context_text(self, document: str) -> str:
        return document

    def chunk(self, ids: np.ndarray) -> np.ndarray:
        return ids if self.chunk_drop is None else ids[~np.isin(ids, self.chunk_drop)]

    def memory_prompt(self, **slots: np.ndarray) -> np.ndarray:
        return self.memory_turn.render(**slots)

    def final_prompt(self, **slots: np.ndarray) -> np.ndarray:
        return self.final_turn.render(**slots)

    def memory(self, response_ids: np.ndarray) -> np.ndarray:
        return self.cleaner.visible_ids(response_ids)

    def answer(self, response_ids: np.ndarray) -> str:
        return self.cleaner.text(response_ids)

    def from_text(self, text: str) -> np.ndarray:
        return encode(self.tokenizer, text)

    def to_text(self, slot: np.ndarray) -> str:
        return decode(self.tokenizer, slot)

    def to_ids(self, slot: np.ndarray) -> np.ndarray:
        return slot


@dataclass(frozen=True)
class TextPrompts:
    tokenizes_each_turn: ClassVar[bool] = True

    tokenizer: Any
    memory_turn: str
    final_turn: str
    no_memory: str
    no_recall: str | None
    thinking: bool | None
    after_think: bool

    def problem(self, question: str) -> str:
        return question.strip()

    def context_text(self, document: str) -> str:
        return document.strip()

    def chunk(self, ids: np.ndarray) -> str:
        return self.tokenizer.decode(ids.tolist(), skip_special_tokens=False)

    def memory_prompt(self, **slots: str) -> np.ndarray:
        return self._request(self.memory_turn.format(**slots))

    def final_prompt(self, **slots: str) -> np.ndarray:
        return self._request(self.final_turn.format(**slots))

    def _request(self, message: str) -> np.ndarray:
        return encode(self.tokenizer, render_chat(self.tokenizer, message, thinking=self.thinking))

    def memory(self, response_ids: np.ndarray) -> str:
        text = decode(self.tokenizer, response_ids)
        return after_think(text) if self.after_think else text

    def answer(self, response_ids: np.ndarray) -> str:
        """What both authors' evaluation scripts score: the stripped response's part after the last
        `</think>`, or the whole response when that part is empty (`extract_solution`, then the box)."""
        return answer_region(decode(self.tokenizer, response_ids))

    def from_text(self, text: str) -> str:
        return text

    def to_text(self, slot: str) -> str:
        return slot

    def to_ids(self, slot: str) -> np.ndarray:
        return encode(self.tokenizer, slot)


def builtin_prompts(tokenizer: PreTrainedTokenizerBase, mode: AgentMode, thinking: bool = False) -> TokenPrompts:
    """Our own wording, spliced as ids, thinking switched explicitly (MEM_THINKING)."""
    rememr1 = AgentMode(mode) is AgentMode.REMEMR1
    memory_text = REMEMR1_MEMORY_TURN_TEXT if rememr1 else MEMORY_TURN_TEXT
    final_text = REMEMR1_FINAL_TURN_TEXT if rememr1 else FINAL_TURN_TEXT
    return TokenPrompts(
        tokenizer=tokenizer,
        memory_turn=compile_template(tokenizer, memory_text, thinking=thinking),
        final_turn=compile_template(tokenizer, final_text, thinking=thinking),
        no_memory=encode(tokenizer, NO_MEMORY_TEXT),
        no_recall=encode(tokenizer, NO_RECALL_TEXT) if rememr1 else None,
        cleaner=ResponseCleaner(tokenizer, thinking),
    )


def file_prompts(tokenizer: PreTrainedTokenizerBase, file: PromptFile) -> TokenPrompts | TextPrompts:
    thinking = file.thinking.flag
    if file.assembly is Assembly.TEXT:
        return TextPrompts(
            tokenizer=tokenizer,
            memory_turn=file.memory_turn,
            final_turn=file.final_turn,
            no_memory=file.no_memory,
            no_recall=file.no_recall,
            thinking=thinking,
            after_think=file.memory is MemoryText.AFTER_THINK,
        )
    stripper = PadEosStripper(tokenizer)
    return TokenPrompts(
        tokenizer=tokenizer,
        memory_turn=compile_template(tokenizer, file.memory_turn, thinking=thinking, around_placeholder=True),
        final_turn=compile_template(tokenizer, file.final_turn, thinking=thinking, around_placeholder=True),
        no_memory=encode(tokenizer, file.no_memory),
        no_recall=encode(tokenizer, file.no_recall) if file.no_recall is not None else None,
        cleaner=stripper,
        chunk_drop=np.asarray([pad_id(tokenizer)], dtype=np.int64),
    )


def prompt_facts(config: MemAgentConfig) -> dict[str, Any]:
    """What a run records about its prompts, without a tokenizer: built-in, or the facts (path,
    sha256, source) of the one read of the template file that the run's prompts are built from."""
    file = config.prompt_file
    return dict(BUILT_IN_FACTS) if file is None else file.facts()


def build_prompt_set(
    tokenizer: PreTrainedTokenizerBase, config: MemAgentConfig
) -> tuple[TokenPrompts | TextPrompts, dict[str, Any]]:
    """The prompts `config` asks for, and the facts a run records about them (`prompt_facts`)."""
    file = config.prompt_file
    if file is None:
        return builtin_prompts(tokenizer, config.mode, config.thinking), prompt_facts(config)
    return file_prompts(tokenizer, file), prompt_facts(config)
