"""ReMemR1 mode (`MEM_MODE=rememr1`): MemAgent's loop plus one recall of an earlier memory per turn.

Each memory turn writes its new memory inside `<update>...</update>` and may add one
`<recall>query</recall>`. The query retrieves the best-matching earlier memory of the same
trajectory (see retrieval.py); that memory is shown in its own block of the next turn's prompt
(or a "nothing recalled" text), so only one recalled memory is visible at a time, and the final
turn sees problem + memory + the last recalled memory.

Choices where the reference implementation is fragile (documented in docs/fidelity.md):
- tags are parsed across lines (`re.DOTALL`); the memory is, as in the released code, the whole
  visible response with its recall blocks removed (MEM_REMEMR1_MEMORY=response), or
  (MEM_REMEMR1_MEMORY=update) its last non-empty update block, or, when the model wrote none, the
  response less its recall blocks; an update cut off by max_tokens (no closing tag) still becomes
  the memory, like MemAgent's cut memories;
- the first non-empty recall query is used; candidates are the distinct memories written before
  this turn, oldest first, as in the released training code: the one this turn's prompt showed is
  one of them (the recall is shown next turn, beside a newer memory), the one this turn writes is not;
  with the `tfidf` retriever they are compared by the policy tokenizer's pieces, as released;
- the memory is carried as text, tokenised again for the next prompt as the released code does
  (the response itself is trained exactly as the server generated it).

The wording (mem_agent.agent.prompts) is ours; a template file (`MEM_PROMPTS`, mode "rememr1") replaces it, with the
placeholders {problem} {recalled} {memory} {section} and a `no_recall` text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mem_agent.agent.records import Completion
from mem_agent.agent.retrieval import Terms, retrieve, subword_terms, words
from mem_agent.settings.config import MemoryRule, RetrieverKind

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from mem_agent.agent.prompt_sets import PromptSet

_UPDATE = re.compile(r"<update>(.*?)</update>", re.DOTALL)
_RECALL = re.compile(r"<recall>(.*?)</recall>", re.DOTALL)
_OPEN_UPDATE = "<update>"


@dataclass(frozen=True)
class ParsedResponse:
    updates: tuple[str, ...]  # non-empty update blocks, in order
    recalls: tuple[str, ...]  # non-empty recall queries, in order
    memory_text: str

    @property
    def query(self) -> str | None:
        return self.recalls[0] if self.recalls else None


def parse_response(text: str) -> ParsedResponse:
    updates = tuple(block.strip() for block in _UPDATE.findall(text) if block.strip())
    recalls = tuple(query.strip() for query in _RECALL.findall(text) if query.strip())
    if updates:
        memory = updates[-1]
    elif _OPEN_UPDATE in text:  # cut off before its closing tag
        memory = _RECALL.sub("", text.rsplit(_OPEN_UPDATE, 1)[1]).strip()
    else:
        memory = _RECALL.sub("", text).strip()
    return ParsedResponse(updates, recalls, memory)


@dataclass
class ReMemR1Planner:
    """Per-trajectory state of the ReMemR1 loop: memory, its history, and the recalled memory."""

    prompts: PromptSet  # slots are ids or text, per assembly (prompt_sets.py)
    problem: Any
    tokenizer: PreTrainedTokenizerBase
    retriever: RetrieverKind
    memory_rule: MemoryRule = MemoryRule.RESPONSE
    memory: Any = field(init=False)
    memory_text: str = field(init=False, default="")
    history: list[str] = field(init=False, default_factory=list)
    recalled: Any = field(init=False)
    _terms: Terms = field(init=False, repr=False)  # what the retriever compares

    def __post_init__(self) -> None:
        self.memory = self.prompts.no_memory
        self.recalled = self.prompts.no_recall
        self._terms = subword_terms(self.tokenizer) if self.retriever is RetrieverKind.TFIDF else words

    @property
    def memory_ids(self) -> np.ndarray:
        return self.prompts.to_ids(self.memory)

    def memory_prompt(self, step: int, chunk: np.ndarray) -> np.ndarray:
        return self.prompts.memory_prompt(
            problem=self.problem, recalled=self.recalled, memory=self.memory, section=self.prompts.chunk(chunk)
        )

    def after_memory_turn(self, step: int, memory: Any, completion: Completion) -> dict[str, object]:
        response = self.prompts.to_text(memory)
        parsed = parse_response(response)
        if self.memory_rule is MemoryRule.UPDATE:
            memory_text, update_text = parsed.memory_text, parsed.memory_text
        else:  # the released code: memory is the response less its recalls, its reward reads the update
            memory_text, update_text = _RECALL.sub("", response).strip(), next(iter(parsed.updates), "")
        # Every memory written before this turn; this turn's own is appended only after the search.
        found = retrieve(parsed.query or "", self.history, self.retriever, self._terms)
        recalled = self.history[found] if found is not None else None
        extras: dict[str, object] = {
            "memory_before": self.memory_text,
            "memory_text": memory_text,
            "update_text": update_text,  # what the state reward measures as the new memory
            "recall_query": parsed.query,
            "recalled": recalled,
            "update_blocks": len(parsed.updates),  # what the state reward's format part counts
        }
        self.recalled = self.prompts.from_text(recalled) if recalled else self.prompts.no_recall
        self.memory_text = memory_text
        self.memory = self.prompts.from_text(memory_text)
        if memory_text and memory_text not in self.history:
            self.history.append(memory_text)
        return extras

    def final_prompt(self) -> np.ndarray:
        return self.prompts.final_prompt(problem=self.problem, recalled=self.recalled, memory=self.memory)
