"""Which questions a page holds: what was asked for (`--only`, `--lengths`, `--ids`), then, past
`--max-items`, the failures first, and a sentence saying what was left out.

A page capped at the first ids would hide exactly what a person opens it for: on a 150-question
file, 55 of 76 wrong answers. So the cap keeps failed items, then wrong answers, then right ones,
taking each kind from every section (length or rollout) in turn, and the page is in run order.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mem_agent.common.usage import UsageError
from mem_agent.observability.page_parts import outcome_of
from mem_agent.observability.run_folders import RunView
from mem_agent.observability.trajectory_records import TrajectoryRecord

OUTCOMES = ("failed", "wrong", "partial", "right")  # the order the cap keeps them in


@dataclass(frozen=True)
class ViewChoice:
    """What the page shows: one outcome, some lengths, some ids (`ID` or `LENGTH:ID`); empty: all.
    A length is a section's label (`50`, `niah_single_1_8192`, `longbench_qasper`) or a length in
    its suite's unit (`8192`: every RULER split at 8192 tokens)."""

    only: str | None = None
    lengths: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()


def metric_of(run: RunView, section: str) -> str:
    """What decides right or wrong in a section: the training reward's rule for training records,
    an evaluation section's headline metric (eval_sections.py), else sub_em."""
    if run.kind == "training" or all(r.source == "train" for r in run.records):
        return "strict"
    found = run.sections.get(section)
    return found.metric if found is not None else "sub_em"


def check_choice(run: RunView, choice: ViewChoice) -> None:
    """UsageError: an outcome that is none of OUTCOMES, or a length the run does not hold."""
    if choice.only is not None and choice.only not in OUTCOMES:
        raise UsageError(f"--only {choice.only} must be one of: {', '.join(OUTCOMES)}")
    if choice.lengths and run.kind == "training":
        raise UsageError("--lengths picks lengths of an evaluation; a training run has rollouts")
    unknown = [value for value in choice.lengths if not any(_at(run, name, value) for name in run.groups)]
    if unknown:
        raise UsageError(f"--lengths {' '.join(unknown)}: not in {run.path} (it holds {', '.join(run.groups)})")


def _at(run: RunView, section: str, value: str) -> bool:
    """Whether `--lengths value` names this section: its label, or its length."""
    found = run.sections.get(section)
    return value == section or (found is not None and found.length is not None and value == str(found.length))


def _wanted(run: RunView, section: str, record: TrajectoryRecord, outcome: str, choice: ViewChoice) -> bool:
    if choice.only is not None and outcome != choice.only:
        return False
    if choice.lengths and not any(_at(run, section, value) for value in choice.lengths):
        return False
    if choice.ids:
        return record.item_id in choice.ids or f"{section}:{record.item_id}" in choice.ids
    return True


@dataclass(frozen=True)
class Selection:
    chosen: list[tuple[str, TrajectoryRecord]]  # (section, record), in page order
    notes: list[str]  # what was asked for and what the cap left out


def select(run: RunView, choice: ViewChoice, limit: int) -> Selection:
    """The questions asked for, at most `limit` of them, failures first (see the module's docstring)."""
    sections = list(run.groups.items())
    if run.kind == "training":
        sections.reverse()  # the latest rollouts first: what a person looks at while it trains
    outcomes = {id(r): outcome_of(r, metric_of(run, name)) for name, group in sections for r in group}
    wanted = [[(name, r) for r in group if _wanted(run, name, r, outcomes[id(r)], choice)] for name, group in sections]
    matched = [pair for group in wanted for pair in group]
    notes = _asked_for(run, choice, matched)
    if len(matched) <= limit:
        return Selection(matched, notes)
    kept: list[tuple[str, TrajectoryRecord]] = []
    for outcome in OUTCOMES:
        per_section = [[pair for pair in group if outcomes[id(pair[1])] == outcome] for group in wanted]
        rounds = itertools.zip_longest(*per_section)
        kept += [pair for row in rounds for pair in row if pair is not None][: limit - len(kept)]
    position = {id(pair[1]): index for index, pair in enumerate(matched)}
    kept.sort(key=lambda pair: position[id(pair[1])])
    notes.append(_left_out(matched, kept, outcomes, limit))
    return Selection(kept, notes)


def _asked_for(run: RunView, choice: ViewChoice, matched: Sequence[tuple[str, TrajectoryRecord]]) -> list[str]:
    asked = []
    if choice.only:
        asked.append(f"--only {choice.only}")
    if choice.lengths:
        asked.append(f"--lengths {' '.join(choice.lengths)}")
    if choice.ids:
        asked.append(f"--ids {' '.join(choice.ids)}")
    if not asked:
        return []
    notes = [f"{len(matched)} of {len(run.records)} questions match {' '.join(asked)}"]
    if choice.ids:
        found = {r.item_id for _, r in matched} | {f"{name}:{r.item_id}" for name, r in matched}
        missing = [item for item in choice.ids if item not in found]
        if missing:
            notes.append(f"--ids not found in this run: {' '.join(missing)}")
    return notes


def _left_out(
    matched: Sequence[tuple[str, TrajectoryRecord]],
    kept: Sequence[tuple[str, TrajectoryRecord]],
    outcomes: dict[int, str],
    limit: int,
) -> str:
    total = Counter(outcomes[id(r)] for _, r in matched)
    shown = Counter(outcomes[id(r)] for _, r in kept)
    parts = [f"{shown[o]} of {total[o]} {o}" for o in OUTCOMES if total[o]]
    return (
        f"showing {len(kept)} of {len(matched)} questions (--max-items {limit}), failures first: {', '.join(parts)};"
        " --only, --lengths or --ids show the others"
    )
