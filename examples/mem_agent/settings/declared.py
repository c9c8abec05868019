"""Settings declared once: a pydantic model whose fields carry their environment variable, default,
bounds and documentation. Parsing, the one-line fix-it messages, the docs tables and what a run
records all come from that one declaration.

Environment variables are the settings interface because they are the one channel that reaches
code inside the trainers' Ray actors unchanged. pydantic validates (it is in every trainer and
vLLM environment already); the environment is read here, not by pydantic-settings' BaseSettings,
because callers read a given mapping (a Ray job's env, a test's dict) and construct settings in
code, where BaseSettings would read the process environment in every constructor.

Messages follow one shape, `NAME=value must be <what> (default <default>)`, and every problem is
reported at once, so a person fixes them all in one go.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

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
# No integer setting may exceed what every server and router parses as a token count or a size.
INT_LIMIT = 2**31 - 1
_LINE_BREAKS = ("\n", "\r", "\0")


class SettingsError(ValueError):
    """Settings that cannot be used; `problems` holds one line each, naming the variable."""

    def __init__(self, problems: str | Iterable[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


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


def read_env(model: type[M], environ: Mapping[str, str], **overrides: Any) -> M:
    """`model` from the variables of `environ` it declares (an empty value means the default), with
    `overrides` (by field name) winning; every problem at once as a SettingsError."""
    return build(model, env_values(model, environ) | overrides)


def env_values(model: type[BaseModel], environ: Mapping[str, str]) -> dict[str, Any]:
    """The non-empty values `environ` gives for `model`'s variables, by field name; a value holding a
    line break is refused here, before it could split a command line further on."""
    values, problems = split_env(model, environ)
    if problems:
        raise SettingsError(problems)
    return values


def split_env(model: type[BaseModel], environ: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """`env_values` that also returns the refused variables' problems instead of raising."""
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
        values[name] = raw.lower() if _enum_type(info) else raw
    return values, problems


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
    bounds = {type(item).__name__.lower(): getattr(item, type(item).__name__.lower()) for item in _bounds(info)}
    if bounds.get("le") == INT_LIMIT:  # the limit every integer has: not worth a word
        del bounds["le"]
    if info.annotation is int:
        if bounds.get("ge") == 1 or bounds.get("gt") == 0:
            return "a positive integer"
        if bounds.get("ge") is not None:
            return f"an integer >= {bounds['ge']}"
        return "an integer"
    if info.annotation is float:
        low = bounds.get("ge", bounds.get("gt"))
        if "le" in bounds and "gt" in bounds:
            return f"a number above {_number(low)} and at most {_number(bounds['le'])}"
        if "le" in bounds:
            return f"a number between {_number(low)} and {_number(bounds['le'])}"
        if "gt" in bounds:
            return "a positive number" if bounds["gt"] == 0 else f"a number above {_number(bounds['gt'])}"
        if "ge" in bounds:
            return f"a number >= {_number(bounds['ge'])}"
        return "a number"
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


def _bounds(info: FieldInfo) -> list[Any]:
    return [
        item for item in info.metadata if isinstance(item, annotated_types.Ge | annotated_types.Gt | annotated_types.Le)
    ]


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value) if value != "" else '""'
