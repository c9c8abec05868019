"""The references' scoring rules, restated from their specification for the tests to compare with.

Written from the rules as stated below, not from mem_agent.agent.scoring, and in a different style
(character scans and exact fractions instead of regular expressions and floats), so that a shared
mistake is unlikely. Nothing here is imported by the package.

Official HotpotQA evaluator (`hotpot_evaluate_v1.py`, Python 3):
- normalise: `str.lower`; delete the 32 ASCII punctuation characters; replace every whole word
  "a", "an" or "the" with a space, a word being a maximal run of characters that are alphanumeric
  by `str.isalnum` or "_" (Python's Unicode `\\w`); split on whitespace (`str.isspace`) and join
  with single spaces;
- EM: the normalised strings are equal;
- F1: 0 if either normalised answer is yes, no or noanswer and they differ; otherwise token
  precision and recall over the whitespace tokens, counted as multisets; 0 when nothing overlaps.

MemAgent (`taskutils/memory_eval`, `verl/utils/reward_score/hotpotqa.py`):
- sub_em: the normalised gold occurs in the normalised prediction or the other way round;
- the evaluator reads the answer from the text after the last `</think>` (stripped), or from the
  whole stripped answer when there is none or nothing follows it, and scores 0 on every metric
  when the box gives no answer or an empty one;
- the box: when `\\boxed ` (with a space) occurs, the text after its last occurrence up to the first
  `$`; else the last `\\boxed` must be followed by `{` and its content ends at the brace that brings
  the count of open braces back to zero; anything else (no `\\boxed`, an unclosed box, `\\fbox`)
  is no answer;
- the strict reward: the last 300 characters, lower-cased, read as above; the box and each
  lower-cased ground truth go through the same rewrites in order (delete newline, `\\!`; `\\\\` to
  `\\`; tfrac and dfrac to frac; delete `\\left`, `\\right`, `^{\\circ}`, `^\\circ`, `\\$`, `\\%`;
  " ." to " 0.", "{." to "{0."; delete spaces) and must be equal for some ground truth.
"""

from __future__ import annotations

from fractions import Fraction

ASCII_PUNCTUATION = {chr(code) for code in range(0x21, 0x7F) if not chr(code).isalnum()}
ARTICLES = {"a", "an", "the"}
CLOSED_CLASS = {"yes", "no", "noanswer"}


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _replace_articles(text: str) -> str:
    pieces: list[str] = []
    index = 0
    while index < len(text):
        if not _is_word_char(text[index]):
            pieces.append(text[index])
            index += 1
            continue
        end = index
        while end < len(text) and _is_word_char(text[end]):
            end += 1
        word = text[index:end]
        pieces.append(" " if word in ARTICLES else word)
        index = end
    return "".join(pieces)


def _whitespace_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    current = ""
    for char in text:
        if char.isspace():
            if current:
                tokens.append(current)
            current = ""
        else:
            current += char
    if current:
        tokens.append(current)
    return tokens


def official_normalise(text: str) -> str:
    lowered = text.lower()
    kept = "".join(char for char in lowered if char not in ASCII_PUNCTUATION)
    return " ".join(_whitespace_tokens(_replace_articles(kept)))


def official_em(prediction: str, gold: str) -> int:
    return int(official_normalise(prediction) == official_normalise(gold))


def official_f1(prediction: str, gold: str) -> Fraction:
    predicted, expected = official_normalise(prediction), official_normalise(gold)
    if predicted != expected and (predicted in CLOSED_CLASS or expected in CLOSED_CLASS):
        return Fraction(0)
    predicted_tokens, expected_tokens = _whitespace_tokens(predicted), _whitespace_tokens(expected)
    remaining = list(expected_tokens)
    overlap = 0
    for token in predicted_tokens:
        if token in remaining:
            remaining.remove(token)
            overlap += 1
    if overlap == 0:
        return Fraction(0)
    precision = Fraction(overlap, len(predicted_tokens))
    recall = Fraction(overlap, len(expected_tokens))
    return 2 * precision * recall / (precision + recall)


def _occurs_in(needle: str, haystack: str) -> bool:
    return any(haystack[start : start + len(needle)] == needle for start in range(len(haystack) - len(needle) + 1))


def memagent_sub_em(prediction: str, gold: str) -> int:
    predicted, expected = official_normalise(prediction), official_normalise(gold)
    return int(_occurs_in(expected, predicted) or _occurs_in(predicted, expected))


def memagent_box(text: str) -> str | None:
    if "\\boxed " in text:
        return text.rpartition("\\boxed ")[2].partition("$")[0]
    _, found, tail = text.rpartition("\\boxed")
    if not found or not tail.startswith("{"):
        return None
    open_braces = 0
    for offset, char in enumerate(tail):
        open_braces += {"{": 1, "}": -1}.get(char, 0)
        if char == "}" and open_braces == 0:
            return tail[1:offset]
    return None


def memagent_prediction(response: str) -> str | None:
    whole = response.strip()
    if "</think>" in whole and whole.split("</think>")[-1].strip():
        return memagent_box(whole.split("</think>")[-1].strip())
    return memagent_box(whole)


def memagent_reporting(response: str, gold: str) -> tuple[int, int, Fraction]:
    """(em, sub_em, f1) of one answer against one gold, MemAgent's evaluator with official EM/F1."""
    prediction = memagent_prediction(response)
    if not prediction:
        return 0, 0, Fraction(0)
    return official_em(prediction, gold), memagent_sub_em(prediction, gold), official_f1(prediction, gold)


_STRICT_STEPS = (
    ("\n", ""),
    ("\\!", ""),
    ("\\\\", "\\"),
    ("tfrac", "frac"),
    ("dfrac", "frac"),
    ("\\left", ""),
    ("\\right", ""),
    ("^{\\circ}", ""),
    ("^\\circ", ""),
    ("\\$", ""),
    ("\\%", ""),
    (" .", " 0."),
    ("{.", "{0."),
    (" ", ""),
)


def _strict_form(text: str) -> str:
    for old, new in _STRICT_STEPS:
        text = new.join(text.split(old))
    return text


def memagent_strict(response: str, golds: list[str]) -> int:
    box = memagent_box(response[len(response) - 300 :].lower() if len(response) > 300 else response.lower())
    if box is None:
        return 0
    return int(any(_strict_form(box) == _strict_form(gold.lower()) for gold in golds))
