"""RULER general files laid out as the two tools people run write them, filled with our own planted
items (support/ruler_data.py: `planted_items`).

- `write_ruler_prepare`: NVIDIA RULER's `scripts/data/prepare.py` (commit c3f5e3b):
  `<root>/<split>/validation.jsonl`, one record a line, no `context`; `input` is the whole prompt.
  `write_ruler_own` puts it where RULER's `run.sh` does: `<root>/<length>/data/<split>/`.
- `write_memagent_merged`: MemAgent's `taskutils/memory_data/ruler_data_prepare.sh` (commit 76b7a65),
  which runs `ruler_data_prepare.py --chunk_amount 8` with the `base` template and no whitespace
  collapse: `<root>/eval_<split>_<length>.json`, one JSON array (indent 4) of the eight chunks'
  records, each chunk numbering its items from 0; `context` holds the haystack, `input` the rest.

The templates are the tools' in structure only: the fixed words the reader recognises (its own
markers, `template_markers`) where the tools have them, and our own words for every other sentence,
so no third-party prompt wording is kept here. The structure is the tools': opening words, the
haystack, the question with the query, the answer's opening words cut off into `answer_prefix` at
the last place their first 10 characters occur, worked examples before the item in `vt` and `cwe`.
`length` (and niah's `token_position_answer`) count whitespace-separated words instead of the tools'
tokenizer tokens; no reader scores them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.data.ruler_records import CHAT_CLOSINGS, TemplateMarkers, ruler_task, template_markers
from support.ruler_data import Planted


@dataclass(frozen=True)
class _Ours:
    """Our words around the reader's markers in one task's template."""

    before: str  # the opening words before the marker that ends them ({ask}: the question's first words)
    middle: str  # between the question's first and last words, with {query} where the tools put it
    answer_prefix: str  # the answer's opening words, which the tools cut off into `answer_prefix`
    tokens: int  # RULER's tokens to generate for the task (constants.py), added to `length`


_OURS = {
    "niah": _Ours("Our opening words for the haystack task. ", "{query}", " Our reply names the {w} for {query}:", 128),
    "variable_tracking": _Ours(
        "Our opening words for the chain task, about the ", "{query}", " Our reply lists the {num_v} names:", 30
    ),
    "common_words_extraction": _Ours("Our opening words for the word list task. ", "", " Our reply lists them:", 120),
    "freq_words_extraction": _Ours(
        "Our opening words for the coded text task. ", " Our words ask for them", " Our reply lists them:", 50
    ),
    "qa": _Ours(
        "{ask} our documents, as our opening words say.\n\n",
        " our documents, in a few words.\n\nOur question: {query}",
        " Our reply:",
        32,
    ),
}
# One chat wrapper: our own opening text, and a closing the reader knows (Llama 3's).
_CHAT_CLOSING = next(closing for closing in CHAT_CLOSINGS if closing.startswith("<|eot_id|>"))
MODEL_TEMPLATES = {"base": ("", ""), "chat": ("Our chat opening for the user's turn.\n\n", _CHAT_CLOSING)}
CHUNK_AMOUNT = 8  # ruler_data_prepare.sh passes --chunk_amount 8
VT_HOPS = 4  # synthetic.yaml: num_hops 4, so a chain names five variables


def _collapse(text: str) -> str:
    """RULER's --remove_newline_tab (niah.py:276 and the same line in every task script)."""
    return " ".join(text.replace("\n", " ").replace("\t", " ").strip().split())


def _singular(split: str) -> bool:
    """niah.py:193: one query and one value make the template singular."""
    return split not in ("niah_multivalue", "niah_multiquery")


def _word(split: str) -> str:
    """What fills a marker's `{w}`: niah's value type (singular where niah.py:193-198 makes the
    template singular), cwe's count of words asked for."""
    if ruler_task(split) == "common_words_extraction":
        return "10"
    kind = "uuids" if split in ("niah_single_3", "niah_multikey_3") else "numbers"
    return kind[:-1] if _singular(split) else kind


def _question(split: str, markers: TemplateMarkers) -> str:
    """The question's template: its first words (niah: the reader lists the singular wording first,
    the plural last), our middle, its last words."""
    start = markers.question_starts[0 if _singular(split) else -1]
    return start + _OURS[ruler_task(split)].middle + (markers.question_end or "")


def _task_template(split: str) -> str:
    """RULER's task template in structure (constants.py): opening, {context}, separator, question."""
    markers = template_markers(split)
    before = _OURS[ruler_task(split)].before.replace("{ask}", markers.question_starts[0])
    return before + markers.opening + "{context}" + markers.separator + _question(split, markers)


def _fill(split: str, template: str, item: Planted) -> str:
    return template.format(context=item.document, query=item.query, w=_word(split), num_v=VT_HOPS + 1)


def ruler_question(split: str, query: str) -> str:
    """The question RULER's template asks after the haystack, with `query` filled in."""
    return _fill(split, _question(split, template_markers(split)), Planted("", query, []))


def _ruler_input(split: str, item: Planted, example: Planted, model: str) -> str:
    """The prompt before collapsing and cutting: prepare.py:101 and the task scripts' examples."""
    task_template, answer_prefix = _task_template(split), _OURS[ruler_task(split)].answer_prefix
    opening, closing = MODEL_TEMPLATES[model]
    text = _fill(split, opening + task_template + closing + answer_prefix, item)
    if split == "vt":  # variable_tracking.py:262-265, the example made without the chat template
        shown = _fill(split, task_template + answer_prefix, example) + " " + " ".join(example.outputs) + "\n"
        cut = text.index(task_template[:20])
        text = text[:cut] + shown + "\n" + text[cut:]
    elif split == "cwe":  # common_words_extraction.py:115-129, one worked example (--num_fewshot 1)
        words = " ".join(f"{number}. {word}" for number, word in enumerate(example.outputs, start=1))
        shown = _fill(split, opening + task_template + closing + answer_prefix, example)
        text = shown + " " + words + "\n" + text
    return text


def ruler_record(split: str, index: int, item: Planted, example: Planted, model: str, collapse: bool) -> dict:
    """One validation.jsonl record as the task scripts write it (niah.py:275-291 and alike)."""
    ours = _OURS[ruler_task(split)]
    text = _ruler_input(split, item, example, model)
    text = _collapse(text) if collapse else text
    length = len(text.split()) + ours.tokens
    cut = text.rfind(_fill(split, ours.answer_prefix, item)[:10])
    text, prefix = text[:cut], text[cut:]
    record = {"index": index, "input": text, "outputs": item.outputs, "length": length}
    record |= {"length_w_model_temp": length, "answer_prefix": prefix}
    if split.startswith("niah"):
        position = text.find(item.outputs[0])  # a character position: it repeats across items
        return record | {"index": position, "token_position_answer": len(text[:position].split())}
    return record


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


def write_ruler_own(
    root: Path, split: str, length: int, items: Sequence[Planted | tuple[str, str, Sequence[str]]]
) -> Path:
    """`<root>/<length>/data/<split>/validation.jsonl`, where RULER's run.sh has prepare.py write
    (`--save_dir <results>/<length>/data`), with the base template and whitespace kept. An item is
    a Planted or (document, query, outputs); for qa_1 / qa_2 the query is the question."""
    planted = [item if isinstance(item, Planted) else Planted(item[0], item[1], list(item[2])) for item in items]
    return write_ruler_prepare(root / str(length) / "data", split, planted)


def _memagent_input(split: str, item: Planted) -> str:
    """MemAgent's templates are RULER's without {context}, whitespace runs made single spaces; its
    niah one leaves out the sentence before the haystack, its qa one asks only the query after the
    opening words."""
    task, markers = ruler_task(split), template_markers(split)
    before = _OURS[task].before.replace("{ask}", markers.question_starts[0])
    if task == "qa":
        return _collapse(before) + " " + item.query
    opening = _collapse(before if task == "niah" else before + markers.opening)
    return opening + " " + _fill(split, _question(split, markers), item)


def memagent_record(split: str, index: int, item: Planted) -> dict:
    """One record of MemAgent's task scripts (synthetic/niah.py:248-255, variable_tracking.py:187-194,
    common_words_extraction.py:139-146, freq_words_extraction.py:132-139, qa.py:229-236)."""
    ours, text = _OURS[ruler_task(split)], _memagent_input(split, item)
    record = {"index": index, "input": text, "context": item.document, "outputs": item.outputs}
    record["answer_prefix"] = _fill(split, ours.answer_prefix, item)
    if not split.startswith("qa"):  # qa.py:235 leaves length out
        record["length"] = len(f"{text}{item.document}".split()) + ours.tokens
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
