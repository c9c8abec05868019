"""The document and the question inside one of RULER's own prompts (`prepare.py`'s files).

NVIDIA's RULER writes `<save_dir>/<split>/validation.jsonl` with no `context` field: a record's
`input` is the whole prompt, the task's template with the haystack and the query filled in, maybe
wrapped in a chat template, and with the answer's opening words cut off into `answer_prefix`. The
memory agent needs the haystack (which it reads in chunks) apart from the question (which it asks at
the end), so `split_ruler_input` takes the prompt apart again.

The rule. Every task template is fixed text, then the haystack, then a question of fixed words
(the query filled into it). The haystack is what lies between the end of the template's opening
words and the start of the question; the question runs from its first fixed words to its last
(`qa_*`: to the end of the prompt, since it ends with the query). Found as:

- the question: the **last** place its opening words follow a separator (the newlines after the
  haystack), so a haystack that happens to hold them cannot move it;
- the opening: the **first** place before that question, except for `vt` and `cwe`, where RULER
  puts worked examples (whole prompts with their answers) before the item, and the **last** one is
  the item's own. The examples are left out, as MemAgent's files leave them out;
- whatever surrounds the template (a chat template's opening text, and its closing text after the
  question) is dropped: after a fixed question end it is simply not taken; after a `qa_*` question
  the closing texts of RULER's chat templates are recognised and cut.

With `--remove_newline_tab` RULER turns every run of whitespace into one space (and strips the
ends); such a prompt is read with the same fixed words, whitespace collapsed the same way, and the
haystack and question come back collapsed. niah's single-value splits are worded in the singular
("What is the special magic number for ..."), the others in the plural: both are recognised.

A prompt in which these words are missing, out of order, or of another split's task is refused with
a DataFormatError saying which part was not found.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.jsonstream import DataFormatError

__all__ = ["CHAT_CLOSINGS", "TemplateMarkers", "ruler_task", "split_ruler_input", "template_markers"]

_ANY_WORD = "{w}"  # in a marker below: one word that varies (the value type, a count)


@dataclass(frozen=True)
class TemplateMarkers:
    """Just enough of one task template's fixed text to find where its haystack and question are
    (`{w}` stands for one word that varies). Public so that tests can lay files out around exactly
    these words, and no more of RULER's wording."""

    opening: str  # the last words before the haystack, with the whitespace between them and it
    separator: str  # the whitespace between the haystack and the question
    question_starts: tuple[str, ...]  # the question's first words (any one of these)
    question_end: str | None  # its last words; None where it ends with the query
    examples_first: bool = False  # worked examples (whole prompts) come before the item


# RULER scripts/data/synthetic/constants.py: niah line 27, variable_tracking 33,
# common_words_extraction 39, freq_words_extraction 45, qa 51 (commit c3f5e3b). niah's singular
# wording comes from niah.py:193-198, the worked examples from variable_tracking.py:262-265 and
# common_words_extraction.py:115-129.
_TASKS = {
    "niah": TemplateMarkers(
        "I will quiz you about the {w} afterwards.\n",
        "\n",
        ("What is the special magic {w} for ", "What are all the special magic {w} for "),
        " mentioned in the provided text?",
    ),
    "variable_tracking": TemplateMarkers(
        "variable assignment hidden in the following text.\n\n",
        "\n",
        ("Question: Find all variables that are assigned the value ",),
        " in the text above.",
        examples_first=True,
    ),
    "common_words_extraction": TemplateMarkers(
        "Memorize the ones that appear most often.\n",
        "\n",
        ("Question: What are the {w} most common words",),
        " in the above list?",
        examples_first=True,
    ),
    "freq_words_extraction": TemplateMarkers(
        "Find the three most frequently appeared coded words. ",
        "\n",
        ("Question: Do not provide any explanation.",),
        " in the above coded text?",
    ),
    "qa": TemplateMarkers("The following are given documents.\n\n", "\n\n", ("Answer the question based on",), None),
}

# What RULER's chat templates put after the prompt (scripts/data/template.py:18-38); a qa question
# ends with its query, so this is how its end is told from the template's closing text.
CHAT_CLOSINGS = (
    " [/INST]",
    " ASSISTANT:",
    " ASSISTANT: ",
    "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
    "<|assistant|> \n ",
    "\n\nAssistant:",
    "<|end|>\n<|assistant|>\n",
    "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    "<|eom|><|bom|><|assistant|>",
    "\n<SPECIAL_11>Assistant\n",
)


def ruler_task(split: str) -> str:
    """The RULER task a split is made by (synthetic.yaml): niah, variable_tracking, ..., qa."""
    if split not in RULER_SPLITS:
        raise DataFormatError(f"{split!r} is not a RULER split (one of {', '.join(RULER_SPLITS)})")
    if split.startswith("niah"):
        return "niah"
    if split.startswith("qa"):
        return "qa"
    return {"vt": "variable_tracking", "cwe": "common_words_extraction", "fwe": "freq_words_extraction"}[split]


def template_markers(split: str) -> TemplateMarkers:
    """The fixed words this reader looks for in a split's template (its task's; see `_TASKS`)."""
    return _TASKS[ruler_task(split)]


def _collapse(text: str) -> str:
    """RULER's --remove_newline_tab on a piece of a prompt: whitespace runs to one space, ends kept."""
    return re.sub(r"\s+", " ", text)


@dataclass(frozen=True)
class _Compiled:
    opening: re.Pattern[str]
    question: re.Pattern[str]  # the separator, then the question's first words in group "question"
    question_end: str | None
    examples_first: bool
    closings: tuple[str, ...]  # longest first, so that " ASSISTANT: " wins over " ASSISTANT:"


def _regex(marker: str, collapsed: bool) -> str:
    marker = _collapse(marker) if collapsed else marker
    return r"\w+".join(re.escape(part) for part in marker.split(_ANY_WORD))


def _compile(markers: TemplateMarkers, collapsed: bool) -> _Compiled:
    starts = "|".join(_regex(start, collapsed) for start in markers.question_starts)
    end = markers.question_end
    # A collapsed prompt was stripped before its answer prefix (which starts with a space) was cut off.
    closings = tuple(_collapse(c).rstrip() for c in CHAT_CLOSINGS) if collapsed else CHAT_CLOSINGS
    return _Compiled(
        opening=re.compile(_regex(markers.opening, collapsed)),
        question=re.compile(f"{_regex(markers.separator, collapsed)}(?P<question>{starts})"),
        question_end=_collapse(end) if collapsed and end is not None else end,
        examples_first=markers.examples_first,
        closings=tuple(sorted(set(closings), key=len, reverse=True)),
    )


_COMPILED = {task: (_compile(markers, False), _compile(markers, True)) for task, markers in _TASKS.items()}


def _locate(form: _Compiled, text: str) -> tuple[str, str] | str:
    """(document, question), or the reason this form of the template does not fit the text."""
    question = _last(form.question.finditer(text))
    if question is None:
        return "no question of the task's template after a context"
    before = question.start()
    openings = form.opening.finditer(text, 0, before)
    opening = _last(openings) if form.examples_first else next(openings, None)
    if opening is None:
        return "no opening words of the task's template before its question"
    start = question.start("question")
    if form.question_end is None:
        return text[opening.end() : before], _without_closing(text[start:], form.closings)
    stop = text.find(form.question_end, start)
    if stop < 0:
        return "the question after the context is not finished by the template's last words"
    return text[opening.end() : before], text[start : stop + len(form.question_end)]


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    last = deque(matches, maxlen=1)
    return last[0] if last else None


def _without_closing(question: str, closings: tuple[str, ...]) -> str:
    for closing in closings:
        if question.endswith(closing):
            return question[: -len(closing)]
    return question


def split_ruler_input(split: str, text: str) -> tuple[str, str]:
    """(document, question) of a RULER prompt (a prepare.py record's `input`) of the given split,
    by the rule in this module's docstring; a DataFormatError when the text is not that prompt."""
    task = ruler_task(split)
    raw, collapsed = _COMPILED[task]
    found = _locate(raw, text)
    if isinstance(found, tuple):
        return found
    found_collapsed = _locate(collapsed, text)
    if isinstance(found_collapsed, tuple):
        return found_collapsed
    reason = found if "\n" in text else found_collapsed
    raise DataFormatError(f"{split}: not RULER's {task} prompt: {reason}")
