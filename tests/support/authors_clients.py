"""What MemAgent's and ReMemR1's own clients send, re-implemented from reading their code.

The prompt templates (prompt_sets.py) claim that with a template file every request is, token for
token, what the authors' client sends for the same item and chunking. These functions are the
other side of that claim, written independently and as plainly as the clients themselves:

- `TrainingClient`: the training side (MemAgent `recurrent/impls/memory.py` and `recurrent/utils.py`,
  ReMemR1 `recurrent/impls/memory_revisit.py`): the chat template rendered once around a
  `{message}` placeholder, `.format(message=template)` on that text, the result split at `{word}`
  slots by a regex and each static piece encoded on its own; the question's ids as given; the
  document's ids cut at the centre to max_chunks x chunk_size (`max_half` from each end), each chunk
  a slice less pad ids; the memory the response less pad and EOS ids; the first memory the ids of
  the "no memory" text.
- `EvaluationClient`: the evaluation side (MemAgent `taskutils/memory_eval/utils/recurrent_boxed.py`,
  ReMemR1 `taskutils/memory_eval/utils/rememr1.py`): question and document stripped, chunk text =
  decode(chunk ids) with special tokens kept, message = template.format(...), sent as the one user
  message of /v1/chat/completions, which the server renders with the generation prompt (no
  chat_template_kwargs) and tokenises; memory = the returned text after the last `</think>`
  (MemAgent, `extract_solution`) or the whole text (ReMemR1).

Templates here are in the authors' syntax (their placeholder names) and use wording we invent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mem_agent.tokenization.tokenizer import decode, encode

MEMAGENT_SLOT = r"\{([a-zA-Z]+)\}"
REMEMR1_SLOT = r"\{([a-zA-Z_]+)\}"


def server_request_ids(tokenizer, message: str, thinking: bool | None = None) -> list[int]:
    """/v1/chat/completions with one user message: the server renders the chat template with the
    generation prompt and tokenises the text without adding special tokens."""
    switch = {} if thinking is None else {"enable_thinking": thinking}
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True, **switch
    )
    return encode(tokenizer, rendered).tolist()


def extract_solution(text: str) -> str:
    if "</think>" not in text:
        return text
    return text.split("</think>")[-1].strip()


@dataclass
class TrainingClient:
    tokenizer: object
    memory_template: str
    final_template: str
    no_memory: str
    slot_pattern: str = MEMAGENT_SLOT
    no_recall: str | None = None
    thinking: bool | None = None  # the authors pass nothing: the chat template's default

    def _pieces(self, template: str) -> tuple[list[list[int]], list[str]]:
        switch = {} if self.thinking is None else {"enable_thinking": self.thinking}
        chat = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": "{message}"}], tokenize=False, add_generation_prompt=True, **switch
        )
        parts = re.split(self.slot_pattern, chat.format(message=template))
        return [encode(self.tokenizer, part).tolist() for part in parts[0::2]], parts[1::2]

    def format(self, template: str, **values: list[int]) -> list[int]:
        sections, keywords = self._pieces(template)
        ids: list[int] = []
        for section, keyword in zip(sections, keywords, strict=False):
            ids += section + list(values[keyword])
        return ids + sections[-1]

    def chunks(self, context: str, chunk_size: int, max_chunks: int) -> list[list[int]]:
        ids = encode(self.tokenizer, context).tolist()
        limit = max_chunks * chunk_size
        if len(ids) > limit:
            ids = ids[: limit // 2] + ids[-(limit // 2) :]
        pad = self.tokenizer.pad_token_id
        return [[t for t in ids[i : i + chunk_size] if t != pad] for i in range(0, len(ids), chunk_size)]

    def memory_of(self, response: Sequence[int]) -> list[int]:
        dropped = {self.tokenizer.pad_token_id, self.tokenizer.eos_token_id}
        return [t for t in response if t not in dropped]

    def requests(
        self, question: str, context: str, chunk_size: int, max_chunks: int, responses: Sequence[Sequence[int]]
    ) -> list[list[int]]:
        """Every prompt of one MemAgent trajectory, given the ids the model answered each memory turn with."""
        problem = encode(self.tokenizer, question).tolist()
        memory = encode(self.tokenizer, self.no_memory).tolist()
        sent = []
        for step, chunk in enumerate(self.chunks(context, chunk_size, max_chunks)):
            sent.append(self.format(self.memory_template, prompt=problem, memory=memory, chunk=chunk))
            memory = self.memory_of(responses[step])
        sent.append(self.format(self.final_template, prompt=problem, memory=memory))
        return sent


@dataclass
class EvaluationClient:
    tokenizer: object
    memory_template: str
    final_template: str
    no_memory: str
    no_recall: str | None = None
    memory_rule: Callable[[str], str] = extract_solution
    thinking: bool | None = None  # stands for a server started with a default chat_template_kwargs

    def chunk_texts(self, context: str, chunk_size: int) -> list[str]:
        ids = encode(self.tokenizer, context.strip()).tolist()
        return [self.tokenizer.decode(ids[i : i + chunk_size]) for i in range(0, len(ids), chunk_size)]

    def send(self, message: str) -> list[int]:
        return server_request_ids(self.tokenizer, message, self.thinking)

    def requests(
        self, question: str, context: str, chunk_size: int, responses: Sequence[Sequence[int]]
    ) -> list[list[int]]:
        """Every prompt of one MemAgent trajectory; `responses` are the ids behind each returned text."""
        prompt = question.strip()
        memory = self.no_memory
        sent = []
        for step, chunk in enumerate(self.chunk_texts(context, chunk_size)):
            sent.append(self.send(self.memory_template.format(prompt=prompt, chunk=chunk, memory=memory)))
            memory = self.memory_rule(decode(self.tokenizer, responses[step]))
        sent.append(self.send(self.final_template.format(prompt=prompt, memory=memory)))
        return sent
