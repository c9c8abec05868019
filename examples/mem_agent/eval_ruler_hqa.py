"""RULER-HQA evaluation: accuracy of a memory agent against context length.

    python -m mem_agent.eval_ruler_hqa --data-root DATA --lengths 50 200 800 --url http://127.0.0.1:8000

Protocol (MemAgent's): one sample per question at temperature 0.7 / top_p 0.95, the answer read
from its last \\boxed{}, reported as sub-string exact match (sub_em) x 100 per length, with EM, F1
and the strict training reward beside it. EM and F1 are the official HotpotQA evaluator's;
MEM_FOLD_UNICODE=1 and MEM_SUB_EM_GUARD=1 opt into Unicode folding and the empty-answer guard, and
summary.json records which rules scored the run ("scoring"). Every question runs the same workflow
as training.

How it runs: questions are read one at a time from each file (a 6400-document file is ~450 MB
and is never loaded whole), up to `--questions-in-flight` at once, each pipelining its own turns;
requests share one limit (`--concurrency`) served most-turns-left first. Each finished question
is appended to `results_<file>.jsonl` at once; a rerun resumes by item id (`--force` redoes),
and refuses earlier results made with other settings. At the end: a per-length table,
`summary.json` (with the facts of every run that produced the results), and
`accuracy_vs_length.png`. Before any of it, every eval file is read in full (one bad item is an
exit 2 before the first request) and every server is connected to once. `--check` validates the
arguments, the data and the reuse, says how many items are left to run, and starts nothing.
With `--save-trajectories`, each item's turns (every memory it wrote, cut or not, and the answer)
go to `trajectories_<file>.jsonl` as trajectory records (observability/trajectory_records.py),
one per item, kept in step with the results across resumes.
`--mode direct` runs the long-context baseline instead: the same model reading the whole document
in one prompt, cut in the middle to fit `--context-window` as RULER does; summary.json records the
mode, so `python -m mem_agent.compare` puts both runs on one plot.
`--ruler-root` adds RULER's general tasks (`eval_<split>_<length>.json`, `--ruler-splits`,
`--ruler-lengths`): each scored as MemAgent's ruler_general.py scores it (agent/ruler_scoring.py),
kept under "ruler" in the same summary.json and drawn as `ruler_heatmap.png`.
One run per `--output-dir` at a time: the folder is locked (common/run_folder.py) before it is
read, and a second evaluator on it is refused at once (exit 2), naming the first's PID.
Exit status: 0 all items answered, 1 some failed (they count as wrong), 2 bad usage or data.
"""

from __future__ import annotations

from collections.abc import Sequence

from mem_agent.evaluation.request import build_parser, parse_request
from mem_agent.evaluation.run import run_evaluation
from mem_agent.observability.eval_trajectories import keep_trajectories

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The request (a bad flag exits 2 with argparse's usage line), then the run (evaluation/run.py)."""
    return run_evaluation(parse_request(argv), keep_trajectories)


if __name__ == "__main__":
    raise SystemExit(main())
