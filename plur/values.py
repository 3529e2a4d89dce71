"""One strict parser for every number, flag and word a user gives plur, from any source.

Settings come from ``config.toml`` (TOML integers, floats, booleans, strings), ``PLUR_*`` environment
variables (strings) and keyword arguments (Python values); API and MCP arguments arrive as JSON
values. Each goes through the same functions here, so ``budget_tokens = 2.7`` in a file is refused
exactly as ``PLUR_BUDGET_TOKENS=2.7`` is, instead of running as 2; ``recall_k = 1e400`` (TOML reads it
as infinity) is one line, not an ``OverflowError``.

Rules:

* whole numbers: a Python/TOML/JSON ``int`` (never a ``bool``), or a string of ASCII digits with an
  optional sign (``"12"``, ``" 12 "``); never a float, ``"1.5"``, ``"1e3"`` or ``"0x10"``;
* numbers: an ``int`` or finite ``float`` (never a ``bool``, NaN or infinity), or a string that
  Python's ``float`` reads as finite and that is written in ASCII;
* flags: a ``bool``, or one of ``1 0 true false yes no on off`` as a string (any case); never the
  number ``2``;
* words: a ``str`` (never the number ``5``).

Every refusal is :class:`~plur.errors.ValidationError` (or the ``error`` class passed in) with one
line that names the value, where it came from and what would be accepted. Pure stdlib.
"""

from __future__ import annotations

import math
import re
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: files.home_of runs in a cold CLI recall (~2 ms)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

from .errors import ValidationError

_INT_RE = re.compile(r"\A[+-]?[0-9]+\Z")
_FLOAT_RE = re.compile(r"\A[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
#: Longest text shown of a refused value.
SHOWN_CHARS = 60


def shown(value: Any) -> str:
    """``repr(value)`` cut to :data:`SHOWN_CHARS` characters (a refusal stays one readable line)."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 5] + "...'"


def _subject(name: str, value: Any, source: str | None) -> str:
    """``name=<value> (from <source>)``: the value and where it came from, for one refusal line."""
    return f"{name}={shown(value)}" + (f" (from {source})" if source else "")


def _bounds(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"a value from {_num(lo)} to {_num(hi)}"
    if lo is not None:
        return f"{_num(lo)} or more"
    if hi is not None:
        return f"{_num(hi)} or less"
    return ""


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _check_range(out: float, name: str, value: Any, source: str | None, lo: float | None, hi: float | None,
                 error: type[ValidationError]) -> None:
    if (lo is not None and out < lo) or (hi is not None and out > hi):
        raise error(f"{_subject(name, value, source)} is out of range: use {_bounds(lo, hi)}")


def parse_int(value: Any, name: str, *, source: str | None = None, lo: int | None = None, hi: int | None = None,
              error: type[ValidationError] = ValidationError) -> int:
    """A whole number from ``value`` (see the module rules), inside ``[lo, hi]`` when given.

    Raises:
        ValidationError: (or ``error``) not a whole number, or out of range; the message names
            ``name``, ``source`` and the value.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise error(f"{_subject(name, value, source)} is not a whole number; use {_bounds(lo, hi) or 'digits'}, "
                    "written without a decimal point or quotes")
    if isinstance(value, str):
        text = value.strip()
        if not _INT_RE.match(text) or len(text) > 30:
            raise error(f"{_subject(name, value, source)} is not a whole number; use digits only"
                        + (f", {_bounds(lo, hi)}" if _bounds(lo, hi) else ""))
        out = int(text)
    else:
        out = int(value)
    _check_range(out, name, value, source, lo, hi, error)
    return out


def parse_float(value: Any, name: str, *, source: str | None = None, lo: float | None = None,
                hi: float | None = None, error: type[ValidationError] = ValidationError) -> float:
    """A finite number from ``value`` (see the module rules), inside ``[lo, hi]`` when given.

    Raises:
        ValidationError: (or ``error``) not a number, NaN, infinite, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise error(f"{_subject(name, value, source)} is not a number; use {_bounds(lo, hi) or 'e.g. 0.5'}")
    if isinstance(value, str):
        text = value.strip()
        if not _FLOAT_RE.match(text) or len(text) > 40:
            raise error(f"{_subject(name, value, source)} is not a number; use {_bounds(lo, hi) or 'e.g. 0.5'}")
        out = float(text)
    else:
        try:
            out = float(value)
        except OverflowError:  # an int too large for a float
            out = math.inf
    if not math.isfinite(out):
        raise error(f"{_subject(name, value, source)} is not a finite number; use {_bounds(lo, hi) or 'e.g. 0.5'}")
    _check_range(out, name, value, source, lo, hi, error)
    return out


def parse_bool(value: Any, name: str, *, source: str | None = None,
               error: type[ValidationError] = ValidationError) -> bool:
    """A flag from ``value``: a ``bool``, or ``1/0/true/false/yes/no/on/off`` as a string.

    Raises:
        ValidationError: (or ``error``) anything else, e.g. the number 2 or ``"maybe"``.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.strip().lower()
        if low in TRUE_WORDS:
            return True
        if low in FALSE_WORDS:
            return False
    raise error(f"{_subject(name, value, source)} is not true or false; use true or false")


def parse_str(value: Any, name: str, *, source: str | None = None, choices: tuple[str, ...] | None = None,
              error: type[ValidationError] = ValidationError) -> str:
    """A word from ``value``: a ``str``; with ``choices``, one of them in any case (``'INT8'`` -> ``'int8'``).

    Raises:
        ValidationError: (or ``error``) not a string, or not one of ``choices``.
    """
    if not isinstance(value, str):
        raise error(f"{_subject(name, value, source)} is not a string; write it in quotes, e.g. "
                    f"\"{choices[0] if choices else 'text'}\"")
    if choices:  # a word is matched case- and space-insensitively and returned in its listed spelling
        canonical = {c.lower(): c for c in choices}.get(value.strip().lower())
        if canonical is None:
            raise error(f"{_subject(name, value, source)} must be one of {', '.join(choices)}")
        return canonical
    return value


def check_home(home: Any, name: str = "home", *, error: type[ValidationError] = ValidationError) -> None:
    """Refuse an empty home folder: ``Path("")`` is the current directory, which would silently become the home.

    Args:
        home: a ``--home`` value or the ``home`` argument of the library (``None``, the default, is fine).
        name: what the value is called in the message (``"--home"``, ``"home"``).

    Raises:
        ValidationError: (or ``error``) ``home`` is ``""`` or only whitespace.
    """
    if isinstance(home, str) and home == "":
        raise error(f"{name} is empty ('' would be the current directory); pass a folder, "
                    "or leave it out for $PLUR_HOME / ~/.plur")
    if isinstance(home, str) and not home.strip():
        raise error(f"{name} {home!r} is blank; pass a folder, or leave it out for $PLUR_HOME / ~/.plur")


def parse_value(kind: type, value: Any, name: str, *, source: str | None = None,
                lo: float | None = None, hi: float | None = None, choices: tuple[str, ...] | None = None,
                error: type[ValidationError] = ValidationError) -> Any:
    """Dispatch on ``kind`` (``int``, ``float``, ``bool``, ``str``) to the parsers above."""
    if kind is bool:
        return parse_bool(value, name, source=source, error=error)
    if kind is int:
        return parse_int(value, name, source=source, lo=None if lo is None else int(lo),
                         hi=None if hi is None else int(hi), error=error)
    if kind is float:
        return parse_float(value, name, source=source, lo=lo, hi=hi, error=error)
    if kind is str:
        return parse_str(value, name, source=source, choices=choices, error=error)
    raise TypeError(f"no parser for {kind!r}")


__all__ = ["check_home", "parse_bool", "parse_float", "parse_int", "parse_str", "parse_value", "shown"]
