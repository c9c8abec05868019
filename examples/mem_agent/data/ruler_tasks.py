"""RULER's thirteen general tasks, defined from RULER's task descriptions in our own words.

Each split draws one item from a seeded generator and a size (`units`: haystack sentences, list
words or documents); data/ruler_build.py finds the size that fills a token budget. The task
structure is RULER's (`scripts/data/synthetic/*`, its `synthetic.yaml`): what is hidden, in what
haystack, how many keys, values and queries, and what the references are. The wording of the
haystack, the needles and the questions is ours, so a file made here is never byte for byte one
of RULER's or MemAgent's (docs/fidelity.md).

- niah_*: needles "key -> value" hidden in a haystack: `noise` (one filler passage repeated),
  `essay` (the sentences of a text the user supplies) or `needles` (the haystack is other needles
  of the same form); keys are words or uuids, values numbers, words or uuids; multikey hides
  several keys and asks one, multivalue gives one key four values, multiquery asks four keys.
- vt: a chain of five variables, the first given a number, each next one the previous one,
  spread through the noise haystack; the references are the chain's five names.
- cwe: a numbered word list where ten words occur 30 times and the others 3 times (fewer than 30
  in short lists); the references are the ten common words.
- fwe: a text of coded words drawn from a Zipf law (exponent 2); the references are the three
  most frequent words.
- qa_1 / qa_2: a SQuAD / HotpotQA question, its own documents among others of the dataset,
  shuffled, rendered as `Document i:` blocks (data/ruler_corpus.py).
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mem_agent.data.hotpot_corpus import render_documents
from mem_agent.data.ruler_corpus import QaQuestion

NOISE = (
    "The ferry leaves the harbour at dawn and returns before dark. Gulls follow it across the bay. "
    "On the far shore the market opens, and the stalls fill with apples and bread."
)
MIN_FWE_WORDS = 40  # fewer draws rarely separate the third most frequent word from the fourth
_CONSONANTS, _VOWELS = "bcdfghjklmnprstvz", "aeiou"


@dataclass(frozen=True)
class NiahSpec:
    haystack: str  # noise, essay or needles
    key_kind: str  # words or uuids
    value_kind: str  # numbers, words or uuids
    keys: int = 1
    values: int = 1
    queries: int = 1


NIAH_SPECS = {
    "niah_single_1": NiahSpec("noise", "words", "numbers"),
    "niah_single_2": NiahSpec("essay", "words", "numbers"),
    "niah_single_3": NiahSpec("essay", "words", "uuids"),
    "niah_multikey_1": NiahSpec("essay", "words", "numbers", keys=4),
    "niah_multikey_2": NiahSpec("needles", "words", "numbers"),
    "niah_multikey_3": NiahSpec("needles", "uuids", "uuids"),
    "niah_multivalue": NiahSpec("essay", "words", "numbers", values=4),
    "niah_multiquery": NiahSpec("essay", "words", "numbers", keys=4, queries=4),
}
# Tokens each task leaves for the answer (RULER's tokens_to_generate per task).
ANSWER_TOKENS = {"niah": 128, "vt": 30, "cwe": 120, "fwe": 50, "qa": 32}


@dataclass(frozen=True)
class Item:
    question: str
    context: str
    outputs: list[str]


def answer_tokens(split: str) -> int:
    return ANSWER_TOKENS["niah" if split.startswith("niah") else "qa" if split.startswith("qa") else split]


def pseudo_word(rng: random.Random, syllables: int = 3) -> str:
    return "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables))


def _value(rng: random.Random, kind: str) -> str:
    if kind == "numbers":
        return str(rng.randrange(1_000_000, 10_000_000))
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return pseudo_word(rng, 4)


def _needle(key: str, value: str) -> str:
    return f"Note for later: the secret code filed under {key} reads {value}."


def _spread(rng: random.Random, haystack: list[str], inserts: Sequence[str]) -> str:
    """The haystack's sentences with `inserts` placed at random positions, in their order."""
    positions = sorted(rng.randrange(len(haystack) + 1) for _ in inserts)
    text: list[str] = []
    cursor = 0
    for position, insert in zip(positions, inserts, strict=True):
        text += [*haystack[cursor:position], insert]
        cursor = position
    return " ".join(text + haystack[cursor:])


def niah_item(spec: NiahSpec, units: int, rng: random.Random, essay: Sequence[str]) -> Item:
    keys: list[str] = []
    while len(keys) < spec.keys:
        key = _value(rng, spec.key_kind) if spec.key_kind == "uuids" else pseudo_word(rng, 3)
        keys += [key] if key not in keys else []
    values = [[_value(rng, spec.value_kind) for _ in range(spec.values)] for _ in keys]
    needles = [_needle(key, value) for key, held in zip(keys, values, strict=True) for value in held]
    rng.shuffle(needles)
    if spec.haystack == "noise":
        haystack = [NOISE] * units
    elif spec.haystack == "essay":
        haystack = [essay[i % len(essay)] for i in range(units)]
    else:
        haystack = [_needle(_value(rng, spec.key_kind), _value(rng, spec.value_kind)) for _ in range(units)]
    asked = rng.sample(range(len(keys)), spec.queries)
    names = [keys[i] for i in asked]
    question = (
        f"What secret codes are filed under {', '.join(names)} in the text? Give every one of them."
        if spec.queries * spec.values > 1
        else f"What secret code is filed under {names[0]} in the text?"
    )
    return Item(question, _spread(rng, haystack, needles), [value for i in asked for value in values[i]])


def vt_item(units: int, rng: random.Random, hops: int = 4) -> Item:
    names: list[str] = []
    while len(names) < hops + 1:
        name = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5))
        names += [name] if name not in names else []
    number = str(rng.randrange(10_000, 100_000))
    chain = [f"Variable {names[0]} holds {number}."]
    chain += [f"Variable {names[i]} holds the value of {names[i - 1]}." for i in range(1, len(names))]
    question = f"Which variables end up holding the value {number}? Name all of them."
    return Item(question, _spread(rng, [NOISE] * units, chain), names)


def cwe_item(units: int, rng: random.Random, common: int = 10, common_times: int = 30, rare_times: int = 3) -> Item:
    """`units` rare words; in short lists (under about 100 rare words) the common words occur
    fewer times, at least rare_times + 1, so that short lengths can be made."""
    common_times = min(common_times, rare_times + 1 + units // 4)
    words: set[str] = set()
    while len(words) < common + units:
        words.add(pseudo_word(rng, 3))
    ordered = sorted(words)
    rng.shuffle(ordered)
    frequent, rare = ordered[:common], ordered[common:]
    listing = frequent * common_times + rare * rare_times
    rng.shuffle(listing)
    context = " ".join(f"{number}. {word}" for number, word in enumerate(listing, start=1))
    question = f"Which {common} words occur most often in the numbered list? Name all {common}."
    return Item(question, context, frequent)


def fwe_item(units: int, rng: random.Random, alpha: float = 2.0, vocabulary: int = 2000, top: int = 3) -> Item:
    """`units` coded words (at least MIN_FWE_WORDS) drawn from a Zipf law over a vocabulary; the
    `top` most frequent are the references (drawn again while a tie decides the last of them)."""
    words = sorted({pseudo_word(rng, 2) + pseudo_word(rng, 1) for _ in range(vocabulary)})
    rng.shuffle(words)
    numbers = np.random.default_rng(rng.getrandbits(63))
    size = max(units, MIN_FWE_WORDS)
    for _ in range(1000):
        ranks = numbers.zipf(alpha, size=size * 2)
        drawn = [words[rank - 1] for rank in ranks if rank <= len(words)][:size]
        counts = Counter(drawn).most_common(top + 1)
        if len(counts) > top and counts[top - 1][1] > counts[top][1]:
            break
    question = f"Which {top} coded words appear most often in the text? Name all {top}."
    return Item(question, " ".join(drawn) + ".", [word for word, _ in counts[:top]])


def qa_item(question: QaQuestion, units: int, corpus_size: int, rng: random.Random) -> tuple[Item, list[int]]:
    """The question with its own documents and `units` in all (others drawn from the corpus), shuffled;
    also the chosen indices."""
    own = list(dict.fromkeys(question.documents))
    others = [index for index in rng.sample(range(corpus_size), min(corpus_size, units + len(own))) if index not in own]
    chosen = own + others[: max(0, units - len(own))]
    rng.shuffle(chosen)
    return Item(f"Answer from the documents above. Question: {question.question}", "", question.answers), chosen


def qa_context(documents: Sequence[str], chosen: Sequence[int]) -> str:
    return render_documents([documents[index] for index in chosen])
