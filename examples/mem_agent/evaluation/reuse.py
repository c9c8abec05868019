"""Which earlier results a run may reuse: those made with the settings it runs with, as the run
folder's record of them says.

A run writes `run.json` (`write_record`) under the folder's lock before its first result: the facts
that shape an answer (the MEM_* settings that do, the sampling, the tokenizer, the prompts, the
mode, the model's fingerprint, each eval file's sha256) and the results files made with them. A
later run into the folder (`check_reuse`: the run, its `--check` and run-eval.sh's check) compares
its own facts with the record's and refuses, in one line naming every change, to mix in results of
other settings. A results file it would read that no record covers holds results of unknown
settings (a run killed before its record, or an older version's run killed before summary.json; a
file a `--force` run with other settings left beside its own) and is refused too: `--force` starts
over. A folder from before the record is read by summary.json's latest run facts, which then cover
the results files of its cells.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pydantic

from mem_agent.agent.direct_reading import DIRECT_MODE
from mem_agent.agent.prompt_sets import prompt_facts
from mem_agent.agent.records import SamplingParams
from mem_agent.agent.scoring import ReportingRules
from mem_agent.common.guarded_files import write_text_atomic
from mem_agent.common.usage import UsageError
from mem_agent.evaluation.summary_file import SUMMARY_NAME, read_document, read_summary
from mem_agent.settings.config import ANSWER_SHAPING_FIELDS, MemAgentConfig
from mem_agent.tokenization.tokenizer import BUNDLED_QWEN3

RECORD_NAME = "run.json"

# Facts that decide what an answer is: results made under other values cannot be mixed with new ones.
ANSWER_SHAPING = (
    "config", "sampling", "tokenizer", "data", "data_sha256", "corpus_sha256", "prompts", "mode", "direct", "model"
)  # fmt: skip
# Of a fact that holds many values, only these are compared: summary.json records every setting
# under "config", but a timeout, the retries or the wire protocol never change a finished result
# (config.Setting.shapes_answers), so raising them to rerun failed items must not be refused; of the
# model, its fingerprint (its name is what a server calls it).
COMPARED_VALUES: dict[str, frozenset[str]] = {"config": ANSWER_SHAPING_FIELDS, "model": frozenset({"sha256"})}
# Facts held per eval file (by label): a record keeps those of the files earlier runs made.
PER_FILE = ("data", "data_sha256", "corpus_sha256")


class ReuseError(ValueError):
    """Earlier results that cannot be reused; the message names the folder and the way out."""


# The answer-shaping settings the long-context baseline reads (agent/direct_reading.py: the answer's
# token limit and thinking; scoring: the reporting rules); the memory agent's others are not used.
DIRECT_SETTINGS = frozenset({"max_final_tokens", "thinking", "fold_unicode", "sub_em_guard"})


def recorded_settings(config: MemAgentConfig, mode: str) -> dict[str, Any]:
    """The settings a run of `mode` used: every one for the memory agent; for `direct`, of the
    answer-shaping ones only DIRECT_SETTINGS (a chunk size or a memory limit it never read would
    read as if used)."""
    recorded = config.recorded()
    if mode != DIRECT_MODE:
        return recorded
    return {k: v for k, v in recorded.items() if k in DIRECT_SETTINGS or k not in ANSWER_SHAPING_FIELDS}


def settings_facts(
    tokenizer: str, config: MemAgentConfig, sampling: SamplingParams, prompts: dict[str, Any], mode: str = ""
) -> dict[str, Any]:
    """What shapes the answers, as typed JSON values (enums by the names the settings use); every
    setting the mode used is recorded, and `reuse_problems` compares those that shape answers.
    `prompts` are the facts of the prompts the run uses (built-in, or the template file's path,
    sha256 and source, from the read that built them)."""
    return {
        "config": recorded_settings(config, mode),
        "scoring": asdict(ReportingRules.of(config)),  # official HotpotQA unless opted out
        "sampling": asdict(sampling),
        "tokenizer": _tokenizer_fact(tokenizer),
        "prompts": prompts,
    }


def _tokenizer_fact(tokenizer: str) -> str:
    """The tokenizer as summary.json names it: a folder by its absolute path, whether or not it exists yet."""
    return tokenizer if tokenizer == BUNDLED_QWEN3 else str(Path(tokenizer).expanduser().resolve())


def facts_known_without_a_server(
    tokenizer: str, config: MemAgentConfig, sampling: SamplingParams, mode: str = ""
) -> dict[str, Any]:
    """The answer-shaping facts known before the data, the model and the server exist (run-eval.sh's
    check): all but the data's and the model's. The tokenizer is left out when it is the bundled
    fallback, since the local stack sets MEM_MODEL_PATH (the real run's --tokenizer) only when it starts."""
    facts = settings_facts(tokenizer, config, sampling, prompt_facts(config), mode)
    if tokenizer == BUNDLED_QWEN3:
        del facts["tokenizer"]
    return facts


def reuse_problems(earlier: dict[str, Any], now: dict[str, Any], keys: Sequence[str] = ANSWER_SHAPING) -> list[str]:
    """`config.chunk_tokens 5000 -> 4000` for each answer-shaping fact that changed (one level deep;
    of "config" and "model" only COMPARED_VALUES). Values are compared as text, so the older
    all-strings layout compares equal to typed values; a fact missing on either side is not compared,
    nor a fact of COMPARED_VALUES that is not an object on both (an older summary's model name)."""
    changes = []
    for key in keys:
        old, new = earlier.get(key), now.get(key)
        if old is None or new is None:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            names = old.keys() & new.keys()
            for name in sorted(names & COMPARED_VALUES[key] if key in COMPARED_VALUES else names):
                if _shown(old[name]) != _shown(new[name]):
                    changes.append(f"{key}.{name} {_shown(old[name])} -> {_shown(new[name])}")
        elif key not in COMPARED_VALUES and _shown(old) != _shown(new):
            changes.append(f"{key} {_shown(old)} -> {_shown(new)}")
    return changes


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value)


class _RecordFile(pydantic.BaseModel):
    """run.json: the facts the results were made with, and the results files they cover."""

    facts: dict[str, Any]
    results: list[str]


@dataclass(frozen=True)
class Record:
    facts: dict[str, Any]
    results: frozenset[str]  # results file names


def read_record(output_dir: Path) -> Record | None:
    """The folder's record: run.json, else (a folder from before it) summary.json's latest run
    covering the results files of its cells; None where there is neither."""
    try:
        record = read_document(Path(output_dir) / RECORD_NAME, _RecordFile)
    except FileNotFoundError:
        summary = _summary(output_dir)
        if summary is None:
            return None
        return Record(summary["run"] or {}, frozenset(f"results_{cell['label']}.jsonl" for cell in summary["results"]))
    except UsageError as error:
        raise ReuseError(f"{error}: move it aside, or pass --force to start over") from None
    return Record(record.facts, frozenset(record.results))


def read_earlier_runs(output_dir: Path) -> list[dict[str, Any]]:
    """Facts of the runs summary.json says made the folder's results, oldest first (none without one).

    Also reads the older layout, whose single `run` held every config value as a string.
    """
    summary = _summary(output_dir)
    runs = [] if summary is None else [*summary["earlier_runs"], summary["run"]]
    return [run for run in runs if isinstance(run, dict)]


def _summary(output_dir: Path) -> dict[str, Any] | None:
    try:
        return read_summary(Path(output_dir) / SUMMARY_NAME)
    except FileNotFoundError:
        return None
    except UsageError as error:
        raise ReuseError(f"{error}: move it aside, or pass --force to start over") from None


def check_reuse(output_dir: Path, facts: dict[str, Any], results: Collection[str]) -> list[dict[str, Any]]:
    """The facts of the earlier runs summary.json names, once the folder's results are known to be
    made the way this run makes its answers (`facts`); `results` are the results files this run
    reads. A ReuseError naming every change, or the files of unknown settings, otherwise."""
    held = {path.name for path in Path(output_dir).glob("results_*.jsonl") if _holds_lines(path)}
    if not held:
        return []
    record = read_record(output_dir)
    covered = record.results if record is not None else frozenset()
    if unknown := sorted(name for name in results if name in held and name not in covered):
        raise ReuseError(
            f"{output_dir} holds results whose settings are unknown ({', '.join(unknown)}: no {RECORD_NAME}"
            " records them; a run stopped before it wrote one?): pass --force to redo them, or choose another"
            " --output-dir"
        )
    changes = reuse_problems(record.facts, facts) if record is not None and held & covered else []
    if changes:
        raise ReuseError(
            f"{output_dir} holds results made with other settings ({'; '.join(changes)}):"
            " pass --force to redo them, or choose another --output-dir"
        )
    return read_earlier_runs(output_dir)


def _holds_lines(path: Path) -> bool:
    """A results file with something in it (a link is not one: the run refuses it by name)."""
    status = path.lstat()
    return stat.S_ISREG(status.st_mode) and status.st_size > 0


def write_record(output_dir: Path, facts: dict[str, Any], results: Collection[str], *, force: bool) -> None:
    """Record `facts` as what the results files `results` are made with, before the first of them
    is written; the record of earlier runs with the same facts is kept (their files and each eval
    file's facts), one of other facts (no result of it is reused) or --force is replaced."""
    earlier = None if force else read_record(output_dir)
    covered, merged = set(results), dict(facts)
    if earlier is not None and not reuse_problems(earlier.facts, facts):
        covered |= earlier.results
        for key in PER_FILE:
            old, new = earlier.facts.get(key), facts.get(key)
            if isinstance(old, dict) and isinstance(new, dict):
                merged[key] = old | new
    path = Path(output_dir) / RECORD_NAME
    try:
        write_text_atomic(path, json.dumps({"facts": merged, "results": sorted(covered)}, indent=2) + "\n")
    except OSError as error:  # a write to the temporary file names none: the user must read this one
        raise OSError(error.errno, error.strerror, str(path)) from None
