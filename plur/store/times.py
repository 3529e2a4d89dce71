"""Time rules of the store: aware UTC timestamps (parse, format, now) and time-to-live durations.

Every engram time is an aware UTC ``datetime``; on disk it is ISO-8601 with a ``Z``
(:func:`format_time`). Re-exported by :mod:`plur.store.engram`, whose fields use them.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

from ..errors import ValidationError


def utcnow() -> datetime:
    """Current time, UTC, truncated to whole seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def parse_time(value: Any, field_name: str = "time") -> datetime:
    """Parse an ISO-8601 timestamp into an aware UTC ``datetime``.

    Accepts ``2025-07-25T02:00:00Z``, ``2025-07-25T04:00:00+02:00``,
    ``2025-07-25 02:00`` (no zone: taken as UTC), ``2025-07-25`` (midnight UTC),
    ``datetime`` and ``date`` objects.

    Raises:
        ValidationError: naming the field and the value, with an accepted example.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(
                f"{field_name} {value!r} is not an ISO-8601 timestamp; "
                "use e.g. '2025-07-25T02:00:00Z' or '2025-07-25 02:00'"
            ) from None
    else:
        raise ValidationError(
            f"{field_name} {value!r} is not an ISO-8601 timestamp; use e.g. '2025-07-25T02:00:00Z'"
        )
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def format_time(dt: datetime) -> str:
    """UTC ``datetime`` -> ``'2025-07-25T02:00:00Z'`` (microseconds kept when non-zero)."""
    dt = dt.astimezone(timezone.utc)
    spec = "seconds" if dt.microsecond == 0 else "microseconds"
    return dt.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


_DURATION_RE = re.compile(r"\A\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*\Z", re.I)
_DURATION_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(value: Any, field_name: str = "ttl") -> timedelta:
    """Parse a time-to-live such as ``'30d'``, ``'12h'``, ``'2w'``, ``'90m'`` or ``'45s'``.

    Units: ``s`` seconds, ``m`` minutes, ``h`` hours, ``d`` days (86,400 s), ``w`` weeks.

    Raises:
        ValidationError: not a positive number followed by one unit, naming the value and an example.
    """
    m = _DURATION_RE.match(value) if isinstance(value, str) else None
    if m is None or float(m.group(1)) <= 0:
        raise ValidationError(f"{field_name} {value!r} is not a duration; use a positive number and a unit "
                              "(s, m, h, d, w), e.g. '30d' or '12h'")
    return timedelta(seconds=float(m.group(1)) * _DURATION_S[m.group(2).lower()])


__all__ = ["format_time", "parse_duration", "parse_time", "utcnow"]
