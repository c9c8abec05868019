"""What an evaluation is asked to do: the evaluator's flags, parsed once into a typed request.

The parser is the one definition of the evaluator's flags: the command (`mem_agent.eval_ruler_hqa`)
parses its own argument vector with it, and run-eval.sh's launch (launch/evaluate.py) parses the
vector it is about to run with it, in-process, so both refuse the same mistakes with the same words.
The request's fields carry the parser's names, so the flags shared with run_document
(inference/agent_flags.py) read it as they read parsed arguments.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem_agent.agent.direct_reading import DIRECT_MODE
from mem_agent.agent.longbench_scoring import LONGBENCH_QA_TASKS
from mem_agent.agent.ruler_scoring import RULER_SPLITS
from mem_agent.common.console import command_parser
from mem_agent.common.numbers import integer
from mem_agent.inference.agent_flags import add_agent_flags, add_sampling_flags, add_server_flags
from mem_agent.settings.config import AgentMode


@dataclass(frozen=True)
class EvalRequest:
    """The evaluator's parsed flags (see `build_parser` for each one's meaning and default)."""

    data: tuple[Path, ...]
    data_root: Path | None
    corpus: Path | None
    lengths: tuple[int, ...] | None
    ruler_root: Path | None
    ruler_splits: tuple[str, ...] | None
    ruler_lengths: tuple[int, ...] | None
    longbench_root: Path | None
    longbench_tasks: tuple[str, ...] | None
    output_dir: Path
    url: tuple[str, ...]
    protocol: str
    model: str | None
    tokenizer: str
    temperature: float
    top_p: float
    seed: int | None
    chunk_tokens: int | None
    max_memory: int | None
    max_final: int | None
    max_chunks: int | None
    prompts: str | None
    mode: str | None
    context_window: int | None
    window_preset: str | None
    concurrency: int
    questions_in_flight: int
    limit: int | None
    force: bool
    no_plot: bool
    empty_as_wrong: bool
    paper: tuple[str, ...]
    save_trajectories: bool
    check: bool

    @classmethod
    def of(cls, args: argparse.Namespace) -> EvalRequest:
        def _tuple(values: list | None) -> tuple | None:
            return None if values is None else tuple(values)

        lists = {
            name: _tuple(getattr(args, name))
            for name in ("lengths", "ruler_splits", "ruler_lengths", "longbench_tasks")
        }
        given = {"data": tuple(args.data), "url": tuple(args.url or ()), "paper": tuple(args.paper)}
        return cls(**vars(args) | given | lists)


@dataclass(frozen=True)
class WindowPreset:
    """A window MemAgent's direct baselines ran with (taskutils/memory_eval/run.py's ENV: MAX_INPUT_LEN
    prompt tokens, middle-truncated, and MAX_OUTPUT_LEN answer tokens)."""

    input_tokens: int
    output_tokens: int

    @property
    def context_window(self) -> int:
        return self.input_tokens + self.output_tokens


WINDOW_PRESETS = {
    "memagent-128k": WindowPreset(120_000, 10_000),  # its 128K models: R1-Distill, QwenLong-L1, Qwen2.5-128k
    "memagent-1m": WindowPreset(990_000, 10_000),  # its 1M models: Qwen2.5-7B/14B-Instruct-1M
}


def parse_request(argv: Sequence[str] | None = None, *, raising: bool = False) -> EvalRequest:
    """The request an argument vector makes. A bad flag exits with status 2 and argparse's usage line,
    as a command does; with `raising` it is a UsageError instead (a launch checking the vector)."""
    parser = build_parser(raising=raising)
    args = parser.parse_args(argv)
    if args.window_preset is not None:
        _apply_preset(parser, args)
    return EvalRequest.of(args)


def _apply_preset(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--window-preset sets --mode direct, --context-window and --max-final, so none may be given beside it."""
    given = [
        flag for flag, value in (("--context-window", args.context_window), ("--max-final", args.max_final)) if value
    ]
    if given or args.mode not in (None, DIRECT_MODE):
        clash = " and ".join(given) if given else f"--mode {args.mode}"
        parser.error(
            f"--window-preset {args.window_preset} sets --mode direct, --context-window and --max-final: drop {clash}"
        )
    preset = WINDOW_PRESETS[args.window_preset]
    args.mode, args.context_window, args.max_final = DIRECT_MODE, preset.context_window, preset.output_tokens


def build_parser(*, raising: bool = False) -> argparse.ArgumentParser:
    parser = command_parser(
        "mem_agent.eval_ruler_hqa",
        raising=raising,
        description="Evaluate a memory agent on RULER-HQA files (eval_<docs>.json), RULER's general tasks"
        " (eval_<split>_<length>.json, or RULER's own <length>/data/<split>/validation.jsonl) and LongBench QA"
        " (<task>.jsonl), and report each suite's table and figure.",
    )
    parser.add_argument(
        "--data", type=Path, nargs="*", default=[], help="eval files to run (any RULER-HQA-shaped JSON)"
    )
    parser.add_argument("--data-root", type=Path, default=None, help="folder holding eval_<N>.json files")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=None,
        help="the HotpotQA dev file that index-layout files (eval_12800/25600.json) point into"
        " (default: hotpotqa_dev.json beside each eval file)",
    )
    parser.add_argument(
        "--lengths",
        type=integer(1),
        nargs="*",
        default=None,
        help="with --data-root: document counts to run (default: every eval_<N>.json present, N in 50..25600)",
    )
    parser.add_argument(
        "--ruler-root",
        type=Path,
        default=None,
        help="folder holding RULER general files, eval_<split>_<length>.json (qa_* files with index contexts:"
        " squad.json / hotpotqa_dev.json beside them)",
    )
    parser.add_argument(
        "--ruler-splits",
        nargs="*",
        choices=RULER_SPLITS,
        default=None,
        metavar="SPLIT",
        help=f"with --ruler-root: the splits to run, of {' '.join(RULER_SPLITS)} (default: every split present)",
    )
    parser.add_argument(
        "--ruler-lengths",
        type=integer(1),
        nargs="*",
        default=None,
        help="with --ruler-root: the lengths in tokens to run, e.g. 8192 131072 (default: every length present)",
    )
    parser.add_argument(
        "--longbench-root",
        type=Path,
        default=None,
        help="folder holding LongBench (v1) task files, <task>.jsonl as LongBench's data/ has them",
    )
    parser.add_argument(
        "--longbench-tasks",
        nargs="*",
        choices=LONGBENCH_QA_TASKS,
        default=None,
        metavar="TASK",
        help=f"with --longbench-root: the QA tasks to run, of {' '.join(LONGBENCH_QA_TASKS)}"
        " (default: every task present)",
    )
    parser.add_argument(
        "--output-dir", type=Path, default=Path("runs/eval"), help="results folder (default: %(default)s)"
    )
    add_server_flags(parser, many=True)
    add_sampling_flags(parser)
    add_agent_flags(parser)
    parser.add_argument(
        "--mode",
        choices=[mode.value for mode in AgentMode] + [DIRECT_MODE],
        default=None,
        help="memagent / rememr1: the memory agent (sets MEM_MODE); direct: the long-context baseline,"
        " the whole document in one prompt (default: MEM_MODE, else memagent)",
    )
    parser.add_argument(
        "--context-window",
        type=integer(1),
        default=None,
        help="--mode direct: the model's window in tokens, prompt and answer (MEM_MAX_FINAL) together; a longer"
        " document keeps its first and last halves (default: max_position_embeddings in the model's config.json)",
    )
    parser.add_argument(
        "--window-preset",
        choices=sorted(WINDOW_PRESETS),
        default=None,
        help="--mode direct at the window MemAgent's baselines used: memagent-128k (prompts cut to 120,000 tokens,"
        " answers up to 10,000) or memagent-1m (990,000 and 10,000); sets --mode, --context-window, --max-final",
    )
    parser.add_argument(
        "--concurrency", type=integer(1), default=256, help="requests in flight, all servers (default: 256)"
    )
    parser.add_argument("--questions-in-flight", type=integer(1), default=128, help="questions at once (default: 128)")
    parser.add_argument("--limit", type=integer(1), default=None, help="only the first N questions of each file")
    parser.add_argument("--force", action="store_true", help="discard earlier results and run every item again")
    parser.add_argument("--no-plot", action="store_true", help="skip every suite's figure (PNG)")
    parser.add_argument(
        "--empty-as-wrong",
        action="store_true",
        help="count an item answered with nothing (an empty final answer) as wrong; by default it is left out"
        " of the mean and counted in the tables' empty column, as MemAgent's evaluator does (default: off)",
    )
    parser.add_argument(
        "--paper",
        action="append",
        default=[],
        metavar="TABLE[:ROW]",
        help="set the run beside a published table (evaluation/paper_tables.json; repeatable): a sub_em table's"
        " rows are drawn dashed on the accuracy plot, a ruler_average table's below the heat map; both go to"
        " summary.json's 'paper', the lengths this run has (default: none)",
    )
    parser.add_argument(
        "--save-trajectories",
        action="store_true",
        help="also keep each item's turns (every memory written, cut or not, the answer) in"
        " trajectories_<N>.jsonl beside results_<N>.jsonl; about 4 bytes per generated token (default: off)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="make every check the run makes before its first request, and only those: the arguments and MEM_*"
        " settings, matplotlib (unless --no-plot), every eval file read in full, --output-dir not held by a live"
        " run, its earlier results made with the same answer-shaping settings (its run.json) for the same items,"
        " a server named, the tokenizer loaded; print 'left to run: N' (items without a finished result);"
        " contact no server, write nothing (exit 0 or 2) (default: off)",
    )
    return parser
