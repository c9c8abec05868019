"""A synthetic multi-hop QA set in HotpotQA's layout, made by our own code from a seed.

Real HotpotQA cannot be downloaded on machines without hub access (our CI, the demo), so the
demo makes its own data instead, and says so. Every fact is invented: fictional people, towns and
companies, drawn from seeded syllable lists. Each question has two gold paragraphs (the two hops)
and eight distractor paragraphs about other invented entities, like HotpotQA's distractor
setting, and three kinds of question:

- bridge: "In which town was the founder of Corvane Works born?" (company -> founder -> town);
- comparison: "Who was born first, Ada Velmont or Tobin Ashgrove?" (answer: a name);
- yes/no: "Were Ada Velmont and Tobin Ashgrove born in the same town?".

The command is `python -m mem_agent.synthetic_qa`; `write_synthetic_set` is its work.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mem_agent.common.input_files import check_output, shown
from mem_agent.common.jsonstream import write_json_array_atomic
from mem_agent.common.usage import UsageError

_FIRST = "Ada Bram Cora Dario Elin Fenn Greta Hugo Ines Jory Kaia Lior Mira Nils Odile Pavel Quin Rhea Soren Tova"
_SYLLABLES = [
    "vel",
    "mont",
    "ash",
    "grove",
    "tor",
    "lin",
    "bar",
    "wick",
    "dun",
    "mere",
    "cal",
    "den",
    "fro",
    "sted",
    "hal",
    "rin",
    "mor",
    "tan",
    "quel",
    "bra",
]
_INDUSTRIES = ["shipbuilding", "glassware", "textile", "printing", "clockmaking", "brewing", "rail signalling"]
_PROFESSIONS = ["engineer", "painter", "botanist", "cartographer", "composer", "chemist", "architect"]
_COMPANY_SUFFIXES = ["Works", "Company", "Foundry", "Guild", "Mills", "Brothers"]


# Two-syllable names give only 1,600 towns, used up near 160 questions. After this many clashes in a
# row a kind of name takes one more syllable for good (20x more names), so any --num-questions
# finishes quickly; small sets never clash that often, so their files do not depend on this rule.
_CLASHES_PER_SYLLABLE = 200
MAX_QUESTIONS = 100_000  # bound: --num-questions (HotpotQA's train set holds 90,447; the set is built in memory)


@dataclass
class _Names:
    rng: random.Random
    used: set[str]
    syllables: dict[str, int] = field(default_factory=dict)

    def _fresh(self, kind: str, make: Callable[[int], str]) -> str:
        """A name never handed out before; `make(syllables)` draws one candidate of this kind."""
        clashes = 0
        while True:
            name = make(self.syllables.setdefault(kind, 2))
            if name not in self.used:
                self.used.add(name)
                return name
            clashes += 1
            if clashes % _CLASHES_PER_SYLLABLE == 0:
                self.syllables[kind] += 1

    def word(self, syllables: int = 2) -> str:
        return "".join(self.rng.choice(_SYLLABLES) for _ in range(syllables)).capitalize()

    def person(self) -> str:
        return self._fresh("person", lambda n: f"{self.rng.choice(_FIRST.split())} {self.word(n)}")

    def town(self) -> str:
        return self._fresh("town", lambda n: f"{self.word(n)}{self.rng.choice(['', 'ford', 'by', 'ham'])}")

    def company(self) -> str:
        return self._fresh("company", lambda n: f"{self.word(n)} {self.rng.choice(_COMPANY_SUFFIXES)}")


def _person_paragraph(names: _Names, person: str, town: str, year: int) -> tuple[str, list[str]]:
    profession = names.rng.choice(_PROFESSIONS)
    return person, [
        f"{person} (born {year}) was a {profession} born in the town of {town}.",
        f" {person.split()[0]} is best known for work on {names.word().lower()} and {names.word().lower()}.",
    ]


def _company_paragraph(names: _Names, company: str, founder: str, year: int) -> tuple[str, list[str]]:
    industry = names.rng.choice(_INDUSTRIES)
    return company, [
        f"{company} is a {industry} firm founded in {year} by {founder}.",
        f" Its first workshop stood in {names.town()}.",
    ]


def _distractor(names: _Names) -> tuple[str, list[str]]:
    if names.rng.random() < 0.5:
        return _person_paragraph(names, names.person(), names.town(), names.rng.randint(1780, 1980))
    return _company_paragraph(names, names.company(), names.person(), names.rng.randint(1800, 1990))


def make_question(names: _Names, index: int) -> dict:
    rng = names.rng
    kind = ("bridge", "comparison", "yes_no")[index % 3]
    if kind == "bridge":
        company, founder, town = names.company(), names.person(), names.town()
        gold = [_company_paragraph(names, company, founder, rng.randint(1800, 1990))]
        gold.append(_person_paragraph(names, founder, town, rng.randint(1760, 1960)))
        question, answer, qtype = f"In which town was the founder of {company} born?", town, "bridge"
    else:
        first, second = names.person(), names.person()
        years = rng.sample(range(1760, 1980), 2)
        towns = [names.town(), names.town()]
        if kind == "yes_no" and rng.random() < 0.5:
            towns[1] = towns[0]
        gold = [_person_paragraph(names, p, t, y) for p, t, y in zip((first, second), towns, years, strict=True)]
        if kind == "comparison":
            question = f"Who was born first, {first} or {second}?"
            answer = first if years[0] < years[1] else second
        else:
            question = f"Were {first} and {second} born in the same town?"
            answer = "yes" if towns[0] == towns[1] else "no"
        qtype = "comparison"
    paragraphs = gold + [_distractor(names) for _ in range(8)]
    rng.shuffle(paragraphs)
    return {
        "id": f"synthetic-{index:05d}",
        "question": question,
        "answer": answer,
        "type": qtype,
        "level": "synthetic",
        "supporting_facts": {"title": [title for title, _ in gold], "sent_id": [0] * len(gold)},
        "context": {"title": [t for t, _ in paragraphs], "sentences": [s for _, s in paragraphs]},
    }


def generate(num_questions: int, seed: int) -> list[dict]:
    names = _Names(random.Random(seed), set())
    return [make_question(names, index) for index in range(num_questions)]


@dataclass(frozen=True)
class SyntheticRequest:
    out: Path  # a JSON array file
    num_questions: int
    seed: int


def write_synthetic_set(request: SyntheticRequest) -> None:
    """Write the set and say how many questions it holds. UsageError: a count that is not
    positive or past MAX_QUESTIONS, or an output that cannot be written."""
    if not 0 < request.num_questions <= MAX_QUESTIONS:
        raise UsageError(f"--num-questions {request.num_questions} must be from 1 to {MAX_QUESTIONS:,}")
    check_output(request.out, "--out")
    try:
        count = write_json_array_atomic(request.out, generate(request.num_questions, request.seed))
    except OSError as error:
        raise UsageError(f"cannot write {shown(request.out)}: {error.strerror}") from None
    print(f"wrote {count} synthetic questions to {shown(request.out)} (invented facts, seed {request.seed})")
