"""What an evaluation is asked to do: the evaluator's flags, declared once as the fields of its request.

Each field of EvalRequest is a flag (common/console.flag: its type and bounds, default, help), the
ones shared with run_document among them (inference/agent_flags.py); `build_parser` makes the flags
from the fields. A field run-eval.sh sets by a variable names it (`env`: PROTOCOL, RULER_SPLITS, ...),
with run-eval.sh's own default where it always passes the flag (`launch_default`: the suites' files),
and run-eval.sh's settings take those from here (launch/eval_settings.py). The command
(`mem_agent.eval_ruler_hqa`) parses its own argument vector with the parser, and run-eval.sh's launch
(launch/evaluate.py) parses the vector it is about to run with it, in-process, so both refuse the
same mistakes with the same words.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mem_agent.agent.direct_reading import DIRECT_MODE
from mem_agent.agent.longbench_scoring import LONGBENCH_QA_TASKS
from mem_agent.agent.ruler_scoring import MEMAGENT_SPLITS, RULER_LENGTHS, RULER_SPLITS
from mem_agent.common.console import add_flags, command_parser, flag, parsed
from mem_agent.common.numbers import integer
from mem_agent.inference.agent_flags import AgentFlags, SamplingFlags, ServerFlags, url_flag
from mem_agent.settings.config import AgentMode

# run-eval.sh's LENGTH: the lengths of MemAgent's RULER-HQA table (7K to 900K tokens); the suite itself
# (evaluation/suites/ruler_hqa.RULER_HQA_LENGTHS) also knows the over-1M files, 12800 and 25600.
PAPER_HQA_LENGTHS = "50 100 200 400 800 1600 3200 6400"


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


def _root(help: str, env: str, launch_default: str) -> Any:
    """A folder of a suite's files, which run-eval.sh always names: `env`, else `launch_default`."""
    return flag(None, help, type=Path, env=env, launch_default=launch_default)


@dataclass(frozen=True)
class _Files:
    """What to evaluate, and where the results go."""

    data: tuple[Path, ...] = flag((), "eval files to run (any RULER-HQA-shaped JSON)", type=Path, nargs="*")
    data_root: Path | None = _root(
        "folder holding eval_<N>.json files (prepare-eval-data.sh gets them)", "DATA_ROOT", "data/ruler_hqa"
    )
    corpus: Path | None = flag(
        None,
        "the HotpotQA dev file that index-layout files (eval_12800/25600.json) point into"
        " (default: hotpotqa_dev.json beside each eval file)",
        type=Path,
    )
    lengths: tuple[int, ...] | None = flag(
        None,
        "with --data-root: document counts to run (default: every eval_<N>.json present, N in 50..25600)",
        type=integer(1),
        nargs="*",
        env="LENGTH",
        launch_default=PAPER_HQA_LENGTHS,
    )
    ruler_root: Path | None = _root(
        "folder holding RULER general files, eval_<split>_<length>.json (MemAgent's, RULER's, or python -m"
        " mem_agent.build_ruler's; qa_* files with index contexts: squad.json / hotpotqa_dev.json beside them)",
        "RULER_ROOT",
        "data/ruler",
    )
    ruler_splits: tuple[str, ...] | None = flag(
        None,
        f"with --ruler-root: the splits to run, of {' '.join(RULER_SPLITS)} (default: every split present)",
        nargs="*",
        choices=RULER_SPLITS,
        metavar="SPLIT",
        env="RULER_SPLITS",
        launch_default=" ".join(MEMAGENT_SPLITS),  # the eleven MemAgent's run.py evaluates: not cwe, qa_2
    )
    ruler_lengths: tuple[int, ...] | None = flag(
        None,
        "with --ruler-root: the lengths in tokens to run, e.g. 8192 131072 (default: every length present)",
        type=integer(1),
        nargs="*",
        env="RULER_LENGTHS",
        launch_default=" ".join(map(str, RULER_LENGTHS)),
    )
    longbench_root: Path | None = _root(
        "folder holding LongBench (v1) task files, <task>.jsonl as LongBench's data/ has them",
        "LONGBENCH_ROOT",
        "data/longbench",
    )
    longbench_tasks: tuple[str, ...] | None = flag(
        None,
        f"with --longbench-root: the QA tasks to run, of {' '.join(LONGBENCH_QA_TASKS)} (default: every task present)",
        nargs="*",
        choices=LONGBENCH_QA_TASKS,
        metavar="TASK",
        env="LONGBENCH_TASKS",
        launch_default=" ".join(LONGBENCH_QA_TASKS),
    )
    output_dir: Path = flag(Path("runs/eval"), "results folder (default: %(default)s)", type=Path)


@dataclass(frozen=True)
class EvalRequest(AgentFlags, SamplingFlags, ServerFlags, _Files):
    """The evaluator's flags, parsed: _Files' first, then the server's, sampling and agent flags, then these."""

    url: tuple[str, ...] = url_flag(many=True)  # in ServerFlags' place
    mode: str | None = flag(
        None,
        "memagent / rememr1: the memory agent (sets MEM_MODE); direct: the long-context baseline,"
        " the whole document in one prompt (default: MEM_MODE, else memagent)",
        choices=[mode.value for mode in AgentMode] + [DIRECT_MODE],
    )
    context_window: int | None = flag(
        None,
        "--mode direct: the model's window in tokens, prompt and answer (MEM_MAX_FINAL) together; a longer"
        " document keeps its first and last halves (default: max_position_embeddings in the model's config.json)",
        type=integer(1),
    )
    window_preset: str | None = flag(
        None,
        "--mode direct at the window MemAgent's baselines used: memagent-128k (prompts cut to 120,000 tokens,"
        " answers up to 10,000) or memagent-1m (990,000 and 10,000); sets --mode, --context-window, --max-final",
        choices=sorted(WINDOW_PRESETS),
    )
    concurrency: int = flag(256, "requests in flight, all servers (default: 256)", type=integer(1), env="CONCURRENCY")
    questions_in_flight: int = flag(128, "questions at once (default: 128)", type=integer(1), env="QUESTIONS_IN_FLIGHT")
    limit: int | None = flag(None, "only the first N questions of each file", type=integer(1), env="LIMIT")
    force: bool = flag(False, "discard earlier results and run every item again", action="store_true")
    no_plot: bool = flag(False, "skip every suite's figure (PNG)", action="store_true")
    empty_as_wrong: bool = flag(
        False,
        "count an item answered with nothing (an empty final answer) as wrong; by default it is left out"
        " of the mean and counted in the tables' empty column, as MemAgent's evaluator does (default: off)",
        action="store_true",
    )
    paper: tuple[str, ...] = flag(
        (),
        "set the run beside a published table (evaluation/paper_tables.json; repeatable): a sub_em table's"
        " rows are drawn dashed on the accuracy plot, a ruler_average table's below the heat map; both go to"
        " summary.json's 'paper', the lengths this run has (default: none)",
        action="append",
        metavar="TABLE[:ROW]",
    )
    save_trajectories: bool = flag(
        False,
        "also keep each item's turns (every memory written, cut or not, the answer) in"
        " trajectories_<N>.jsonl beside results_<N>.jsonl; about 4 bytes per generated token (default: off)",
        action="store_true",
    )
    check: bool = flag(
        False,
        "make every check the run makes before its first request, and only those: the arguments and MEM_*"
        " settings, matplotlib (unless --no-plot), every eval file read in full, --output-dir not held by a live"
        " run, its earlier results made with the same answer-shaping settings (its run.json) for the same items,"
        " a server named, the tokenizer loaded; print 'left to run: N' (items without a finished result);"
        " contact no server, write nothing (exit 0 or 2) (default: off)",
        action="store_true",
    )


def parse_request(argv: Sequence[str] | None = None, *, raising: bool = False) -> EvalRequest:
    """The request an argument vector makes. A bad flag exits with status 2 and argparse's usage line,
    as a command does; with `raising` it is a UsageError instead (a launch checking the vector)."""
    parser = build_parser(raising=raising)
    args = parser.parse_args(argv)
    if args.window_preset is not None:
        _apply_preset(parser, args)
    return parsed(EvalRequest, args)


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
    add_flags(parser, EvalRequest)
    return parser
