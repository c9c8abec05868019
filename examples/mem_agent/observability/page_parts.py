"""What the viewer's template shows of one question: plain values, never markup.

Everything here is text from a run (questions, documents' words in memories, model output, and
numbers read back from files that anyone may have edited), so nothing is formatted as HTML in
Python: the template (`page/viewer.html.j2`) writes the markup and autoescapes every value. A field
that should hold a number but does not is shown as the text it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mem_agent.agent.scoring import answer_region, extract_boxed
from mem_agent.observability.trajectory_records import TrajectoryRecord, TurnRecord, gold_position
from mem_agent.observability.word_diff import diff_words


@dataclass(frozen=True)
class TurnView:
    """One row of a question's turn list: a memory turn, the final answer, or a gap left out."""

    kind: str  # "memory" | "final" | "gap"
    head: str = ""  # the line above the text: chunk, tokens, words changed, flags
    text: str = ""  # the final answer; a gap's sentence
    runs: list[tuple[str, str]] = field(default_factory=list)  # memory: (same|ins|del, text), see word_diff
    notes: list[str] = field(default_factory=list)  # ReMemR1: the recall query and what it recalled
    cut: bool = False
    gold: list[str] = field(default_factory=list)  # memory: "chunk", "memory", "entered", "left"
    excerpt: list[tuple[str, str]] = field(default_factory=list)  # the chunk's excerpt: (text|gold, text)


@dataclass(frozen=True)
class RowFacts:
    """What a collapsed row shows, enough to triage without opening it; the numbers also sort rows."""

    gold: str
    boxed: str  # the final answer's \\boxed{} content, "(none)" without one
    score: float | None  # the metric deciding right/wrong; None: not scored
    chunks: int | None  # memory turns; None: unknown (no turn records and no count)
    cut: int | None  # memory turns cut by the token limit; None: no turn records
    context_tokens: int | None
    dropped_tokens: int  # tokens cut from the context's middle (the direct baseline's window)
    prompt_group: str = ""  # training: the GRPO group, its rewards and whether they differ


@dataclass(frozen=True)
class ItemView:
    outcome: str  # right | partial | wrong | failed: the badge's colour and the outcome filter
    badge: str
    group: str  # the page's section: a length label or a rollout
    item_id: str
    question: str
    row: RowFacts
    facts: list[tuple[str, str]]
    turns: list[TurnView] | None  # None: the run kept no turn records for this question
    search: str  # what the filter box matches, lower-cased


def number(value: Any, spec: str) -> str:
    """`value` formatted by `spec` when it is a number, else the text it holds (a hand-edited file)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format(value, spec)
    return str(value)


def outcome_of(record: TrajectoryRecord, metric: str) -> str:
    """By the section's headline metric: all of it right, some (a niah_multivalue answer that found
    1 of 4 values, a LongBench F1 of 0.4) partial, none wrong; no score at all failed."""
    score = record.scores.get(metric)
    if record.status != "completed" or not isinstance(score, int | float) or isinstance(score, bool):
        return "failed"
    if score >= 1:
        return "right"
    return "partial" if score > 0 else "wrong"


def _badge(record: TrajectoryRecord, outcome: str, metric: str) -> str:
    """The badge's words: a partial score as its number, an empty final answer named."""
    if outcome == "failed":
        return str(record.status or "failed")
    if outcome == "partial":
        return f"partial {record.scores[metric]:.2f}"
    if outcome == "wrong" and isinstance(record.extra, dict) and record.extra.get("empty") is True:
        return "wrong: empty"
    return outcome


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def row_facts(record: TrajectoryRecord, metric: str) -> RowFacts:
    memories = [turn for turn in record.turns if turn.kind == "memory"]
    extra = record.extra if isinstance(record.extra, dict) else {}
    score = record.scores.get(metric)
    boxed = extract_boxed(answer_region(record.answer)) if isinstance(record.answer, str) else None
    return RowFacts(
        gold=" | ".join(map(str, record.ground_truths)),
        boxed="(none)" if boxed is None else boxed,
        score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
        chunks=len(memories) if record.turns else _whole(extra.get("num_chunks")),
        cut=sum(bool(turn.cut) for turn in memories) if record.turns else None,
        context_tokens=_whole(record.context_tokens),
        dropped_tokens=_whole(record.dropped_tokens) or 0,
        prompt_group=_prompt_group(record),
    )


def _prompt_group(record: TrajectoryRecord) -> str:
    """Training: the prompt's GRPO group and the rewards of all its trajectories in the rollout
    (the log hook keeps them on each record): a group whose rewards are all equal has no
    contrast, and its advantages, all 0, teach nothing."""
    rewards = record.extra.get("group_rewards") if isinstance(record.extra, dict) else None
    if record.group_index is None or isinstance(record.group_index, bool):
        return ""
    line = f"group {record.group_index}"
    if isinstance(rewards, list) and rewards and all(_real(r) is not None for r in rewards):
        values = [float(r) for r in rewards]
        spread = max(values) - min(values)
        contrast = "contrast" if spread > 0 else "no contrast"
        line += f" · rewards {' '.join(f'{v:g}' for v in values)} · spread {spread:.2f} · {contrast}"
    return line


def _real(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def item_view(record: TrajectoryRecord, group: str, metric: str, max_turns: int) -> ItemView:
    outcome = outcome_of(record, metric)
    texts = [str(record.item_id), str(record.question), *map(str, record.ground_truths), str(record.answer)]
    return ItemView(
        outcome=outcome,
        badge=_badge(record, outcome, metric),
        group=group,
        item_id=str(record.item_id),
        question=str(record.question),
        row=row_facts(record, metric),
        facts=_facts(record, metric),
        turns=_turns(record, max_turns, [str(g) for g in record.ground_truths]) if record.turns else None,
        search=" ".join(texts).lower(),
    )


def row_line(row: RowFacts, metric: str) -> list[tuple[str, str]]:
    """The collapsed row's facts as (name, value) pairs, in the order shown."""
    pairs = [("gold", row.gold), ("answer", row.boxed)]
    pairs.append((metric, "-" if row.score is None else f"{row.score:.2f}"))
    pairs.append(("chunks", "-" if row.chunks is None else str(row.chunks)))
    pairs.append(("cut memories", "-" if row.cut is None else str(row.cut)))
    if row.dropped_tokens and row.context_tokens:
        pairs.append(("context cut", f"{100 * row.dropped_tokens / row.context_tokens:.0f}%"))
    return pairs


def _facts(record: TrajectoryRecord, metric: str) -> list[tuple[str, str]]:
    names = sorted(record.scores, key=lambda name: name != metric)  # the headline first
    scores = ", ".join(f"{name} {number(record.scores[name], '.2f')}" for name in names)
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


def _turns(record: TrajectoryRecord, max_turns: int, golds: list[str]) -> list[TurnView]:
    """Each memory against the one before it (the first against nothing); past `max_turns` memory
    turns the first and last halves are shown, each still diffed against its true predecessor.
    Each memory says whether a gold answer is in its chunk and in it, and where one entered or
    left the memory."""
    memories = [turn for turn in record.turns if turn.kind == "memory"]
    keep = set(range(len(memories)))
    if len(memories) > max_turns:
        head = max_turns // 2
        keep = set(range(head)) | set(range(len(memories) - (max_turns - head), len(memories)))
    views, previous, held = [], "", False
    for index, turn in enumerate(memories):
        holds = gold_position(str(turn.text), golds) is not None
        if index in keep:
            views.append(_memory_turn(turn, previous, _gold_marks(turn, holds, held), golds))
        elif index - 1 in keep:
            hidden = len(memories) - len(keep)
            views.append(TurnView("gap", text=f"{hidden} memory turns not shown (--max-turns {max_turns})"))
        previous, held = str(turn.text), holds
    views += [_final_turn(turn) for turn in record.turns if turn.kind == "final"]
    return views


def _gold_marks(turn: TurnRecord, holds: bool, held: bool) -> list[str]:
    marks = ["chunk"] if turn.gold_in_chunk is True else []
    marks += ["memory"] if holds else []
    if holds != held:
        marks.append("entered" if holds else "left")
    return marks


def _excerpt_runs(text: str, golds: list[str]) -> list[tuple[str, str]]:
    """The excerpt as runs, the first gold answer in it marked."""
    position = gold_position(text, golds)
    if position is None:
        return [("text", text)]
    length = max(len(g) for g in golds if g.strip() and text.casefold().find(g.casefold()) == position)
    return [
        ("text", text[:position]),
        ("gold", text[position : position + length]),
        ("text", text[position + length :]),
    ]


def _memory_turn(turn: TurnRecord, previous: str, marks: list[str], golds: list[str]) -> TurnView:
    runs, counts = diff_words(previous, str(turn.text))
    where = ""
    if isinstance(turn.chunk_start, int) and isinstance(turn.chunk_end, int):
        where = f" (document tokens {turn.chunk_start:,}–{turn.chunk_end:,})"
    head = f"chunk {turn.step}{where} · memory {turn.memory_tokens} tokens · +{counts.added} −{counts.removed} words"
    if turn.cut:
        head += " · cut by the token limit"
    if counts.capped:
        head += " · changed span too large to align word by word: shown removed and added whole"
    if turn.state_reward is not None:
        head += f" · state reward {number(turn.state_reward, '+.3f')}"
    notes = [f"recall query: {turn.recall_query}"] if turn.recall_query else []
    if turn.recalled:
        notes.append(f"recalled: {turn.recalled}")
    excerpt = (
        _excerpt_runs(turn.chunk_excerpt, golds) if isinstance(turn.chunk_excerpt, str) and turn.gold_in_chunk else []
    )
    return TurnView("memory", head=head, runs=runs, notes=notes, cut=bool(turn.cut), gold=marks, excerpt=excerpt)


def _final_turn(turn: TurnRecord) -> TurnView:
    head = f"final answer · {turn.response_tokens} tokens" + (" · cut by the token limit" if turn.cut else "")
    return TurnView("final", head=head, text=str(turn.text), cut=bool(turn.cut))
