"""ReMemR1's per-turn state rewards: format reward + action reward, with the paper's definitions.

- coverage(text) = the share of a ground truth's words that appear among the text's words, taken as
  the max over ground truths (the paper's max; the reference code averages them, which punishes a
  memory for not containing every alias at once);
- memory turn: format = 1 when the response has exactly one non-empty `<update>` block and at most
  one recall; action = coverage(new memory) - coverage(old memory)
  + max(0, coverage(recalled memory + turn input) - coverage(turn input)), i.e. what the update
  gained, plus what the recalled memory brings that the input did not already hold;
- final turn: format = 1 when the answer holds exactly one complete `\\boxed{}`; action = 0 (the
  outcome reward already scores the answer).
The state reward of a turn is format + action. Words are lower-cased `\\w+` runs, as in retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mem_agent.records import Turn, TurnKind
from mem_agent.retrieval import words
from mem_agent.scoring import extract_boxed

_BOX = re.compile(r"\\boxed\s*\{")


def coverage(text: str, ground_truths: Sequence[str]) -> float:
    present = set(words(text))
    best = 0.0
    for truth in ground_truths:
        wanted = words(truth)
        if wanted:
            best = max(best, sum(word in present for word in wanted) / len(wanted))
    return best


@dataclass(frozen=True)
class MemoryTurnFacts:
    turn_input: str  # what the turn read: its decoded prompt (problem, memory, section)
    memory_before: str
    memory_after: str
    recalled: str | None  # the memory its recall query brought back
    update_blocks: int
    recall_blocks: int


def memory_turn_reward(facts: MemoryTurnFacts, ground_truths: Sequence[str]) -> float:
    well_formed = facts.update_blocks == 1 and facts.recall_blocks <= 1
    gained = coverage(facts.memory_after, ground_truths) - coverage(facts.memory_before, ground_truths)
    revisit = 0.0
    if facts.recalled:
        before = coverage(facts.turn_input, ground_truths)
        revisit = max(0.0, coverage(facts.recalled + " " + facts.turn_input, ground_truths) - before)
    return float(well_formed) + gained + revisit


def final_turn_reward(answer: str) -> float:
    boxes = len(_BOX.findall(answer))
    return float(boxes == 1 and extract_boxed(answer) is not None)


def recall_hit(recalled: str | None, ground_truths: Sequence[str]) -> bool:
    """A recall 'hits' when the memory it brought back holds a word of a gold answer."""
    if not recalled:
        return False
    present = set(words(recalled))
    return any(word in present for truth in ground_truths for word in words(truth))


def turn_state_rewards(
    turns: Sequence[Turn], answer: str, ground_truths: Sequence[str], decode_prompt: Callable[[Turn], str]
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
            memory_after=str(extras.get("memory_text") or ""),
            recalled=extras.get("recalled") if isinstance(extras.get("recalled"), str) else None,
            update_blocks=int(extras.get("update_blocks") or 0),
            recall_blocks=int(extras.get("recall_blocks") or 0),
        )
        rewards[turn.step] = memory_turn_reward(facts, ground_truths)
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
