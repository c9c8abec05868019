"""Adversarial answer strings: what model output does to a gold answer's characters.

Gold answers (invented or generic) crossed with decorations that real completions produce: curly
quotes, dashes, decomposed and composed accents, full-width forms, zero-width and non-breaking
spaces, articles, empty and article-only answers, yes/no/noanswer, CJK, emoji and case changes.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

GOLDS = (
    "Canary Islands, Spain",
    "Zürich",
    "Beyoncé Knowles",
    "Ångström",
    "naïve café",
    "São Paulo",
    "Straße",
    "İstanbul",
    "The Beatles",
    "a",
    "the",
    "",
    "?",
    "yes",
    "no",
    "noanswer",
    "1,000",
    "U.S.",
    "co-operate",
    "rock 'n' roll",
    "O'Brien",
    "£5 million",
    "x²",
    "Ⅻ",
    "ﬁsh and chips",
    "東京",
    "北京大学",
    "東京 タワー",
    "서울",
    "Москва",
    "Ελλάς",
    "القاهرة",
    "party 🎉",
    "Ａｐｐｌｅ",
    "Velmont-on-Tanash",
    "Orla Fenwick",
)


def _full_width(text: str) -> str:
    return "".join(chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in text)


def _between_words(separator: str) -> Callable[[str], str]:
    return lambda text: separator.join(text.split(" "))


DECORATIONS: dict[str, Callable[[str], str]] = {
    "verbatim": lambda text: text,
    "curly double quotes": lambda text: f"\u201c{text}\u201d",
    "curly single quotes": lambda text: f"\u2018{text}\u2019",
    "guillemets": lambda text: f"\u00ab{text}\u00bb",
    "straight quotes": lambda text: f'"{text}"',
    "em dash note": lambda text: f"{text} \u2014 probably",
    "en dash for hyphen": lambda text: text.replace("-", "\u2013"),
    "apostrophe to right quote": lambda text: text.replace("'", "\u2019"),
    "decomposed accents": lambda text: unicodedata.normalize("NFD", text),
    "composed accents": lambda text: unicodedata.normalize("NFC", text),
    "compatibility folded": lambda text: unicodedata.normalize("NFKC", text),
    "full-width ascii": _full_width,
    "zero-width space between words": _between_words("\u200b"),
    "zero-width space inside": lambda text: text[:1] + "\u200b" + text[1:],
    "zero-width joiner inside": lambda text: text[:1] + "\u200d" + text[1:],
    "soft hyphen inside": lambda text: text[:2] + "\u00ad" + text[2:],
    "no-break spaces": _between_words("\u00a0"),
    "ideographic spaces": _between_words("\u3000"),
    "cjk full stop": lambda text: f"{text}\u3002",
    "ellipsis": lambda text: f"{text}\u2026",
    "article prefix": lambda text: f"The {text}",
    "an prefix": lambda text: f"an {text}",
    "exclamation": lambda text: f"{text}!",
    "upper case": str.upper,
    "emoji suffix": lambda text: f"{text} \U0001f600",
    "yes prefix": lambda text: f"yes, {text}",
    "arabic comma": lambda text: text.replace(",", "\u060c"),
    "tab and newline": lambda text: f"\t{text}\n",
    "empty": lambda text: "",
    "article only": lambda text: "the",
}


def adversarial_pairs() -> list[tuple[str, str, str]]:
    """(decoration name, prediction, gold) for every gold and decoration."""
    return [(name, decorate(gold), gold) for gold in GOLDS for name, decorate in DECORATIONS.items()]


# Whole answers around the box: what the box reader must get right.
ANSWERS = (
    "\\boxed{Orla Fenwick}",
    "The answer is \\boxed{\u201cCanary Islands, Spain\u201d}.",
    "\\boxed{Zu\u0308rich}",
    "\\boxed{\uff21\uff50\uff50\uff4c\uff45}",
    "\\boxed{}",
    "\\boxed{the}",
    "\\boxed{?}",
    "\\boxed{ }",
    "\\boxed{yes}",
    "\\boxed{No.}",
    "first \\boxed{Dunmere} then \\boxed{Carrowick}",
    "\\boxed{Dunmere} but then \\boxed{Carro",
    "\\boxed{a \\boxed{b}}",
    "\\boxed{\\text{Dunmere}}",
    "\\boxed {Dunmere}",
    "\\boxed Dunmere",
    "$\\boxed Dunmere$ and more",
    "\\boxed Dunmere then \\boxed{Carrowick}",
    "\\boxed\n{Dunmere}",
    "\\fbox{Dunmere}",
    "\\boxed{Dunmere} \\boxedx",
    "<think>maybe \\boxed{Carrowick}</think>\n\n\\boxed{Dunmere}",
    "<think>maybe \\boxed{Carrowick}</think>   ",
    "<think>maybe \\boxed{Carrowick}</think> no box",
    "\\BOXED{Dunmere}",
    "\\boxed{Dun\tmere}",
    "\\boxed{Dun\u00a0mere}",
    "\\boxed{dun mere}",
    "\\boxed{  Dunmere  }",
    "\\boxed{Dunmere}" + "x" * 300,
    "\\boxed{\u6771\u4eac\u3002}",
    "\\boxed{party \U0001f389}",
    "\\boxed{\\{Dunmere\\}}",
    "\\boxed{Dunmere} }",
)
