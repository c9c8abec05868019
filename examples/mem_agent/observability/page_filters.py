"""What the page's own filters offer and match: a suite or one of its tasks (a RULER split, a
LongBench dataset), and a length in its suite's unit; and the line that says which metric scores
each suite.

A task or a length is keyed with its suite (`ruler/niah_single_1`, `ruler/8192`,
`ruler_hqa/50`), because names repeat across suites: LongBench's `hotpotqa` is not RULER-HQA's,
and 8192 tokens are not 8192 documents. The page's script compares these keys and nothing else,
so what the filters match is decided here, where a test reads it.
"""

from __future__ import annotations

from collections import Counter

from mem_agent.observability.eval_sections import Section
from mem_agent.observability.page_selection import metric_of
from mem_agent.observability.run_folders import RunView


def item_keys(run: RunView, section: str) -> dict[str, str]:
    """The keys one question is filtered by: its suite, `suite/task` and `suite/length` ("" where
    it has none, or the run is no evaluation)."""
    found = run.sections.get(section)
    if found is None:
        return {"suite": "", "task": "", "length": ""}
    length = "" if found.length is None else f"{found.suite}/{found.length}"
    return {"suite": found.suite, "task": f"{found.suite}/{found.task}", "length": length}


def filter_options(run: RunView) -> dict[str, list[tuple[str, str]]]:
    """(value, label) of each choice of the task and length filters; a filter with fewer than two
    choices has none (the page leaves it out)."""
    sections = list(run.sections.values())
    suites = list(dict.fromkeys(section.suite for section in sections))
    tasks: list[tuple[str, str]] = []
    for suite in suites:
        own = list(dict.fromkeys(s.task for s in sections if s.suite == suite))
        title = next(s.title for s in sections if s.suite == suite)
        if len(own) > 1:
            tasks.append((suite, f"{title}: every task"))
        tasks += [(f"{suite}/{task}", f"{title}: {task}") for task in own]
    lengths = list(
        dict.fromkeys((f"{s.suite}/{s.length}", f"{s.title} {s.length_text}") for s in sections if s.length is not None)
    )
    return {
        "tasks": tasks if len(tasks) > 1 else [],
        "lengths": lengths if len(lengths) > 1 else [],
    }


def metric_line(run: RunView) -> str:
    """Which metric decides right, partial or wrong: per suite, its headline, and the tasks scored
    by another one named (RULER: string_match_all; qa_1, qa_2: sub_em)."""
    if not run.sections:
        return metric_of(run, "")
    parts = []
    for suite in dict.fromkeys(section.suite for section in run.sections.values()):
        own = [section for section in run.sections.values() if section.suite == suite]
        parts.append(_suite_metrics(own))
    return "; ".join(parts)


def _suite_metrics(sections: list[Section]) -> str:
    by_task = {section.task: section.metric for section in sections}
    main, _ = Counter(by_task.values()).most_common(1)[0]
    others: dict[str, list[str]] = {}
    for task, metric in by_task.items():
        if metric != main:
            others.setdefault(metric, []).append(task)
    line = f"{sections[0].title} {main}"
    if others:
        line += " (" + "; ".join(f"{', '.join(tasks)}: {metric}" for metric, tasks in others.items()) + ")"
    return line
