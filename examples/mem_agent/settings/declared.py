"""Settings declared once: a pydantic model whose fields carry their environment variable, default,
bounds and documentation. Parsing, the one-line fix-it messages, the docs tables and what a run
records all come from that one declaration.

Environment variables are the settings interface because they are the one channel that reaches
code inside the trainers' Ray actors unchanged. pydantic validates (it is in every trainer and
vLLM environment already); the environment is read here, not by pydantic-settings' BaseSettings,
because callers read a given mapping (a Ray job's env, a test's dict) and construct settings in
code, where BaseSettings would read the process environment in every constructor.

Messages follow one shape, `NAME=value must be <what> (default <default>)`, and every problem is
reported at once, so a person fixes them all in one go. A number is read by common/numbers.py's
rules, the ones every flag's number is read by, so `MEM_CHUNK_TOKENS=1_000` and `--chunk-tokens
1_000` are refused alike; a flag that sets a field takes its bounds from the field (`flag_type`).
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable, Collection, Mapping
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import annotated_types
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from mem_agent.common.numbers import (
    INT_LIMIT,
    NumberError,
    describe_integer,
    describe_number,
    integer,
    number,
    parse_integer,
    parse_number,
    parse_switch,
)
from mem_agent.common.printable import printable
from mem_agent.common.usage import UsageError

# Shared by every settings model: immutable, built by field name in code or by variable name from the
# environment, unknown keys refused, surrounding blanks ignored, infinities and NaN refused.
ENV_MODEL_CONFIG = ConfigDict(
    frozen=True,
    validate_by_name=True,
    validate_by_alias=True,
    extra="forbid",
    str_strip_whitespace=True,
    allow_inf_nan=False,
)
_LINE_BREAKS = ("\n", "\r", "\0")
_SHOWN_VALUE = 200  # characters of a value a message echoes back


def _zero_or_one(value: Any) -> Any:
    """A switch is 0 or 1 (common/numbers.parse_switch) wherever it is read, so `yes` is refused
    rather than guessed at (pydantic's bool alone would take yes/on/true)."""
    return parse_switch(value.strip()) if isinstance(value, str) else value


# A setting that is on or off: 0 or 1 in the environment, a bool in code.
Switch = Annotated[bool, BeforeValidator(_zero_or_one)]


def words(kind: Callable[[str], Any] = str, choices: Collection[str] | None = None) -> Any:
    """A setting of distinct words, each judged by a flag's `kind` and `choices` (nargs="*"): the flag's
    parser's rules, applied as the settings are read, for a command that reads the values itself (the
    files it checks, the demo's data) as well as passing them on."""

    def judged(text: str) -> str:
        words = [str(kind(word)) for word in text.split()]  # integer(1) writes "050" as 50, the files' name
        if not words or len(set(words)) != len(words) or not set(words) <= set(choices or words):
            raise ValueError("not distinct words the flag takes")
        return " ".join(words)

    return Annotated[str, AfterValidator(judged)]


class SettingsError(UsageError, ValueError):
    """Settings that cannot be used: the one problem type (`UsageError`, one line each in `problems`,
    naming the variable), and a ValueError for code that reads settings where a host expects one."""


def setting(
    default: Any,
    doc: str,
    *,
    env: str,
    shapes_answers: bool = True,
    values: str = "",
    path: bool = False,
    section: str = "",
    **bounds: Any,
) -> Any:
    """A settings field read from `env`.

    `shapes_answers`: whether an evaluated item's answer or score can depend on the value (a run's
    earlier results are reused only while these are unchanged; timeouts and the wire protocol
    cannot change a finished answer). `values` overrides the generated description of what the
    value may be. `path`: a file system path (a launch expands `~` and `${OTHER}` and makes it
    absolute). `section`: the heading a help text lists the setting under. `bounds` are
    pydantic's (`ge`, `gt`, `le`).
    """
    if path and not values:
        values = "a path"
    extra = {"shapes_answers": shapes_answers, "values": values, "path": path, "section": section}
    if isinstance(default, int) and not isinstance(default, bool):
        bounds.setdefault("le", INT_LIMIT)
    return Field(default, alias=env, description=doc, json_schema_extra=extra, **bounds)


def env_name(info: FieldInfo) -> str:
    return info.alias or ""


def shapes_answers(info: FieldInfo) -> bool:
    return bool(extra_of(info).get("shapes_answers", True))


def extra_of(info: FieldInfo) -> dict[str, Any]:
    """What `setting` recorded beside pydantic's own attributes."""
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


M = TypeVar("M", bound=BaseModel)


def split_env(model: type[BaseModel], environ: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The non-empty values `environ` gives for `model`'s variables, by field name, numbers read (by
    common/numbers.py's rules); and the problems of the variables refused here: a value holding a line
    break (before it could split a command line further on), a number spelt otherwise or beyond
    INT_LIMIT. A field's own bounds are the model's to check, with every other problem."""
    values: dict[str, Any] = {}
    problems = []
    for name, info in model.model_fields.items():
        raw = environ.get(env_name(info))
        if raw is None or not raw.strip():
            continue
        if any(mark in raw for mark in _LINE_BREAKS):
            problems.append(f"{env_name(info)} holds a line break: give its value on one line")
            continue
        raw = raw.strip()
        try:
            values[name] = _read_value(info, raw)
        except NumberError as error:
            value = f"{env_name(info)}={printable(raw, _SHOWN_VALUE)}"
            if error.beyond_limit:
                problems.append(f"{value} {error}")
            else:
                problems.append(f"{value} must be {describe(info)} (default {shown_default(info)})")
    return values, problems


def _read_value(info: FieldInfo, raw: str) -> str:
    """`raw`, once a number field's text passes the rules every number is read by (within INT_LIMIT,
    or the field's wider bound). The text goes on as written, so a message about its bounds shows it
    as typed; pydantic reads any text these rules accept as the same number."""
    kind = _number_type(info)
    low, high, _ = _range(info)
    if kind is int:
        parse_integer(raw, min(int(low), -INT_LIMIT), max(int(high), INT_LIMIT))
    elif kind is float:
        parse_number(raw, min(low, -INT_LIMIT), max(high, INT_LIMIT))
    return raw.lower() if _enum_type(info) else raw


def flag_type(model: type[BaseModel], field: str) -> Callable[[str], int | float]:
    """The argparse type of a flag that sets `field` of `model`: the field's number, within its bounds,
    so the flag and the variable pass and fail alike."""
    info = model.model_fields[field]
    low, high, above = _range(info)
    if _number_type(info) is int:
        return integer(int(low), int(high))
    return number(low, high, above=above)


def build(model: type[M], values: Mapping[str, Any]) -> M:
    """`model(**values)` with pydantic's errors turned into our one-line problems."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as error:
        raise SettingsError(problems_of(error, model)) from None


def problems_of(error: ValidationError, model: type[BaseModel]) -> list[str]:
    problems = []
    for detail in error.errors(include_url=False):
        location = detail["loc"][0] if detail["loc"] else None
        info = model.model_fields.get(str(location)) if location is not None else None
        if info is None:
            by_alias = {env_name(field): field for field in model.model_fields.values()}
            info = by_alias.get(str(location)) if location is not None else None
        if info is None:  # a rule between settings: its own message
            problems.append(str(detail["msg"]).removeprefix("Value error, "))
            continue
        value = f"{env_name(info)}={_shown(detail['input'])}"
        if detail["type"] == "less_than_equal" and detail.get("ctx", {}).get("le") == INT_LIMIT:
            problems.append(f"{value} is too large (at most {INT_LIMIT})")
        else:
            problems.append(f"{value} must be {describe(info)} (default {shown_default(info)})")
    return problems


def describe(info: FieldInfo) -> str:
    """What a value of the field may be, in words, from its type and bounds."""
    if extra_of(info).get("values"):
        return str(extra_of(info)["values"])
    kind = _enum_type(info)
    if kind is not None:
        return "one of " + ", ".join(str(member.value) for member in kind)
    if info.annotation is bool:
        return "0 or 1"
    low, high, above = _range(info)
    if _number_type(info) is int:
        return describe_integer(int(low), int(high))
    if _number_type(info) is float:
        return describe_number(low, high, above=above)
    return "text"


def shown_default(info: FieldInfo) -> str:
    return _shown(info.default)


def settings_table(model: type[BaseModel]) -> str:
    """A markdown table of `model`'s settings: variable, default, values, meaning."""
    rows = ["| variable | default | values | meaning |", "|---|---|---|---|"]
    for info in model.model_fields.values():
        rows.append(f"| `{env_name(info)}` | `{shown_default(info)}` | {describe(info)} | {info.description} |")
    return "\n".join(rows)


def _enum_type(info: FieldInfo) -> type[enum.Enum] | None:
    kind = info.annotation
    return kind if isinstance(kind, type) and issubclass(kind, enum.Enum) else None


def _number_type(info: FieldInfo) -> type | None:
    """int or float for a number field (`int`, `float | None`), else None."""
    kind = info.annotation
    if get_origin(kind) in (Union, types.UnionType):
        kinds = [arg for arg in get_args(kind) if arg is not type(None)]
        kind = kinds[0] if len(kinds) == 1 else None
    return kind if kind in (int, float) else None


def _range(info: FieldInfo) -> tuple[float, float, bool]:
    """(low, high, whether low is excluded) of a number field; INT_LIMIT where it declares none."""
    low: float = -INT_LIMIT
    high: float = INT_LIMIT
    above = False
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            low = item.ge  # type: ignore[assignment]
        elif isinstance(item, annotated_types.Gt):
            low, above = item.gt, True  # type: ignore[assignment]
        elif isinstance(item, annotated_types.Le):
            high = item.le  # type: ignore[assignment]
    if above and _number_type(info) is int:  # an integer above n is one from n + 1
        low, above = low + 1, False
    return low, high, above


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, enum.Enum):
        return str(value.value)
    return printable(str(value), _SHOWN_VALUE) if value != "" else '""'
