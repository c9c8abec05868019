"""Where a gold answer is in a text, read as the reporting scorer reads answers.

Every view that marks a gold answer (a chunk that holds it, a memory it entered, the direct
baseline's window that kept it) asks one question: does this text hold a gold answer? It is
answered with the scorer's own normalisation (`scoring.normalize_answer`, HotpotQA's: lower case,
ASCII punctuation deleted, the articles a/an/the removed, whitespace collapsed), so a mark agrees
with what sub_em could credit: the gold's normalised words must occur as a run of whole words of
the normalised text. A case-folded sub-string search, the rule before this one, marked every chunk
for gold "no" (the "No" of "November") and "yes" for "Yesterday".

Consequences of reading as the scorer reads, kept on purpose rather than special-cased:
- numbers lose their punctuation: "1,000" and "1000" are the same answer, and so are "3.5" and
  "35" (the scorer credits both the same way);
- case and punctuation never matter ("U.S." is "us", "Paris," is "paris");
- punctuation is deleted, not a space: a word glued to the next by a full stop ("Quito.Nothing")
  is one word, "quitonothing", and holds no gold "Quito";
- a gold that normalises to nothing ("the", "?") is never present: it would otherwise be in every
  text.

The marks never decide a score; they say where to look. Positions are of the original text, so a
view can cut an excerpt around the gold and highlight it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mem_agent.agent.scoring import OFFICIAL, ReportingRules, normalize_answer

_RAW_WORD = re.compile(r"\S+")


def gold_span(text: str, golds: Iterable[str], rules: ReportingRules = OFFICIAL) -> tuple[int, int] | None:
    """(start, end) in `text` of the first gold answer present (see the module docstring), the
    longest where several start at one word; None when none is present."""
    wanted = [words for gold in golds if (words := normalize_answer(str(gold), rules).split())]
    if not wanted:
        return None
    padded = f" {normalize_answer(text, rules)} "
    wanted = [words for words in wanted if f" {' '.join(words)} " in padded]
    if not wanted:  # the common case, decided without mapping words back to positions
        return None
    spans = _word_spans(text, rules)
    found = [_first_run(spans, words) for words in wanted]
    hits = [span for span in found if span is not None]
    return min(hits, key=lambda span: (span[0], -span[1])) if hits else None


def holds_gold(text: str, golds: Iterable[str], rules: ReportingRules = OFFICIAL) -> bool:
    """Whether a gold answer's normalised words are a run of whole words of the normalised text."""
    return gold_span(text, golds, rules) is not None


def _word_spans(text: str, rules: ReportingRules) -> list[tuple[str, int, int]]:
    """The normalised words of `text`, each with the span of the raw word it came from. Normalising
    word by word gives the words of normalising the whole: punctuation deletion never makes or
    removes whitespace, and an article is a whole word either way."""
    return [
        (word, raw.start(), raw.end())
        for raw in _RAW_WORD.finditer(text)
        for word in normalize_answer(raw.group(), rules).split()
    ]


def _first_run(spans: list[tuple[str, int, int]], words: list[str]) -> tuple[int, int] | None:
    size = len(words)
    for index in range(len(spans) - size + 1):
        if all(spans[index + offset][0] == word for offset, word in enumerate(words)):
            return spans[index][1], spans[index + size - 1][2]
    return None
