"""run-eval.sh's settings, declared once (settings/declared.py), and the rules of its three modes
(docs/evaluation.md). A setting the chosen mode would ignore is a problem, judged on what the user set.

The evaluator's flags that name a variable (evaluation/request.py) become settings here, each passed to
its flag as written and judged by the evaluator's own parser (launch/evaluate.py), so a flag's help,
type and bounds are written once; the suites' (`launch_default`) are always passed.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import Field, fields
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, create_model

from mem_agent.common.console import flag_name
from mem_agent.common.numbers import INT_LIMIT
from mem_agent.common.usage import Problems
from mem_agent.evaluation.request import EvalRequest
from mem_agent.serving.cpu_stack import CPU_STACK_MODULE
from mem_agent.settings.declared import ENV_MODEL_CONFIG, Switch, setting, words

DEMO_LENGTHS = "50 200"
GPU = "Serving on GPUs (MODEL_PATH or CONVERT=1, where nvidia-smi lists GPUs; without one: vLLM's CPU build)"
EVALUATOR = "Evaluator flags (passed on only when set, checked by the evaluator; PROTOCOL on the CPU stack: vllm)"
SUITES = "Each suite's files (SUITE; the evaluator's flags, always passed, checked by their own type and choices)"
SERVER_KNOBS = ("TP", "DP", "DP_MODE", "HOST", "PORT", "EXTRA_SERVE_ARGS", "HEALTH_INTERVAL", "SERVE_STOP_TIMEOUT")
DEMO_CAPS = ("max_memory", "max_final")  # DEMO_MAX_MEMORY: --max-memory while MEM_MAX_MEMORY is unset


class Mode(enum.StrEnum):
    DEMO = "demo"  # the tiny Qwen3 on the CPU stack, synthetic data
    URL = "url"  # a running server or router
    SERVE = "serve"  # a model served here: on GPUs, or on the CPU stack


class Suite(enum.StrEnum):
    HQA = "hqa"  # RULER-HQA: DATA_ROOT's eval_<N>.json at LENGTH documents
    RULER = "ruler"  # RULER's general tasks: RULER_ROOT's files
    LONGBENCH = "longbench"  # LongBench QA: LONGBENCH_ROOT's <task>.jsonl


def runs(settings: EvalSettings, suite: Suite) -> bool:
    return suite.value in settings.suite.split()


# The suites a run evaluates, into one run folder and one summary.json (SUITE); all = every suite.
Suites = Annotated[
    words(choices=set(Suite)), BeforeValidator(lambda text: " ".join(Suite) if str(text).strip() == "all" else text)
]


class DpMode(enum.StrEnum):
    VLLM = "vllm"
    ROUTER = "router"


_mode = partial(setting, section="What to evaluate (the mode)")
_data = partial(setting, section="Data and output")
_gpu = partial(setting, section=GPU)
_count = partial(_gpu, ge=1, le=INT_LIMIT)
_demo = partial(setting, section="Demo only (no MODEL_PATH, no URL)")


class _Launch(BaseModel):
    """run-eval.sh's settings that are the launch's own (the evaluator's follow: EvalSettings)."""

    model_config = ENV_MODEL_CONFIG

    model_path: str = _mode(
        "",
        "Hugging Face model folder, served here; with URL it only names the tokenizer. Neither set: the CPU demo"
        " (tiny Qwen3, synthetic data).",
        env="MODEL_PATH",
        values="a model folder",
    )
    convert: Switch = _mode(
        False,
        "First convert a Megatron checkpoint with convert-to-hf.sh and evaluate that; it reads SAVE_PATH,"
        " HF_CKPT, SINGLE_ITER (required), OUT_ROOT, TRAINER_ROOT, MEGATRON_PATH (see convert-to-hf.sh --help).",
        env="CONVERT",
    )
    url: str = _mode(
        "",
        "Evaluate this running server or router instead of serving a model; it must answer (a connection)"
        " before the run starts.",
        env="URL",
        values="an address starting with http:// or https://",
        pattern=r"^https?://\S+$",
    )
    suite: Suites = _data(
        Suite.HQA.value,
        "What to evaluate, one or more of: hqa = RULER-HQA (DATA_ROOT, LENGTH); ruler = RULER's"
        " general tasks (RULER_ROOT, RULER_SPLITS, RULER_LENGTHS); longbench = LongBench QA (LONGBENCH_ROOT,"
        " LONGBENCH_TASKS); all = every suite; into one run folder and one summary.json.",
        env="SUITE",
        values="distinct words of hqa ruler longbench, or all",
    )
    save_file: str = _data(
        "",
        "Name of this run (default: the model folder's name; the demo: demo).",
        env="SAVE_FILE",
        values="a name, not a path (no '/', no leading dot)",
        pattern=r"^[^/.][^/]*$",
    )
    output_root: str = _data(
        "runs/eval",
        "Runs go to OUTPUT_ROOT/SAVE_FILE, and nothing of a run is written outside that folder (the"
        " demo's default: runs). A rerun into the same folder reuses its finished results; the evaluator refuses"
        " results made with other settings (EXTRA_EVAL_ARGS=--force redoes them). One run per folder at a time.",
        env="OUTPUT_ROOT",
        values="a folder",
    )
    tp: int = _count(1, "Tensor-parallel size of each model replica.", env="TP")
    dp: int = _count(1, "Data-parallel replicas, DP x TP GPUs in all.", env="DP")
    dp_mode: DpMode = _gpu(
        DpMode.VLLM,
        "With DP > 1: vllm = one server with vLLM's own --data-parallel-size; router = DP servers, one"
        " per TP GPUs, ports PORT+1 ... PORT+DP, behind vllm-router on PORT (metrics on PORT+DP+1).",
        env="DP_MODE",
    )
    host: str = _gpu("127.0.0.1", "Where the server (or router) listens.", env="HOST")
    port: int = _gpu(
        8000, "The server's (or router's) port.", env="PORT", values="a port number (1 to 65535)", ge=1, le=65535
    )
    extra_serve_args: str = _gpu(
        "", "More vLLM server flags, split into words.", env="EXTRA_SERVE_ARGS", values="words"
    )
    serve_timeout: int = _count(
        1800, "Seconds to wait for the servers to be healthy (also on CPU).", env="SERVE_TIMEOUT"
    )
    health_interval: int = _count(5, "Seconds between two health checks of a starting server.", env="HEALTH_INTERVAL")
    serve_stop_timeout: int = _count(
        30,
        "Seconds a stopped server or evaluator gets after SIGTERM before SIGKILL; also after this script is killed"
        " (kill -9 included).",
        env="SERVE_STOP_TIMEOUT",
    )
    num_gpus: int | None = _count(
        None,
        "DRY_RUN=1 only: preview the launch on a node with this many GPUs, on any machine (default: the GPUs"
        " nvidia-smi lists; where it lists none and a setting above is set: DP x TP).",
        env="NUM_GPUS",
    )


def _knob(field: Field) -> tuple[Any, Any]:
    """The evaluator's flag `field` as run-eval.sh's variable, its help the flag's: passed to the flag as
    written where it is set and judged by the evaluator's own parser (launch/evaluate.py), so its bounds
    are the flag's alone; a suite's (`launch_default`) always passed, with the launch's default."""
    options, launch_default = field.metadata["options"], field.metadata["launch_default"]
    many, kind, choices = options.get("nargs") == "*", options.get("type", str), options.get("choices")
    what = f"one of {', '.join(choices)}" if choices else "a folder" if kind is Path else str(kind)
    default = launch_default if launch_default is not None else "" if field.default is None else str(field.default)
    doc = f"{flag_name(field)}: {re.sub(r' [(]default: [^()]*[)]$', '', field.metadata['help'])}"
    return (words(kind, choices) if many else str), setting(
        default,
        doc,
        env=field.metadata["env"],
        values=f"distinct words, each {what}" if many else what,
        section=EVALUATOR if launch_default is None else SUITES,
    )


_FLAGS = {field.name: field for field in fields(EvalRequest)}
# The evaluator's flags that name a variable of run-eval.sh (evaluation/request.py), after the launch's own settings.
_Knobs = create_model(
    "_Knobs", __base__=_Launch, **{name: _knob(field) for name, field in _FLAGS.items() if field.metadata["env"]}
)


class EvalSettings(_Knobs):
    """run-eval.sh's settings, in the order its --help lists them."""

    extra_eval_args: str = setting(
        "", "More evaluator flags, split into words.", env="EXTRA_EVAL_ARGS", values="words", section=EVALUATOR
    )
    demo_questions: int = _demo(
        8, f"Synthetic questions per length (LENGTH's default: {DEMO_LENGTHS}).", env="DEMO_QUESTIONS", ge=1
    )
    demo_max_memory: int = _demo(
        128,
        "--max-memory while MEM_MAX_MEMORY is unset (the CPU server samples slowly; the tiny model says nothing).",
        env="DEMO_MAX_MEMORY",
        values="an integer",
    )
    demo_max_final: int = _demo(
        64, "--max-final while MEM_MAX_FINAL is unset.", env="DEMO_MAX_FINAL", values="an integer"
    )
    dry_run: Switch = setting(
        False,
        "Print the commands instead of running them; what this machine lacks is a warning.",
        env="DRY_RUN",
        section="Other",
    )

    def mode(self) -> Mode:
        if self.url:
            return Mode.URL
        return Mode.SERVE if self.model_path or self.convert else Mode.DEMO


def judge_unused(settings: EvalSettings, environ: Mapping[str, str], problems: Problems, on_gpus: bool) -> None:
    """Each setting the mode would ignore that the user set is a problem, with the reason; then the
    settings the mode cannot take together."""
    mode, cpu_build = settings.mode(), f"vLLM's CPU build ({CPU_STACK_MODULE})"
    no_gpu = "no GPU found (nvidia-smi is not on PATH or lists none): the model is served by"
    demo_data = "the demo makes its own synthetic data (set MODEL_PATH or URL to evaluate DATA_ROOT's files)"
    dry_gpus = "it sizes the node a dry run of a served model (MODEL_PATH or CONVERT=1) previews; a real run uses"
    for ignored, names, why in (
        *(
            (not runs(settings, suite), names, f"they choose {what} (SUITE={suite} or all)")
            for suite, names, what in (
                (Suite.RULER, ("RULER_ROOT", "RULER_SPLITS", "RULER_LENGTHS"), "RULER's general tasks"),
                (Suite.LONGBENCH, ("LONGBENCH_ROOT", "LONGBENCH_TASKS"), "LongBench QA"),
                (Suite.HQA, ("DATA_ROOT", "LENGTH"), "RULER-HQA's files"),
            )
        ),
        (mode is Mode.DEMO, ("DATA_ROOT",), demo_data),
        (mode is Mode.DEMO, SERVER_KNOBS, f"the demo serves the tiny model on {cpu_build}"),
        (
            mode is not Mode.DEMO,
            [f"DEMO_{name.upper()}" for name in ("questions", *DEMO_CAPS)],
            "the demo runs only without MODEL_PATH and URL",
        ),
        (mode is Mode.URL, (*SERVER_KNOBS, "SERVE_TIMEOUT"), "URL names a running server, nothing is served here"),
        (mode is Mode.SERVE and not on_gpus, SERVER_KNOBS, f"{no_gpu} {cpu_build}"),
        (not (mode is Mode.SERVE and settings.dry_run), ("NUM_GPUS",), f"{dry_gpus} the GPUs nvidia-smi lists"),
        (not settings.convert, ("SINGLE_ITER", "OUT_ROOT"), "they choose the checkpoint CONVERT=1 converts"),
        (settings.dp == 1, ("DP_MODE",), "it chooses how DP > 1 replicas are served"),
        # run-qwen3-4b-train.sh's rollout sampling; the evaluation's is EVAL_* in both scripts
        (True, ("TEMPERATURE", "TOP_P"), "run-eval.sh's sampling is EVAL_TEMPERATURE and EVAL_TOP_P"),
        *(
            (
                f"demo_{cap}" in settings.model_fields_set,
                (f"MEM_{cap.upper()}",),
                f"DEMO_{cap.upper()} applies only while MEM_{cap.upper()} is unset; set one of them",
            )
            for cap in DEMO_CAPS
        ),
    ):
        if ignored:
            problems.unused(names, environ, why)
    for clash, text in (
        (
            mode is Mode.DEMO and settings.suite != Suite.HQA.value,
            f"SUITE={settings.suite}: the demo runs RULER-HQA"
            " on its own synthetic data; set MODEL_PATH (or URL) to evaluate RULER_ROOT's or LONGBENCH_ROOT's files",
        ),
        (
            mode is Mode.URL and settings.convert,
            "CONVERT=1 and URL together: the converted model would not be served; unset URL to serve it here",
        ),
        (
            mode is Mode.SERVE and settings.convert and settings.model_path,
            f"CONVERT=1 evaluates the converted checkpoint: unset MODEL_PATH={settings.model_path}",
        ),
    ):
        if clash:
            problems.problem(text)


def run_folder(settings: EvalSettings) -> tuple[str, list[str]]:
    """OUTPUT_ROOT/SAVE_FILE as the user wrote it (a relative folder stays relative), and LENGTH's counts,
    each with the demo's default where it is unset."""
    demo, given = settings.mode() is Mode.DEMO, settings.model_fields_set
    root = "runs" if demo and "output_root" not in given else settings.output_root
    name = settings.save_file or ("demo" if demo else Path(settings.model_path).name or "server")
    return f"{root}/{name}", (DEMO_LENGTHS if demo and "lengths" not in given else settings.lengths).split()
