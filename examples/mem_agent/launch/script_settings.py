"""A script's settings: declared once as a pydantic model (settings/declared.py), read from the
environment with every problem collected, paths resolved, and the script's --help generated.
Switches are `Switch`: 0 or 1.

Path settings are written as the user would: `~/slime`, `${TRAINER_ROOT}/../Megatron-LM` (another
setting of the same script), a relative path (made absolute: a Ray job runs in another folder).
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator

from mem_agent.common.numbers import parse_switch
from mem_agent.launch.problems import LaunchRefused, Problems, refusal_text
from mem_agent.launch.shell import Value, assignments
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


def _zero_or_one(value: Any) -> Any:
    """A script's switch is 0 or 1 (common/numbers.py), so `DRY_RUN=yes` is refused rather than guessed
    at (pydantic's bool alone would take yes/on/true; the MEM_* switches, read by the package, do take them)."""
    return parse_switch(value) if isinstance(value, str) else value


Switch = Annotated[bool, BeforeValidator(_zero_or_one)]


def read(model: type[M], environ: Mapping[str, str], problems: Problems, *, cwd: Path | None = None) -> M:
    """`model` from `environ`; a value that cannot be used is a problem and its default stands in, so
    that the checks after this one still run and every mistake is reported in one go."""
    values, refused = split_env(model, environ)
    problems.extend(refused)
    try:
        settings = build(model, values)
    except SettingsError as error:
        problems.extend(error.problems)
        bad = {name for name, info in model.model_fields.items() if _named(error.problems, env_name(info))}
        settings = build(model, {name: value for name, value in values.items() if name not in bad})
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


def help_text(model: type[BaseModel], usage: str, about: str, notes: str = "") -> str:
    """usage, what the script does, then every setting under its section with its default."""
    lines = [f"usage: {usage}", "", textwrap.fill(" ".join(about.split()), 100), ""]
    section = None
    for info in model.model_fields.values():
        heading = extra_of(info).get("section") or ""
        if heading != section:
            lines += ([""] if section is not None else []) + [heading or "Settings"]
            section = heading
        default = shown_default(info).replace('""', "none")
        text = f"{info.description} ({describe(info)}; default: {default})"
        lines += textwrap.wrap(text, 100, initial_indent=f"  {env_name(info):<18} ", subsequent_indent=" " * 21)
    if notes:
        lines += ["", textwrap.fill(" ".join(notes.split()), 100)]
    return "\n".join(lines)


def script_main(
    argv: Sequence[str],
    environ: Mapping[str, str],
    *,
    help_page: Callable[[], str],
    plan: Callable[[Mapping[str, str], Problems], Mapping[str, Value]],
) -> int:
    """The body of every `python -m mem_agent.launch <script>`: --help, or the plan's assignments on
    stdout (exit 0) after every check passed, or every problem in one message (exit 2)."""
    if argv and argv[0] in ("-h", "--help"):
        print(help_page())
        return 0
    if argv:
        print(f"error: unknown argument {argv[0]!r} (settings are environment variables; see --help)", file=sys.stderr)
        return 2
    problems = Problems()  # the plan sets dry_run once DRY_RUN is read
    try:
        values = plan(environ, problems)
        problems.raise_if_any()
    except LaunchRefused as refused:
        print(refusal_text(refused), file=sys.stderr)
        return 2
    sys.stdout.write(assignments(values))
    return 0


def _named(problems: list[str], name: str) -> bool:
    return any(problem.startswith((f"{name}=", f"{name} ")) for problem in problems)
