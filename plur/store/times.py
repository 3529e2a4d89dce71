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
    try:
        return dt.astimezone(timezone.utc)
    except OverflowError:  # '0001-01-01T00:00+01:00' is before year 1 in UTC
        raise ValidationError(f"{field_name} {value!r} is outside the years 1-9999 in UTC; "
                              "use e.g. '2025-07-25T02:00:00Z'") from None


def check_window(created: datetime | None, valid_from: datetime | None, valid_until: datetime | None) -> None:
    """Refuse a new engram's validity window that ends before it starts.

    ``created`` is ``None`` when it defaulted to now: a past ``valid_until`` then records a memory
    that has already expired, on purpose (the CLI says so).

    Raises:
        ValidationError: ``valid_until`` is not after ``created`` (when given) or ``valid_from``.
    """
    if valid_until is None:
        return
    if created is not None and valid_until <= created:
        raise ValidationError(f"valid_until {format_time(valid_until)} is not after created {format_time(created)}: "
                              "the engram would be expired from its first moment; give a later --valid-until "
                              "(or --ttl), or an earlier --created")
    if valid_from is not None and valid_until <= valid_from:
        raise ValidationError(f"valid_until {format_time(valid_until)} is not after valid_from "
                              f"{format_time(valid_from)}; give a later valid_until")


def format_time(dt: datetime) -> str:
    """UTC ``datetime`` -> ``'2025-07-25T02:00:00Z'`` (microseconds kept when non-zero)."""
    dt = dt.astimezone(timezone.utc)
    spec = "seconds" if dt.microsecond == 0 else "microseconds"
    return dt.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


_DURATION_RE = re.compile(r"\A\s*([0-9]{1,12}(?:\.[0-9]{1,9})?)\s*([smhdw])\s*\Z", re.I)
_DURATION_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
#: Longest time to live accepted (100 years of 365 days): any later expiry is "never" (no ttl).
MAX_DURATION = timedelta(days=36500)


def parse_duration(value: Any, field_name: str = "ttl") -> timedelta:
    """Parse a time-to-live such as ``'30d'``, ``'12h'``, ``'2w'``, ``'90m'`` or ``'45s'``.

    Units: ``s`` seconds, ``m`` minutes, ``h`` hours, ``d`` days (86,400 s), ``w`` weeks.

    Raises:
        ValidationError: not a positive number followed by one unit, or longer than
            :data:`MAX_DURATION` (100 years), naming the value and an example.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    else:
        m = _DURATION_RE.match(value) if isinstance(value, str) else None
        if m is None:
            raise ValidationError(f"{field_name} {value!r} is not a duration; use a positive number and a unit "
                                  "(s, m, h, d, w), e.g. '30d' or '12h'")
        seconds = float(m.group(1)) * _DURATION_S[m.group(2).lower()]
    if not seconds > 0:
        raise ValidationError(f"{field_name} {value!r} is not a positive duration; use e.g. '30d' or '12h'")
    if seconds > MAX_DURATION.total_seconds():
        raise ValidationError(f"{field_name} {value!r} is longer than 100 years ({MAX_DURATION.days}d); "
                              "for a memory that never expires, give no ttl")
    return timedelta(seconds=seconds)


__all__ = ["check_window", "format_time", "parse_duration", "parse_time", "utcnow"]
