"""Prompt rows in prepare_data's shape, made by our own code from QA rows in HotpotQA's layout."""

from __future__ import annotations

from mem_agent.data.contexts import render_context
from mem_agent.data.qa_rows import parse_row
from mem_agent.data.train_rows import output_row


def trainer_rows(qa_rows: list[dict], count: int) -> list[dict]:
    """The first `count` questions: question as prompt, the rendered documents in metadata."""
    rows = []
    for position, raw in enumerate(qa_rows[:count]):
        row = parse_row(raw, f"row {position}", position)
        rows.append(output_row(row, render_context(list(row.paragraphs)), len(row.paragraphs)))
    return rows
