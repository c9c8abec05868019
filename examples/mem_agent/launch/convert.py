"""Convert a training run's Megatron checkpoints into Hugging Face folders.

SAVE_PATH/iter_XXXXXXX becomes OUT_ROOT/iter_XXXXXXX through the trainer's own
tools/convert_torch_dist_to_hf.py, one child process per iteration. A folder with config.json is done
(the converter copies it last); one without it, an interrupted conversion, is converted again with
--force; nothing else is ever overwritten."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from mem_agent.common.printable import printable, shell_line
from mem_agent.common.usage import Problems
from mem_agent.launch.train_settings import TrainerPaths
from mem_agent.settings.command import Command, read
from mem_agent.settings.declared import Switch, setting

CONVERTER = "tools/convert_torch_dist_to_hf.py"
_ITERATION = re.compile(r"^(?:iter_)?(\d+)$")
_own = partial(setting, section="Conversion")


class ConvertSettings(TrainerPaths):
    out_root: str = _own("${SAVE_PATH}_hf", "Converted models go to OUT_ROOT/iter_XXXXXXX.", env="OUT_ROOT", path=True)
    single_iter: str = _own(
        "",
        "Convert only this iteration; unset: every iteration.",
        env="SINGLE_ITER",
        values="a number like 99 or iter_0000099",
        pattern=_ITERATION.pattern,
    )
    vocab_size: int | None = _own(
        None,
        "Rows of the embedding to keep: Megatron pads it to a multiple of 128 x TP (default: vocab_size from"
        " HF_CKPT/config.json, or its text_config).",
        env="VOCAB_SIZE",
        gt=0,
    )
    dry_run: Switch = _own(False, "Print the commands instead of running them.", env="DRY_RUN")


@dataclass(frozen=True)
class Conversion:
    """What to convert: iterations in order, the ones to redo with --force, how many are done."""

    settings: ConvertSettings
    iterations: list[str]
    redo: list[str]
    skipped: list[str]
    vocab_size: int | None
    python: str  # the converter's interpreter: PYTHON, else python3


def plan_conversion(environ: Mapping[str, str], problems: Problems, prefix: str = "") -> Conversion:
    """Every check of a conversion; problems are prefixed with `prefix` (run-eval.sh's CONVERT=1)."""
    own = Problems()
    settings = read(ConvertSettings, environ, own)
    own.dry_run = settings.dry_run
    settings.require(own, "save_path", "hf_ckpt", "trainer_root", "megatron_path", inside=CONVERTER)
    hf = Path(settings.hf_ckpt)
    if hf.exists() and not (hf / "config.json").is_file():
        own.missing(f"HF_CKPT={hf} has no config.json: not a Hugging Face model folder")
    vocab = settings.vocab_size or _vocabulary(hf / "config.json", own)
    iterations = _iterations(settings, own)
    problems.extend(own.found, prefix)
    problems.warnings.extend(f"{prefix}{text}" for text in own.warnings)
    out_root = Path(settings.out_root)
    done = [name for name in iterations if (out_root / name / "config.json").is_file()]
    redo = [name for name in iterations if name not in done and (out_root / name).exists()]
    todo = [name for name in iterations if name not in done]
    return Conversion(settings, todo, redo, done, vocab, environ.get("PYTHON", "").strip() or "python3")


def _vocabulary(config_path: Path, problems: Problems) -> int | None:
    """The model's own vocabulary size (a VLM keeps it under text_config), read before anything runs."""
    if not config_path.is_file():
        return None
    where = f"HF_CKPT={config_path.parent}: {config_path}"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        problems.problem(f"{where}: {error}")
        return None
    try:
        size = config.get("vocab_size") or config.get("text_config", {}).get("vocab_size")
    except AttributeError:  # not a JSON object
        size = None
    if type(size) is not int or size < 1:
        problems.problem(f"{where} has no vocab_size (set VOCAB_SIZE)")
        return None
    return size


def _iterations(settings: ConvertSettings, problems: Problems) -> list[str]:
    save = Path(settings.save_path)
    if settings.single_iter:
        name = f"iter_{int(_ITERATION.fullmatch(settings.single_iter).group(1)):07d}"  # type: ignore[union-attr]
        if save.is_dir() and not (save / name).is_dir():
            problems.missing(f"SINGLE_ITER={settings.single_iter}: {save / name} not found")
        return [name]
    if not save.is_dir():
        return []
    found = sorted(entry.name for entry in save.iterdir() if entry.is_dir() and entry.name.startswith("iter_"))
    if not found:
        problems.missing(f"SAVE_PATH={save} has no iter_* checkpoint folders (has training saved yet?)")
    return found


def converted_path(environ: Mapping[str, str], problems: Problems) -> tuple[Conversion, Path]:
    """The conversion run-eval.sh's CONVERT=1 runs first, and the model folder it writes."""
    conversion = plan_conversion(environ, problems, prefix="CONVERT=1, convert-to-hf.sh: ")
    name = conversion.iterations[0] if conversion.iterations else (conversion.skipped or ["iter_?"])[0]
    return conversion, Path(conversion.settings.out_root) / name


def _subprocess(argv: Sequence[str]) -> int:
    return subprocess.run(argv, check=False).returncode


def convert(conversion: Conversion, run: Callable[[Sequence[str]], int] = _subprocess) -> int:
    """Each iteration's converter command, printed in a dry run or else through `run`, stopping at the
    first that fails; then one line of what was done."""
    settings = conversion.settings
    save, out_root = Path(settings.save_path), Path(settings.out_root)
    for name in conversion.skipped:
        print(printable(f"skip {name}: {out_root / name} is already converted (it has config.json)"), file=sys.stderr)
    converter = ["env", f"PYTHONPATH={settings.megatron_path}:{settings.trainer_root}", conversion.python]
    converter += [str(Path(settings.trainer_root) / CONVERTER)]
    vocab = ["--vocab-size", str(conversion.vocab_size)] if conversion.vocab_size else []
    for name in conversion.iterations:
        paths = ["--input-dir", str(save / name), "--output-dir", str(out_root / name), "--origin-hf-dir"]
        if force := ["--force"] if name in conversion.redo else []:
            print(printable(f"redo {name}: {out_root / name} has no config.json (interrupted)"), file=sys.stderr)
        argv = [*converter, *paths, settings.hf_ckpt, *vocab, *force]
        if settings.dry_run:
            print(shell_line(argv))
        elif code := run(argv):
            return code
    done = f"{len(conversion.iterations)}, skipped {len(conversion.skipped)} (already converted)"
    print(printable(f"{'would convert' if settings.dry_run else 'converted'} {done}; outputs in {out_root}"))
    return 0


COMMAND = Command(
    "mem_agent.launch.convert",
    ConvertSettings,
    "convert-to-hf.sh",
    __doc__ or "",
    "PYTHON: the interpreter with torch and the trainer's requirements that runs the converter (default: python3).",
)


def main(argv: Sequence[str] | None = None) -> int:
    return COMMAND.run(argv, os.environ, plan_conversion, convert)


if __name__ == "__main__":
    raise SystemExit(main())
