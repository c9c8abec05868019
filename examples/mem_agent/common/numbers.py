"""Numbers and switches as a person writes them, read by one set of rules for variables and flags alike.

A setting given as `MEM_CHUNK_TOKENS=...` and as `--chunk-tokens ...` must pass or fail the same, so
both are read here (settings/declared.py for variables, the flag types below for argparse). Python's
own `int()` and `float()` are not those rules: they take digit-group underscores (`1_000`), digits
of other scripts (`١٢`), blanks around a value and `+`; pydantic takes `5.0` for an integer. Here:

- an integer is ASCII digits with an optional leading `-` (`-?[0-9]+`), nothing else;
- a number is an integer or a decimal with an optional exponent (`2.5`, `.5`, `1e-3`), finite;
- a switch is `0` or `1`;
- no value is beyond INT_LIMIT in magnitude (what every server and router parses as a token count
  or a size), unless its declaration says otherwise (a seed: 0 to SEED_LIMIT).

A refusal is a NumberError whose message completes `NAME=value` or `--flag value`:
"must be a positive integer", "is too large (at most 2147483647)".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

INT_LIMIT = 2**31 - 1
# A seed is 0 to 2**32-1: what random, numpy (default_rng and its legacy seeding), torch's manual_seed
# and every server's per-request sampling seed (vLLM: a signed 64-bit integer) accept alike.
SEED_LIMIT = 2**32 - 1

_INTEGER = re.compile(r"-?[0-9]+")  # [0-9], not \d: \d matches the digits of every script
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_DIGITS_BEYOND_ANY_LIMIT = 40  # longer digit strings are refused unread (int() of 4,300+ digits raises)


class NumberError(ValueError):
    """A value that is not a number of the kind asked, or beyond its bounds. `beyond_limit`: it is
    beyond INT_LIMIT, the bound every number has, rather than beyond the bounds declared for it."""

    def __init__(self, message: str, *, beyond_limit: bool = False) -> None:
        super().__init__(message)
        self.beyond_limit = beyond_limit


def parse_integer(text: str, low: int = -INT_LIMIT, high: int = INT_LIMIT) -> int:
    """`text` as an integer from `low` to `high`."""
    if not _INTEGER.fullmatch(text):
        raise NumberError(f"must be {describe_integer(low, high)}")
    if len(text.lstrip("-").lstrip("0")) > _DIGITS_BEYOND_ANY_LIMIT:
        value = -(10**_DIGITS_BEYOND_ANY_LIMIT) if text.startswith("-") else 10**_DIGITS_BEYOND_ANY_LIMIT
    else:
        value = int(text)
    _check_range(value, low, high, above=False, what=describe_integer(low, high))
    return value


def parse_number(text: str, low: float = -INT_LIMIT, high: float = INT_LIMIT, *, above: bool = False) -> float:
    """`text` as a finite number from `low` (excluded when `above`) to `high`."""
    value = float(text) if _NUMBER.fullmatch(text) else math.nan
    what = describe_number(low, high, above=above)
    if not math.isfinite(value):  # 1e999 reads as inf
        raise NumberError(f"must be {what}")
    _check_range(value, low, high, above=above, what=what)
    return value


def parse_switch(text: str) -> bool:
    """`0` or `1`: `yes`, `true` or `2` are refused rather than guessed at."""
    if text not in ("0", "1"):
        raise NumberError("must be 0 or 1")
    return text == "1"


def describe_integer(low: int = -INT_LIMIT, high: int = INT_LIMIT) -> str:
    """What an integer from `low` to `high` may be, in words; INT_LIMIT, every integer's, goes unsaid."""
    if high == INT_LIMIT:
        if low == -INT_LIMIT:
            return "an integer"
        return "a positive integer" if low == 1 else f"an integer >= {low}"
    return f"an integer <= {high}" if low == -INT_LIMIT else f"an integer from {low} to {high}"


def describe_number(low: float = -INT_LIMIT, high: float = INT_LIMIT, *, above: bool = False) -> str:
    """What a number from `low` (excluded when `above`) to `high` may be, in words."""
    has_low, has_high = low != -INT_LIMIT, high != INT_LIMIT
    if has_low and has_high:
        if above:
            return f"a number above {_bound(low)} and at most {_bound(high)}"
        return f"a number between {_bound(low)} and {_bound(high)}"
    if has_high:
        return f"a number at most {_bound(high)}"
    if has_low and above:
        return "a positive number" if low == 0 else f"a number above {_bound(low)}"
    return f"a number >= {_bound(low)}" if has_low else "a number"


# ---- argparse types: a flag's bounds beside it, the rules above ------------------------------------------------


@dataclass(frozen=True)
class integer:  # lower case: an argparse type, called as int is
    """The argparse type of an integer flag from `low` to `high` (a count: `integer(1)`); as text, what it takes."""

    low: int = -INT_LIMIT
    high: int = INT_LIMIT

    def __call__(self, text: str) -> int:
        return parse_integer(text, self.low, self.high)

    def __str__(self) -> str:
        return describe_integer(self.low, self.high)


@dataclass(frozen=True)
class number:  # lower case: an argparse type, called as float is
    """The argparse type of a number flag from `low` (excluded when `above`) to `high` (a time in seconds:
    `number(0, above=True)`); as text, what it takes."""

    low: float = -INT_LIMIT
    high: float = INT_LIMIT
    above: bool = False

    def __call__(self, text: str) -> float:
        return parse_number(text, self.low, self.high, above=self.above)

    def __str__(self) -> str:
        return describe_number(self.low, self.high, above=self.above)


def seed(text: str) -> int:
    """The argparse type of a seed flag: 0 to SEED_LIMIT."""
    return parse_integer(text, 0, SEED_LIMIT)


def _check_range(value: float, low: float, high: float, *, above: bool, what: str) -> None:
    """Refuse a value beyond the bounds: in the words of INT_LIMIT where that is the bound it passes."""
    if value > high:
        beyond = high == INT_LIMIT
        message = f"is too large (at most {_bound(high)})" if beyond else f"must be {what}"
    elif value < low or (above and value == low):
        beyond = low == -INT_LIMIT
        message = f"is too small (at least {_bound(low)})" if beyond else f"must be {what}"
    else:
        return
    raise NumberError(message, beyond_limit=beyond)


def _bound(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
