"""RULER general eval files made by our own generator (data/ruler_tasks.py), sized by the policy's
tokenizer; the command is `mem-agent build-ruler` (build_ruler.py).

Each file is `eval_<split>_<length>.json`, a JSON array of RULER's records (`index`, `input`,
`context`, `outputs`, `length`), the layout the evaluator reads (evaluation/ruler_items.py). A
length is RULER's `max_seq_length`: the question and the context together, measured with the
tokenizer given, fill it less the tokens the task leaves for the answer. The size that fills it is
searched once per file on its first item, and every item is then cut down (never grown) until it
fits, or drawn again where even its smallest size does not fit (a QA question whose own documents
are too long). The search never goes past the budget in units (each unit is at least a token) nor,
for qa_1 / qa_2, past the corpus: a length the whole corpus cannot fill is refused, not written
short. An existing file is never replaced: it is reported and kept (so no output is ever an
input). The essay haystack (niah_single_2/3, niah_multikey_1, niah_multivalue, niah_multiquery) is
the sentences of `--essay`, a text the user supplies (RULER uses Paul Graham's essays); qa_1
needs `--squad` (SQuAD 2.0 layout) and qa_2 `--hotpot` (HotpotQA rows). Lengths, item counts and
the texts read whole are bounded (MAX_LENGTH, MAX_SAMPLES, common/input_files.MAX_TEXT_BYTES).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mem_agent.common.guarded_files import check_outputs
from mem_agent.common.input_files import MAX_TEXT_BYTES, check_name, input_file, read_bounded, shown
from mem_agent.common.jsonstream import DataFormatError, write_json_array_atomic
from mem_agent.common.usage import UsageError, gather
from mem_agent.data.ruler_corpus import corpus_questions
from mem_agent.data.ruler_tasks import (
    NIAH_SPECS,
    Item,
    answer_tokens,
    cwe_item,
    fwe_item,
    niah_item,
    qa_context,
    qa_item,
    vt_item,
)
from mem_agent.tokenization.tokenizer import encode, load_given_tokenizer

ESSAY_SPLITS = frozenset(split for split, spec in NIAH_SPECS.items() if spec.haystack == "essay")
REDRAWS = 100
MAX_LENGTH = 4 << 20  # bound: --lengths, tokens (4,194,304; MemAgent's RULER runs stop at 1M, RULER-HQA at 3.5M)
MAX_SAMPLES = 10_000  # bound: --num-samples, items per file (MemAgent's files hold 128, RULER's 500)
MakeItem = Callable[[int, random.Random], Item]


@dataclass(frozen=True)
class RulerBuildRequest:
    out_dir: Path
    splits: tuple[str, ...]
    lengths: tuple[int, ...]
    tokenizer: str
    num_samples: int = 128
    seed: int = 42
    essay: Path | None = None
    squad: Path | None = None
    hotpot: Path | None = None


def check_request(request: RulerBuildRequest) -> None:
    """Every mistake at once (a UsageError listing them), before anything is read or written."""
    problems = [
        f"--lengths {n} must be from 1 to {MAX_LENGTH:,} tokens" for n in request.lengths if not 0 < n <= MAX_LENGTH
    ]
    if not 0 < request.num_samples <= MAX_SAMPLES:
        problems.append(f"--num-samples {request.num_samples} must be from 1 to {MAX_SAMPLES:,}")
    needs = {"--essay": (request.essay, ESSAY_SPLITS), "--squad": (request.squad, {"qa_1"})}
    needs["--hotpot"] = (request.hotpot, {"qa_2"})
    checks = [lambda: check_name(request.out_dir, "--out-dir")]
    for flag, (path, splits) in needs.items():
        wanted = sorted(set(request.splits) & splits)
        if wanted and path is None:
            problems.append(f"{flag}: a file is needed for {' '.join(wanted)}")
        elif wanted:
            checks.append(lambda flag=flag, path=path: input_file(path, flag, max_bytes=MAX_TEXT_BYTES))
    try:
        gather(*checks)
    except UsageError as error:
        problems += error.problems
    if not problems and request.out_dir.exists() and not request.out_dir.is_dir():
        problems.append(f"--out-dir {shown(request.out_dir)} is not a folder")
    if problems:
        raise UsageError(problems)


def essay_sentences(path: Path) -> list[str]:
    """The essay haystack's units: the text's sentences, whitespace collapsed."""
    try:
        text = " ".join(read_bounded(path, "--essay").decode("utf-8").split())
    except UnicodeDecodeError as error:
        raise DataFormatError(f"{shown(path)}: not UTF-8 at byte {error.start} (--essay takes a text file)") from None
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s]
    if not sentences:
        raise DataFormatError(f"{shown(path)}: holds no text for the essay haystack")
    return sentences


def item_maker(split: str, request: RulerBuildRequest) -> tuple[MakeItem, int | None]:
    """The split's generator (an item of a given size from a seeded random source), and the most
    units it can give: the corpus's documents for qa_1 / qa_2, else None (no end)."""
    if split in NIAH_SPECS:
        essay = essay_sentences(request.essay) if split in ESSAY_SPLITS and request.essay else []
        return (lambda units, rng: niah_item(NIAH_SPECS[split], units, rng, essay)), None
    if split in ("vt", "cwe", "fwe"):
        return {"vt": vt_item, "cwe": cwe_item, "fwe": fwe_item}[split], None
    path = request.squad if split == "qa_1" else request.hotpot
    assert path is not None  # check_request
    documents, questions = corpus_questions(path, split)
    if not questions:
        raise DataFormatError(f"{path}: holds no answerable question")

    def make(units: int, rng: random.Random) -> Item:
        item, chosen = qa_item(questions[rng.randrange(len(questions))], units, len(documents), rng)
        return Item(item.question, qa_context(documents, chosen), item.outputs)

    return make, len(documents)


def _tokens_of(count: Callable[[str], int], item: Item) -> int:
    return count(f"{item.context}\n{item.question}")


def fit_units(fits: Callable[[int], bool], limit: int, start: int = 8) -> int:
    """The largest size up to `limit` for which `fits` holds (sizes grow by doubling, then bisect);
    0 if none. Without the limit a generator that stops growing (a QA item holds at most the
    corpus) would be doubled for ever."""
    if not fits(1):
        return 0
    low, high = 1, min(max(2, start), limit)
    while low < high and fits(high):
        if high == limit:
            return limit
        low, high = high, min(high * 2, limit)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def build_items(split: str, length: int, request: RulerBuildRequest, count: Callable[[str], int]) -> Iterator[dict]:
    (make, most), budget = item_maker(split, request), length - answer_tokens(split)

    def rng(index: int, draw: int = 0) -> random.Random:
        return random.Random(f"{request.seed}/{split}/{length}/{index}/{draw}")

    too_short = f"--lengths {length} is too short for {split}: no item fits {budget} tokens"
    units = fit_units(lambda n: _tokens_of(count, make(n, rng(0))) <= budget, max(1, min(budget, most or budget)))
    if units == 0:
        raise UsageError(too_short)
    if units == most:  # every document of the corpus fits: an item would fall short of the length
        flag = "--squad" if split == "qa_1" else "--hotpot"
        raise UsageError(f"--lengths {length} is longer than {split} can be: all {most:,} documents of {flag} fit")
    for index in range(request.num_samples):
        for draw in range(REDRAWS):  # an item too long at the smallest size (a long QA question) is drawn again
            size = units
            while (tokens := _tokens_of(count, item := make(size, rng(index, draw)))) > budget and size > 1:
                size -= max(1, size // 50)
            if tokens <= budget:
                break
        else:
            raise UsageError(too_short)
        record = {"index": index, "input": item.question, "context": item.context, "outputs": item.outputs}
        yield record | {"length": tokens + answer_tokens(split)}


def write_ruler_files(request: RulerBuildRequest) -> None:
    """Every split x length file the request names that is not there yet; one line per file."""
    check_request(request)
    tokenizer = load_given_tokenizer(request.tokenizer)

    def count(text: str) -> int:
        return len(encode(tokenizer, text))

    out = request.out_dir
    targets = {(s, n): out / f"eval_{s}_{n}.json" for s in request.splits for n in request.lengths}
    check_outputs(target for target in targets.values() if not target.exists())  # before the first is written
    for (split, length), target in targets.items():
        if target.exists():
            print(f"{target}: kept (already there)")
            continue
        written = write_json_array_atomic(target, build_items(split, length, request, count))
        print(f"{target}: {written} items of up to {length} tokens")
