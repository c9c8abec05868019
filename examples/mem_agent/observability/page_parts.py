"""What the viewer's template shows of one question: plain values, never markup.

Everything here is text from a run (questions, documents' words in memories, model output, and
numbers read back from files that anyone may have edited), so nothing is formatted as HTML in
Python: the template (`page/viewer.html.j2`) writes the markup and autoescapes every value. A field
that should hold a number but does not is shown as the text it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mem_agent.observability.trajectory_records import TrajectoryRecord, TurnRecord
from mem_agent.observability.word_diff import diff_words

# Scores shown per question, in order; the first present one decides right/wrong.
SCORE_NAMES = ("sub_em", "strict", "em", "f1")


@dataclass(frozen=True)
class TurnView:
    """One row of a question's turn list: a memory turn, the final answer, or a gap left out."""

    kind: str  # "memory" | "final" | "gap"
    head: str = ""  # the line above the text: chunk, tokens, words changed, flags
    text: str = ""  # the final answer; a gap's sentence
    runs: list[tuple[str, str]] = field(default_factory=list)  # memory: (same|ins|del, text), see word_diff
    notes: list[str] = field(default_factory=list)  # ReMemR1: the recall query and what it recalled
    cut: bool = False


@dataclass(frozen=True)
class ItemView:
    outcome: str  # right | wrong | failed: the badge's colour and the outcome filter
    badge: str
    group: str
    item_id: str
    question: str
    facts: list[tuple[str, str]]
    turns: list[TurnView] | None  # None: the run kept no turn records for this question
    search: str  # what the filter box matches, lower-cased


def number(value: Any, spec: str) -> str:
    """`value` formatted by `spec` when it is a number, else the text it holds (a hand-edited file)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format(value, spec)
    return str(value)


def outcome_of(record: TrajectoryRecord, metric: str) -> str:
    score = record.scores.get(metric)
    if record.status != "completed" or not isinstance(score, int | float):
        return "failed"
    return "right" if score > 0 else "wrong"


def item_view(record: TrajectoryRecord, group: str, metric: str, max_turns: int) -> ItemView:
    outcome = outcome_of(record, metric)
    texts = [str(record.item_id), str(record.question), *map(str, record.ground_truths), str(record.answer)]
    return ItemView(
        outcome=outcome,
        badge={"right": "right", "wrong": "wrong", "failed": str(record.status or "failed")}[outcome],
        group=group,
        item_id=str(record.item_id),
        question=str(record.question),
        facts=_facts(record),
        turns=_turns(record, max_turns) if record.turns else None,
        search=" ".join(texts).lower(),
    )


def _facts(record: TrajectoryRecord) -> list[tuple[str, str]]:
    scores = ", ".join(f"{name} {number(record.scores[name], '.2f')}" for name in SCORE_NAMES if name in record.scores)
    dropped = f" ({number(record.dropped_tokens, ',')} cut from the middle)" if record.dropped_tokens else ""
    rows = [
        ("question", str(record.question)),
        ("gold", " | ".join(map(str, record.ground_truths))),
        ("final answer", str(record.answer or "(none)")),
        ("scores", scores or "(not scored)"),
        ("status", f"{record.status}" + (f": {record.error}" if record.error else "")),
        ("context", f"{number(record.context_tokens, ',')} tokens{dropped}"),
    ]
    if record.reward is not None:
        advantage = "" if record.advantage is None else f", advantage {number(record.advantage, '+.3f')}"
        rows.append(("reward", number(record.reward, ".3f") + advantage))
    if record.mode:
        rows.append(("mode", str(record.mode)))
    return rows


def _turns(record: TrajectoryRecord, max_turns: int) -> list[TurnView]:
    """Each memory against the one before it (the first against nothing); past `max_turns` memory
    turns the first and last halves are shown, each still diffed against its true predecessor."""
    memories = [turn for turn in record.turns if turn.kind == "memory"]
    keep = set(range(len(memories)))
    if len(memories) > max_turns:
        head = max_turns // 2
        keep = set(range(head)) | set(range(len(memories) - (max_turns - head), len(memories)))
    views, previous = [], ""
    for index, turn in enumerate(memories):
        if index in keep:
            views.append(_memory_turn(turn, previous))
        elif index - 1 in keep:
            hidden = len(memories) - len(keep)
            views.append(TurnView("gap", text=f"{hidden} memory turns not shown (--max-turns {max_turns})"))
        previous = str(turn.text)
    views += [_final_turn(turn) for turn in record.turns if turn.kind == "final"]
    return views


def _memory_turn(turn: TurnRecord, previous: str) -> TurnView:
    runs, counts = diff_words(previous, str(turn.text))
    head = f"chunk {turn.step} · memory {turn.memory_tokens} tokens · +{counts.added} −{counts.removed} words"
    if turn.cut:
        head += " · cut by the token limit"
    if counts.capped:
        head += " · changed span too large to align word by word: shown removed and added whole"
    if turn.state_reward is not None:
        head += f" · state reward {number(turn.state_reward, '+.3f')}"
    notes = [f"recall query: {turn.recall_query}"] if turn.recall_query else []
    if turn.recalled:
        notes.append(f"recalled: {turn.recalled}")
    return TurnView("memory", head=head, runs=runs, notes=notes, cut=bool(turn.cut))


def _final_turn(turn: TurnRecord) -> TurnView:
    head = f"final answer · {turn.response_tokens} tokens" + (" · cut by the token limit" if turn.cut else "")
    return TurnView("final", head=head, text=str(turn.text), cut=bool(turn.cut))
