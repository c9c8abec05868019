"""RULER general files laid out exactly as the two tools people run write them, filled with our own
planted items (support/ruler_data.py: `planted_items`).

- `write_ruler_prepare`: NVIDIA RULER's `scripts/data/prepare.py` (commit c3f5e3b):
  `<root>/<split>/validation.jsonl`, one record a line, no `context`; `input` is the whole prompt.
- `write_memagent_merged`: MemAgent's `taskutils/memory_data/ruler_data_prepare.sh` (commit 76b7a65),
  which runs `ruler_data_prepare.py --chunk_amount 8` with the `base` template and no whitespace
  collapse: `<root>/eval_<split>_<length>.json`, one JSON array (indent 4) of the eight chunks'
  records, each chunk numbering its items from 0; `context` holds the haystack, `input` the rest.

The task templates below are the tools' own text, kept as data: a layout is only exact with them
(their wording is what a reader has to recognise). `length` (and niah's `token_position_answer`)
count whitespace-separated words instead of the tools' tokenizer tokens; no reader scores them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from mem_agent.data.ruler_records import ruler_task
from support.ruler_data import Planted

# RULER scripts/data/synthetic/constants.py:24-53: (template, answer prefix, tokens to generate).
RULER_TASKS = {
    "niah": (
        "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
        "I will quiz you about the {type_needle_v} afterwards.\n{context}\n"
        "What are all the special magic {type_needle_v} for {query} mentioned in the provided text?",
        " The special magic {type_needle_v} for {query} mentioned in the provided text are",
        128,
    ),
    "variable_tracking": (
        "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
        "Question: Find all variables that are assigned the value {query} in the text above.",
        " Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are "
        "assigned the value {query}, they are: ",
        30,
    ),
    "common_words_extraction": (
        "Below is a numbered list of words. In these words, some appear more often than others. "
        "Memorize the ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the "
        "above list?",
        " Answer: The top 10 words that appear most often in the list are:",
        120,
    ),
    "freq_words_extraction": (
        "Read the following coded text and track the frequency of each coded word. Find the three most frequently "
        "appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore the dots '....'. "
        "What are the three most frequently appeared words in the above coded text?",
        " Answer: According to the coded text above, the three most frequently appeared words are:",
        50,
    ),
    "qa": (
        "Answer the question based on the given documents. Only give me the answer and do not output any other "
        "words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the given "
        "documents. Only give me the answer and do not output any other words.\n\nQuestion: {query}",
        " Answer:",
        32,
    ),
}
# RULER scripts/data/template.py:16 (base) and :32 (meta-llama3, the chat template used here).
MODEL_TEMPLATES = {
    "base": "{task_template}",
    "meta-llama3": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{task_template}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
}
# MemAgent taskutils/memory_data/synthetic/constants.py:24-53: its templates hold no {context}.
MEMAGENT_TASKS = {
    "niah": (
        "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
        "What are all the special magic {type_needle_v} for {query} mentioned in the provided text?",
        RULER_TASKS["niah"][1],
    ),
    "variable_tracking": (
        "Memorize and track the chain(s) of variable assignment hidden in the following text. "
        "Question: Find all variables that are assigned the value {query} in the text above.",
        RULER_TASKS["variable_tracking"][1].replace("assigned the value", "assgined the value"),
    ),
    "common_words_extraction": (
        "Below is a numbered list of words. In these words, some appear more often than others. "
        "Memorize the ones that appear most often. Question: What are the 10 most common words in the above list?",
        RULER_TASKS["common_words_extraction"][1],
    ),
    "freq_words_extraction": (
        "Read the following coded text and track the frequency of each coded word. Find the three most frequently "
        "appeared coded words. Question: Do not provide any explanation. Please ignore the dots '....'. "
        "What are the three most frequently appeared words in the above coded text?",
        RULER_TASKS["freq_words_extraction"][1],
    ),
    "qa": ("Answer the question based on the given documents. {query}", " Answer:"),
}
CHUNK_AMOUNT = 8  # ruler_data_prepare.sh passes --chunk_amount 8
VT_HOPS = 4  # synthetic.yaml: num_hops 4, so a chain names five variables


def _collapse(text: str) -> str:
    """RULER's --remove_newline_tab (niah.py:276 and the same line in every task script)."""
    return " ".join(text.replace("\n", " ").replace("\t", " ").strip().split())


def _singular(split: str) -> bool:
    """niah.py:193: one query and one value make the template singular."""
    return split not in ("niah_multivalue", "niah_multiquery")


def _niah_wording(split: str, template: str, type_v: str) -> tuple[str, str]:
    """niah.py:193-198: the single-value rewording of the whole template, and the value type."""
    if not _singular(split):
        return template, type_v
    for old, new in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
        template = template.replace(old, new)
    return template, type_v[:-1]


def _value_type(split: str) -> str:
    return "uuids" if split in ("niah_single_3", "niah_multikey_3") else "numbers"


def _fill(split: str, template: str, item: Planted) -> str:
    task = ruler_task(split)
    if task == "niah":
        template, type_v = _niah_wording(split, template, _value_type(split))
        return template.format(type_needle_v=type_v, context=item.document, query=item.query)
    return template.format(context=item.document, query=item.query, num_v=VT_HOPS + 1)


def ruler_question(split: str, query: str) -> str:
    """The question RULER's template asks after the haystack, with `query` filled in."""
    template = RULER_TASKS[ruler_task(split)][0]
    after = template.split("{context}")[1].lstrip("\n")
    return _fill(split, after, Planted("", query, []))


def _ruler_input(split: str, item: Planted, example: Planted, model: str) -> str:
    """The prompt before collapsing and cutting: prepare.py:101 and the task scripts' examples."""
    task_template, answer_prefix, _ = RULER_TASKS[ruler_task(split)]
    full = MODEL_TEMPLATES[model].format(task_template=task_template) + answer_prefix
    text = _fill(split, full, item)
    if split == "vt":  # variable_tracking.py:262-265, the example made without the chat template
        shown = _fill(split, task_template + answer_prefix, example) + " " + " ".join(example.outputs) + "\n"
        cut = text.index(task_template[:20])
        text = text[:cut] + shown + "\n" + text[cut:]
    elif split == "cwe":  # common_words_extraction.py:115-129, one worked example (--num_fewshot 1)
        words = " ".join(f"{number}. {word}" for number, word in enumerate(example.outputs, start=1))
        text = _fill(split, full, example) + " " + words + "\n" + text
    return text


def ruler_record(split: str, index: int, item: Planted, example: Planted, model: str, collapse: bool) -> dict:
    """One validation.jsonl record as the task scripts write it (niah.py:275-291 and alike)."""
    _, answer_prefix, tokens = RULER_TASKS[ruler_task(split)]
    text = _ruler_input(split, item, example, model)
    text = _collapse(text) if collapse else text
    length = len(text.split()) + tokens
    cut = text.rfind(answer_prefix[:10])
    text, prefix = text[:cut], text[cut:]
    if split.startswith("niah"):
        position = text.find(item.outputs[0])  # a character position: it repeats across items
        record = {"index": position, "input": text, "outputs": item.outputs, "length": length}
        record |= {"length_w_model_temp": length, "answer_prefix": prefix}
        return record | {"token_position_answer": len(text[:position].split())}
    record = {"index": index, "input": text, "outputs": item.outputs, "length": length}
    return record | {"length_w_model_temp": length, "answer_prefix": prefix}


def write_ruler_prepare(
    root: Path, split: str, items: Sequence[Planted], model: str = "base", collapse: bool = False
) -> Path:
    """`<root>/<split>/validation.jsonl` as prepare.py writes it (manifest_utils.py: ASCII JSON, one a
    line). Each vt / cwe item's worked example is the next item."""
    path = root / split / "validation.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for index, item in enumerate(items):
            example = items[(index + 1) % len(items)]
            handle.write(json.dumps(ruler_record(split, index, item, example, model, collapse)) + "\n")
    return path


def memagent_record(split: str, index: int, item: Planted) -> dict:
    """One record of MemAgent's task scripts (synthetic/niah.py:248-255, variable_tracking.py:187-194,
    common_words_extraction.py:139-146, freq_words_extraction.py:132-139, qa.py:229-236)."""
    task = ruler_task(split)
    template, answer_prefix = MEMAGENT_TASKS[task]
    if task == "niah":
        worded, type_v = _niah_wording(split, template, _value_type(split))
        text = worded.format(type_needle_v=type_v, query=item.query)
        answer_prefix = answer_prefix.format(type_needle_v=type_v, query=item.query)
    elif task == "variable_tracking":
        text = template.format(query=item.query, num_v=VT_HOPS + 1)
        answer_prefix = answer_prefix.format(query=item.query, num_v=VT_HOPS + 1)
    else:
        text = template if task == "freq_words_extraction" else template.format(query=item.query)
    record = {"index": index, "input": text, "context": item.document, "outputs": item.outputs}
    record["answer_prefix"] = answer_prefix
    if task != "qa":  # qa.py:235 leaves length out
        record["length"] = len(f"{text}{item.document}".split()) + RULER_TASKS[task][2]
    return record


def write_memagent_merged(root: Path, split: str, length: int, items: Sequence[Planted]) -> Path:
    """`<root>/eval_<split>_<length>.json` as ruler_data_prepare.py:144-170 merges its chunks: the
    chunks' record lists, one after another (here in chunk order; the tool's glob gives no order),
    dumped as one JSON array with indent 4."""
    sizes = [len(items) // CHUNK_AMOUNT + (1 if i < len(items) % CHUNK_AMOUNT else 0) for i in range(CHUNK_AMOUNT)]
    records, start = [], 0
    for size in sizes:
        records += [memagent_record(split, index, item) for index, item in enumerate(items[start : start + size])]
        start += size
    path = root / f"eval_{split}_{length}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=4), encoding="utf-8")
    return path
