"""A command's face on the console: the name it was started by, the one way its parser is made,
and the one way it ends in error.

argparse names a program after `sys.argv[0]`, which for `python -m` is the module's file path, so
every command's parser passes its name explicitly: `python -m mem_agent.<module>`, or, while the
`mem-agent` command (mem_agent/cli.py) runs the module's main, `mem-agent <command>`.

Every argument parser of the package is made by `command_parser`, so each refuses the same way:
no abbreviations (argparse would take `--forc` for `--force`, and a prefix could come to mean
another flag the day one is added); a flag's number read by the rules of common/numbers.py, the
ones the settings' variables are read by; and every bad number of a command line named at once,
in one `error:` line (exit 2), as the commands' own checks report theirs.

A command's flags may be declared as the fields of a frozen dataclass (`flag`, as TRL's
HfArgumentParser reads them): `add_flags` makes the flags from the fields, `parsed` the record from
what was parsed, so a flag's name, type, bounds, default and help are written once.

Every command's work runs inside `command_status`, so each ends the same way: a user's mistake
is one `error:` line and exit 2, a failure of the machine (a full disk, a file that cannot be
read) one `error:` line naming the file and exit 1, and neither a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from mem_agent.common.input_files import length_problem
from mem_agent.common.numbers import NumberError
from mem_agent.common.printable import printable
from mem_agent.common.usage import UsageError

T = TypeVar("T")
_dispatched: dict[str, str] = {}  # module -> the name the dispatcher runs it under, while it runs
_SHOWN_VALUE = 80  # characters of a refused value echoed back


@contextlib.contextmanager
def dispatched_as(module: str, name: str) -> Iterator[None]:
    """While the block runs, `module`'s parser is named `name` (say `mem-agent eval`)."""
    _dispatched[module] = name
    try:
        yield
    finally:
        _dispatched.pop(module, None)


def program_name(module: str) -> str:
    """The name the user typed to start `module`: the dispatcher's, else `python -m module`."""
    return _dispatched.get(module, f"python -m {module}")


def command_parser(
    module: str, description: str | None = None, *, raising: bool = False, **options: Any
) -> argparse.ArgumentParser:
    """The parser of `module`'s command, named as the user typed it (`prog` in `options` names it
    otherwise). `raising`: a mistake is a UsageError for the caller (a launch checking a command
    line it is about to run) instead of a message and exit 2. `options` are argparse's."""
    options.setdefault("prog", program_name(module))
    print_any_path()  # every command makes its parser first: the one place all of them pass
    kind = _RaisingParser if raising else _CommandParser
    return kind(description=description, allow_abbrev=False, **options)


def flag(
    default: Any = None,
    help: str = "",
    *,
    factory: Callable[[], Any] | None = None,
    env: str = "",
    launch_default: str | None = None,
    **options: Any,
) -> Any:
    """A dataclass field that is the flag `--field-name`: its default (`factory`: one read as the parser is
    made, from the environment), its help and argparse's `options` (type, choices, nargs, action, metavar).
    `env`: the variable a launch script sets it by (run-eval.sh's CONCURRENCY); `launch_default`: the
    script's value where it always passes the flag and its default is not the command's (RULER_SPLITS)."""
    metadata = {"help": help, "env": env, "launch_default": launch_default, "options": options}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag_name(field: dataclasses.Field) -> str:
    return "--" + field.name.replace("_", "-")


def add_flags(parser: argparse.ArgumentParser, flags: type) -> None:
    """The fields of the dataclass `flags` as the parser's flags, in the order they are declared."""
    for field in dataclasses.fields(flags):
        default = field.default_factory() if field.default is dataclasses.MISSING else field.default
        default = list(default) if isinstance(default, tuple) else default  # argparse appends to a list
        parser.add_argument(flag_name(field), default=default, help=field.metadata["help"], **field.metadata["options"])


def parsed(flags: type[T], args: argparse.Namespace) -> T:
    """The dataclass `flags` holding the parsed `args`, each list a tuple (a parsed record does not change)."""
    return flags(**{name: tuple(value) if isinstance(value, list) else value for name, value in vars(args).items()})


def command_status(
    work: Callable[[], object],
    *,
    mistakes: tuple[type[Exception], ...] = (),
    failures: tuple[type[Exception], ...] = (),
    where: object = "?",
) -> int:
    """Run a command's `work` and return its exit status: the int it returns, else 0. A UsageError
    (or one of `mistakes`) is the user's to fix: 2; an OSError, named by its file (`where` when it
    names none), or one of `failures` is the machine's: 1. What the work wrote stays as it left it."""
    try:
        status = work()
    except (UsageError, *mistakes) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"error: {error.filename or where}: {error.strerror or error}", file=sys.stderr)
        return 1
    except failures as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return status if isinstance(status, int) else 0


class _CommandParser(argparse.ArgumentParser):
    """argparse, with each number a flag's type refuses kept until the whole line is read, and
    every `type=Path` argument refused when no file system could hold it (a name or a path too
    long fails deep inside whatever touches it first, as a traceback)."""

    _bad_numbers: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("type", Path, _possible_path)  # argparse looks a type up here before calling it

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._bad_numbers = []
        parsed = super().parse_known_args(args, namespace)
        if self._bad_numbers:
            self._refuse(self._bad_numbers)
        return parsed

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as error:
            refused = error.__context__  # argparse raises its ArgumentError while handling the type's
            if not isinstance(refused, NumberError | _PathRefused):
                raise
            self._bad_numbers.append(f"{_flag(action)} {printable(arg_string, _SHOWN_VALUE)} {refused}")
            return None

    def error(self, message: str) -> NoReturn:
        """argparse's own complaint, unless a refused value caused it (a required flag whose value
        was refused reads as missing): then the refused values are the one line."""
        if getattr(self, "_bad_numbers", None):
            self._refuse(self._bad_numbers)
        self._complain(message)

    def _complain(self, message: str) -> NoReturn:
        super().error(message)

    def _refuse(self, problems: list[str]) -> NoReturn:
        print(f"error: {'; '.join(problems)}", file=sys.stderr)
        self.exit(2)


class _RaisingParser(_CommandParser):
    def _complain(self, message: str) -> NoReturn:
        raise UsageError(message)

    def _refuse(self, problems: list[str]) -> NoReturn:
        raise UsageError(problems)


class _PathRefused(ValueError):
    """A path no file system can hold; reported with the refused numbers, in the same one line."""


def _possible_path(text: str) -> Path:
    problem = length_problem(text)
    if problem:
        raise _PathRefused(problem)
    return Path(text)


def _flag(action: argparse.Action) -> str:
    """The flag's long name (`--max-items`, not `-m`), or a positional argument's name."""
    long = [option for option in action.option_strings if option.startswith("--")]
    return (long or action.option_strings or [str(action.metavar or action.dest)])[0]


def print_any_path() -> None:
    """Let stdout print what stderr already does: a character its encoding cannot hold as a
    backslash escape. A file name that is not UTF-8 reaches Python as lone surrogates (`\\udcff`),
    and a strict stdout (a UTF-8 locale's) would end a command that has done its work with a
    UnicodeEncodeError at its last line ("wrote ... to <path>")."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
