"""The settings line a page opens with: what was run, read from the evaluation's summary.json.

Two runs that differ only in a setting must not give pages that differ only by folder name, so the
page shows the model, the mode, the chunk size, the memory and answer limits (or, reading
directly, the window), the sampling temperature and top_p, and each eval file's sha256 (its first
12 hex digits: enough to tell files apart), and an index-layout file's corpus's. A fact the run
did not record is left out, except the model, shown as "unknown" (with its fingerprint's first 12
hex digits where recorded); a value that is not what the evaluator writes (a hand-edited file) is
shown as the text it holds.
"""

from __future__ import annotations

from typing import Any

from mem_agent.evaluation.model_facts import describe_model

# (label, the fact's path in summary.json's `run`)
SETTINGS = (
    ("tokenizer", ("tokenizer",)),
    ("mode", ("mode",)),
    ("chunk tokens", ("config", "chunk_tokens")),
    ("memory limit", ("config", "max_memory_tokens")),
    ("answer limit", ("config", "max_final_tokens")),
    ("window", ("direct", "context_window")),
    ("temperature", ("sampling", "temperature")),
    ("top_p", ("sampling", "top_p")),
)


def run_settings(summary: Any) -> list[tuple[str, str]]:
    """(label, value) of each setting the latest run recorded, then one entry per eval file's sha256."""
    run = summary.get("run") if isinstance(summary, dict) else None
    if not isinstance(run, dict):
        return []
    shown = [("model", describe_model(run.get("model")))]  # "unknown" where not recorded, never left out
    for label, path in SETTINGS:
        value: Any = run
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and value != "":
            shown.append((label, str(value)))
    for key, shown_as in (("data_sha256", "sha256 eval_{}"), ("corpus_sha256", "sha256 corpus of eval_{}")):
        digests = run.get(key)  # corpus_sha256: index-layout files only, whose text is the corpus's
        if isinstance(digests, dict):
            shown += [(shown_as.format(name), str(digest)[:12]) for name, digest in digests.items()]
    return shown
