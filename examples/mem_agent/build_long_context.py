"""Build RULER-HQA-shaped evaluation files of any length from raw multi-hop QA data.

    python -m mem_agent.build_long_context --input hotpot_dev.json --num-docs 50 200 800 --out-dir data/

Each output item is `{"index", "input", "answers", "context", "num_docs"}`, as in MemAgent's
eval_<N>.json. A context holds the question's own paragraphs (its two gold paragraphs and its
distractors) plus paragraphs of other questions until there are N documents, shuffled with a
fixed seed and rendered `Document i:\\n<title>\\n<text>`, joined by blank lines.

Rules, so the files are reproducible and honest:
- the same input, arguments and seed give byte-identical files; each question draws from its own
  seeded generator, so item k does not change when --num-questions grows;
- filler paragraphs never repeat one of the question's own titles, and repeat each other only
  when the pool of distinct paragraphs is smaller than N (then the pool is reused in a fresh
  shuffle, which is reported in the summary);
- with N below the question's own paragraph count, its supporting paragraphs are kept first.
- input with no paragraph outside some question's own (one question, say) is refused: an item
  never claims N documents while holding fewer.
Items are written one at a time (an eval_6400 file is about 450 MB), to a temporary file that
replaces the output only when complete.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from mem_agent.common.console import program_name
from mem_agent.common.jsonstream import DataFormatError, write_json_array_atomic
from mem_agent.data.contexts import BuildStats, build_items, load_questions
from mem_agent.data.qa_rows import Paragraph, QaRow


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program_name("mem_agent.build_long_context"),
        description="Build RULER-HQA-shaped eval_<N>.json files from HotpotQA or 2WikiMultiHopQA rows.",
    )
    parser.add_argument("--input", type=Path, required=True, help="raw QA file: JSON array or JSON Lines")
    parser.add_argument("--num-docs", type=int, nargs="+", required=True, help="documents per context, one file each")
    parser.add_argument("--num-questions", type=int, default=128, help="questions per file (default: 128)")
    parser.add_argument("--seed", type=int, default=42, help="shuffle seed (default: 42)")
    parser.add_argument("--out-dir", type=Path, required=True, help="folder for eval_<N>.json")
    parser.add_argument("--force", action="store_true", help="overwrite existing output files")
    return parser


def _check_request(args: argparse.Namespace) -> list[Path]:
    """The output paths, once the flags are known to be usable."""
    if any(n <= 0 for n in args.num_docs) or args.num_questions <= 0:
        raise DataFormatError("--num-docs and --num-questions must be positive integers")
    if args.out_dir.exists() and not args.out_dir.is_dir():
        raise DataFormatError(f"--out-dir {args.out_dir} is a file, not a folder")
    targets = [args.out_dir / f"eval_{n}.json" for n in args.num_docs]
    existing = [str(t) for t in targets if t.exists()]
    if existing and not args.force:
        raise DataFormatError(f"refusing to overwrite {', '.join(existing)} (pass --force)")
    return targets


def _check_fillable(path: Path, questions: Sequence[QaRow], pool: Sequence[Paragraph], num_docs: int) -> None:
    """Refuse input whose contexts cannot reach `num_docs` documents rather than write short ones.

    Every question's own paragraphs are in the pool, so fillers exist exactly when the pool holds
    a title outside the question's own.
    """
    titles = {p.title for p in pool}
    for index, row in enumerate(questions):
        own = {p.title for p in row.paragraphs} & titles
        if len(own) < num_docs and len(titles) == len(own):
            raise DataFormatError(
                f"{path}: question {index} has no paragraphs of other questions to fill {num_docs} documents"
                " (the file needs questions with different paragraphs)"
            )


def _write_file(target: Path, questions: Sequence[QaRow], pool: Sequence[Paragraph], num_docs: int, seed: int) -> None:
    """Write one eval file and print its summary row."""
    stats = BuildStats()
    items = build_items(questions, pool, num_docs, seed, stats)
    write_json_array_atomic(
        target, tqdm(items, total=len(questions), desc=f"eval_{num_docs}", leave=False, disable=None)
    )
    mean = sum(stats.context_chars) / max(len(stats.context_chars), 1)
    print(
        f"{num_docs:>6} | {stats.questions:>9} | {mean:>10,.0f} | {max(stats.context_chars):>10,}"
        f" | {stats.reused_pool:>11} | {target}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        targets = _check_request(args)
        questions, pool, skipped = load_questions(args.input, args.num_questions)
        if not questions:
            raise DataFormatError(f"{args.input}: no row with a question and a non-empty answer")
        _check_fillable(args.input, questions, pool, max(args.num_docs))
    except DataFormatError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{len(questions)} questions, {len(pool)} distinct paragraphs, {skipped} rows skipped (empty answer)")
    print(f"{'docs':>6} | {'questions':>9} | {'mean chars':>10} | {'max chars':>10} | {'pool reused':>11} | file")
    for num_docs, target in zip(args.num_docs, targets, strict=True):
        try:
            _write_file(target, questions, pool, num_docs, args.seed)
        except OSError as error:
            print(f"error: cannot write {target}: {error.strerror}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
