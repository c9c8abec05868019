"""The training row layout the hooks read: the question as the prompt, the first answer as the label,
and the long context with every ground truth in the metadata (where slime and vime carry it)."""

from __future__ import annotations

from typing import Any

from mem_agent.data.authors_layout import AuthorsRow, Layout
from mem_agent.data.qa_rows import QaRow


def output_row(row: QaRow, context: str, num_docs: int) -> dict[str, Any]:
    metadata = {"context": context, "ground_truth": list(row.answers), "num_docs": num_docs, "id": row.row_id}
    return {"prompt": row.question, "label": row.answers[0], "metadata": metadata}


def authors_output_row(row: AuthorsRow, source: str, index: int) -> dict[str, Any]:
    """An authors' row as published: their context and every ground truth, and where it came from
    (file and row, so a training row can be traced back to the published one)."""
    metadata: dict[str, Any] = {
        "context": row.context,
        "ground_truth": list(row.answers),
        "num_docs": row.num_docs,
        "id": row.row_id,
        "source": {"layout": Layout.AUTHORS.value, "file": source, "row": index, "data_source": row.data_source},
    }
    return {"prompt": row.question, "label": row.answers[0], "metadata": metadata}
