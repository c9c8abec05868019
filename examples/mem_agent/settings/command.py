"""A command's settings: declared once as a pydantic model (settings/declared.py), given as flags or
environment variables, read with every problem collected, paths resolved, and --help generated.

Each field is a flag and a variable: `--save-file NAME` is SAVE_FILE=NAME (the variable lowercased,
`_` as `-`), and a `Switch` (0 or 1) is a flag without a value that means 1. A flag wins over the
variable; both are read by `read`, so they pass and fail alike. The scripts pass their arguments on,
so the flags work on them too.

Path settings are written as the user would: `~/slime`, `${TRAINER_ROOT}/../Megatron-LM` (another
setting of the same command), a relative path (made absolute: a Ray job runs in another folder).
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mem_agent.common.console import command_parser, program_name
from mem_agent.common.usage import Problems, UsageError, refusal_text
from mem_agent.settings.declared import (
    SettingsError,
    build,
    describe,
    env_name,
    extra_of,
    shown_default,
    split_env,
)

M = TypeVar("M", bound=BaseModel)
_REFERENCE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")
P = TypeVar("P")


def read(model: type[M], environ: Mapping[str, str], problems: Problems, *, cwd: Path | None = None) -> M:
    """`model` from `environ`; a value that cannot be used is a problem and its default stands in, so
    that the checks after this one still run and every mistake is reported in one go. A model with
    DRY_RUN sets whether what the machine lacks is only a warning (`Problems.missing`)."""
    values, refused = split_env(model, environ)
    problems.extend(refused)
    try:
        settings = build(model, values)
    except SettingsError as error:
        problems.extend(error.problems)
        bad = {name for name, info in model.model_fields.items() if _named(error.problems, env_name(info))}
        settings = build(model, {name: value for name, value in values.items() if name not in bad})
    problems.dry_run = bool(getattr(settings, "dry_run", problems.dry_run))
    return resolve_paths(settings, environ, cwd or Path.cwd())


def resolve_paths(settings: M, environ: Mapping[str, str], cwd: Path) -> M:
    """Each path setting with `~` and `${OTHER}` expanded (in declaration order) and made absolute."""
    resolved: dict[str, str] = {}
    changes: dict[str, Any] = {}
    home = environ.get("HOME") or str(Path.home())
    for name, info in type(settings).model_fields.items():
        value = getattr(settings, name)
        if extra_of(info).get("path") and isinstance(value, str) and value:
            text = _REFERENCE.sub(lambda match: resolved.get(match.group(1), match.group(0)), value)
            if text == "~" or text.startswith("~/"):
                text = home + text[1:]
            text = text if Path(text).is_absolute() else str(cwd / text)
            changes[name] = value = text
        resolved[env_name(info)] = str(value)
    return settings.model_copy(update=changes)


@dataclass(frozen=True)
class Command:
    """A `mem-agent` command whose flags are its settings' fields, run by `examples/mem_agent/<script>`."""

    module: str  # its module, which names it: `mem-agent <name>` or `python -m <module>`
    model: type[BaseModel]
    script: str
    about: str
    notes: str = ""

    def run(
        self,
        argv: Sequence[str] | None,
        environ: Mapping[str, str],
        plan: Callable[[Mapping[str, str], Problems], P],
        launch: Callable[[P], int],
    ) -> int:
        """--help; or `plan` over `environ` with the flags set in it, then `launch` of what it planned
        once every check passed; or every problem in one message (exit 2), nothing started."""
        given = vars(self._parser().parse_args(sys.argv[1:] if argv is None else argv))
        if given.pop("help"):
            print(self.help_text())
            return 0
        problems = Problems()  # the plan sets dry_run once DRY_RUN is read
        try:
            planned = plan({**environ, **{name: value for name, value in given.items() if value is not None}}, problems)
            problems.raise_if_any()
        except UsageError as refused:
            print(refusal_text(refused), file=sys.stderr)
            return 2
        return launch(planned)

    def _parser(self) -> argparse.ArgumentParser:
        usage = f"{program_name(self.module)} [--FLAG VALUE ...] [-h | --help]"
        parser = command_parser(self.module, add_help=False, usage=usage)
        parser.add_argument("-h", "--help", action="store_true")
        for info in self.model.model_fields.values():
            switch = {"action": "store_const", "const": "1"} if info.annotation is bool else {}
            parser.add_argument(flag_of(info), dest=env_name(info), **switch)
        return parser

    def help_text(self) -> str:
        """usage, what the command does, then every setting under its section: flag, variable, values, default."""
        lines = [
            f"usage: {program_name(self.module)} [--FLAG VALUE ...] [-h | --help]",
            f"   or: [VAR=value ...] bash examples/mem_agent/{self.script} [--FLAG VALUE ...]",
            "",
            textwrap.fill(" ".join(self.about.split()), 100),
            "",
            textwrap.fill(FLAGS_RULE, 100),
        ]
        section = None
        for info in self.model.model_fields.values():
            heading = extra_of(info).get("section") or "Settings"
            if heading != section:
                lines += ["", heading]
                section = heading
            lines += _rows(info)
        if self.notes:
            lines += ["", textwrap.fill(" ".join(self.notes.split()), 100)]
        return "\n".join(lines)


FLAGS_RULE = (
    "Each setting is a flag or an environment variable: --save-file NAME is SAVE_FILE=NAME, and a flag"
    " without a value (--dry-run) sets its variable to 1; a flag wins over the variable. A value that starts"
    " with - goes after = (--extra-eval-args=--no-plot). Every setting is checked before anything starts,"
    " all problems in one message (exit 2)."
)


def _rows(info: FieldInfo) -> list[str]:
    """A setting in --help: its flag and variable, then what it does, its values and its default."""
    named = f"{flag_of(info)}, {env_name(info)}=1" if info.annotation is bool else f"{flag_of(info)} {env_name(info)}"
    default = shown_default(info).replace('""', "none")
    text = f"{info.description} ({describe(info)}; default: {default})"
    return [f"  {named}", *textwrap.wrap(text, 100, initial_indent=" " * 6, subsequent_indent=" " * 6)]


def flag_of(info: FieldInfo) -> str:
    """The setting's flag: its variable lowercased, `_` as `-`."""
    return "--" + env_name(info).lower().replace("_", "-")


def _named(problems: list[str], name: str) -> bool:
    return any(problem.startswith((f"{name}=", f"{name} ")) for problem in problems)
