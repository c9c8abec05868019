"""ReMemR1's per-turn state rewards: format reward + action reward, as the released code computes them.

- coverage(text) = the share of a ground truth's words found in the text, the max over ground
  truths (the paper's max; the released code averages them, which punishes a memory for not holding
  every alias at once, a known defect). Words are found as the released code finds them
  (MEM_REMEMR1_COVERAGE=substring: the ground truth split on whitespace, each word looked up as a
  case-sensitive sub-string of the text) or as whole lower-cased `\\w+` words (=words);
- memory turn: format = 1 when the response has exactly one non-empty `<update>` block (read across
  lines; the released code's single-line pattern misses multi-line blocks, a known defect);
  action = coverage(new memory) - coverage(old memory)
  + max(0, coverage(recalled memory + turn input) - coverage(turn input)), i.e. what the update
  gained, plus what the recalled memory brings that the input did not already hold. The new memory
  is the turn's update block under MEM_REMEMR1_MEMORY=response (the released reward reads it, while
  the whole response becomes the memory), the memory itself under =update; the old memory is the
  one the turn's prompt showed (the released code means to read it from the prompt, but its
  single-line pattern never matches, so it counts 0 there);
- final turn: format = 1 when the answer holds exactly one `\\boxed{`, closed, with non-blank content;
  action = 0 (the outcome reward already scores the answer).
The state reward of a turn is format + action.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mem_agent.agent.records import Turn, TurnKind
from mem_agent.agent.retrieval import words
from mem_agent.agent.scoring import matching_brace
from mem_agent.settings.config import CoverageRule

_BOX_OPENING = "\\boxed{"


def _share_found(truth: str, text: str, present: set[str], rule: CoverageRule) -> float | None:
    """Share of `truth`'s words found in `text`; None when the truth has no words."""
    wanted = truth.split() if rule is CoverageRule.SUBSTRING else words(truth)
    if not wanted:
        return None
    if rule is CoverageRule.SUBSTRING:
        return sum(word in text for word in wanted) / len(wanted)
    return sum(word in present for word in wanted) / len(wanted)


def coverage(text: str, ground_truths: Sequence[str], rule: CoverageRule = CoverageRule.SUBSTRING) -> float:
    present = set(words(text)) if rule is CoverageRule.WORDS else set()
    shares = (_share_found(truth, text, present, rule) for truth in ground_truths)
    return max((share for share in shares if share is not None), default=0.0)


@dataclass(frozen=True)
class MemoryTurnFacts:
    turn_input: str  # what the turn read: its prompt decoded without special tokens (problem, memory, section)
    memory_before: str
    memory_after: str
    recalled: str | None  # the memory its recall query brought back
    update_blocks: int


def memory_turn_format(update_blocks: int) -> float:
    """The format part of a memory turn's reward: 1 for exactly one non-empty update block (released)."""
    return float(update_blocks == 1)


def memory_turn_reward(
    facts: MemoryTurnFacts, ground_truths: Sequence[str], rule: CoverageRule = CoverageRule.SUBSTRING
) -> float:
    gained = coverage(facts.memory_after, ground_truths, rule) - coverage(facts.memory_before, ground_truths, rule)
    revisit = 0.0
    if facts.recalled:
        before = coverage(facts.turn_input, ground_truths, rule)
        revisit = max(0.0, coverage(facts.recalled + " " + facts.turn_input, ground_truths, rule) - before)
    return memory_turn_format(facts.update_blocks) + gained + revisit


def final_turn_reward(answer: str) -> float:
    """The final turn's format: exactly one `\\boxed{`, closed, with non-blank content.

    Not `scoring.extract_boxed`, on purpose: the released format reward counts the boxes (two boxes
    score 0) where the answer reader takes the last one, and it knows no brace-less `\\boxed ` form.
    The box is closed by the same brace matching (`scoring.matching_brace`).
    """
    if answer.count(_BOX_OPENING) != 1:
        return 0.0
    opening = answer.index(_BOX_OPENING) + len(_BOX_OPENING) - 1
    closing = matching_brace(answer, opening)
    return float(closing is not None and answer[opening + 1 : closing].strip() != "")


def recall_hit(recalled: str | None, ground_truths: Sequence[str]) -> bool:
    """A recall 'hits' when the memory it brought back holds a word of a gold answer."""
    if not recalled:
        return False
    present = set(words(recalled))
    return any(word in present for truth in ground_truths for word in words(truth))


def released_turn_input(tokenizer: Any) -> Callable[[Turn], str]:
    """A memory turn's input as ReMemR1's released reward reads it: the prompt's ids decoded with
    `skip_special_tokens=True` (verl/trainer/ppo/ray_trainer.py), so chat-template markers such as
    `<|im_start|>` never count as words the input already held."""
    return lambda turn: tokenizer.decode(turn.prompt_ids.tolist(), skip_special_tokens=True)


def turn_state_rewards(
    turns: Sequence[Turn],
    answer: str,
    ground_truths: Sequence[str],
    decode_prompt: Callable[[Turn], str],
    rule: CoverageRule = CoverageRule.SUBSTRING,
) -> dict[int, float]:
    """State reward per turn step of a ReMemR1 trajectory (memory turns and the final turn)."""
    rewards: dict[int, float] = {}
    for turn in turns:
        if turn.kind is TurnKind.FINAL:
            rewards[turn.step] = final_turn_reward(answer)
            continue
        extras = turn.extras
        facts = MemoryTurnFacts(
            turn_input=decode_prompt(turn),
            memory_before=str(extras.get("memory_before") or ""),
            memory_after=str(extras.get("update_text", extras.get("memory_text")) or ""),
            recalled=extras.get("recalled") if isinstance(extras.get("recalled"), str) else None,
            update_blocks=int(extras.get("update_blocks") or 0),
        )
        rewards[turn.step] = memory_turn_reward(facts, ground_truths, rule)
    return rewards


def recall_stats(turns: Sequence[Turn], ground_truths: Sequence[str]) -> dict[str, float]:
    """Share of memory turns that asked for a recall, and the share of recalls that hit a gold word."""
    memory_turns = [turn for turn in turns if turn.kind is TurnKind.MEMORY]
    asked = [turn for turn in memory_turns if turn.extras.get("recall_query")]
    retrieved = [turn.extras.get("recalled") for turn in asked if turn.extras.get("recalled")]
    hits = sum(recall_hit(str(text), ground_truths) for text in retrieved)
    return {
        "recall_share": len(asked) / len(memory_turns) if memory_turns else 0.0,
        "recall_hit_rate": hits / len(retrieved) if retrieved else 0.0,
    }
