"""Dates named in a query, resolved to calendar-day ranges against "now": pure functions.

The rule (also in the README, "Dates in recall"): a query may name

* a day: ``2023-05-08``, ``2023/05/08``, ``8 May 2023``, ``May 8th, 2023``, ``8 May`` / ``May 8``
  (no year: the most recent such day on or before now);
* a month: ``May 2023``, ``in May`` / ``this May`` (the most recent May on or before now's
  month), ``last May`` (the most recent May strictly before now's month), ``next May``;
* a year: ``in 2022``, ``during 2022``, ``since 2022`` (that calendar year), ``last year``,
  ``this year``, ``N years ago``;
* a weekday: ``on Monday`` / ``this Monday`` (the most recent Monday on or before now),
  ``last Monday`` (strictly before today), ``next Monday``;
* a relative time: ``today``, ``yesterday``, ``the day before yesterday``, ``N days ago``
  (that day +- 1), ``N weeks ago`` (that day +- 3), ``N months ago`` (that calendar month),
  ``last week`` / ``this week`` (ISO weeks, Monday-Sunday), ``last weekend``, ``last month``,
  ``this month``. ``N`` is digits or a number word up to twelve, ``a``/``an``, ``a couple of`` (2)
  or ``a few`` (3).

A bare ``may`` is a month only next to a day number, a year or one of the words
``in/last/this/next/during/since/early/late/mid/of``, so "May I ask" names no date. Month
abbreviations (``Jan``, ``Sept``...) count only next to a day or year. Days are UTC calendar
days; ranges are inclusive. A phrase naming an impossible day (``31 February``) names nothing.
Anything else names no date: the parser never guesses.
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

__all__ = ["DateRange", "date_words", "mentioned", "resolve"]

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_ABBR = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
         "oct": 10, "nov": 11, "dec": 12}
_MONTH_NUM = {m: i + 1 for i, m in enumerate(_MONTHS)} | _ABBR
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
            "couple of": 2, "few": 3}

_ANY_MONTH = "|".join(sorted(_MONTH_NUM, key=len, reverse=True))
_FULL_MONTH = "|".join(_MONTHS)
_ORD = r"(?:st|nd|rd|th)?"
_NUM = r"(\d{1,2}|" + "|".join(sorted((re.escape(k) for k in _NUMBERS), key=len, reverse=True)) + ")"

_ISO = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_ANY_MONTH})\.?\b(?:,?\s+(\d{{4}})\b)?")
_MONTH_DAY = re.compile(rf"\b({_ANY_MONTH})\.?\s+(\d{{1,2}}){_ORD}\b(?!:)(?:,?\s+(\d{{4}})\b)?")
_MONTH_YEAR = re.compile(rf"\b({_ANY_MONTH})\.?,?\s+(\d{{4}})\b")
_MOD_MONTH = re.compile(rf"\b(last|this|next|in|during|since|early|late|mid|of)[\s-]+({_FULL_MONTH})\b")
_MOD_YEAR = re.compile(r"\b(in|during|since|of|from|year)\s+((?:19|20)\d{2})\b")
_WEEKDAY = re.compile(rf"\b(last|this|on|next|past)\s+({'|'.join(_WEEKDAYS)})\b")
_AGO = re.compile(rf"\b{_NUM}\s+(day|week|month|year)s?\s+ago\b")
# Every phrase above holds one of these words (or a 4-digit year): text without any names no date, and
# one search rules it out (~10x cheaper than running every pattern; recall resolves each candidate's text).
_TRIGGER = re.compile(rf"\b(?:{_ANY_MONTH}|{'|'.join(_WEEKDAYS)}|yesterday|today|tonight|morning|ago|week|weekend|month|year)\b"
                      r"|\d{4}")
_REL = re.compile(r"\b(the day before yesterday|yesterday|today|tonight|this morning|"
                  r"(?:last|past|previous|this)\s+(?:week(?:end)?|month|year))\b")


@dataclass(frozen=True)
class DateRange:
    """An inclusive range of UTC calendar days named by part of a query.

    Attributes:
        start: first day. end: last day (>= start). text: the words that named it.
    """

    start: date
    end: date
    text: str

    def contains(self, when: date | datetime) -> bool:
        """True if ``when`` (a date, or a datetime taken in UTC) falls in the range."""
        if isinstance(when, datetime):
            when = (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).date()
        return self.start <= when <= self.end

    def overlaps(self, other: DateRange) -> bool:
        """True if the two inclusive ranges share at least one day."""
        return self.start <= other.end and other.start <= self.end


def _month_range(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return first, nxt - timedelta(days=1)


def _shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    n = year * 12 + (month - 1) + by
    return n // 12, n % 12 + 1


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _recent_day(today: date, month: int, day: int) -> date | None:
    """The most recent ``month``/``day`` on or before ``today``."""
    for year in (today.year, today.year - 1):
        d = _day(year, month, day)
        if d is not None and d <= today:
            return d
    return None


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def resolve(query: str, now: datetime | date) -> list[DateRange]:
    """Every date a query names, as inclusive day ranges resolved against ``now``.

    Args:
        query: free text.
        now: the moment the question is asked (a naive datetime is taken as UTC; only its
            UTC date matters).

    Returns:
        :class:`DateRange` objects in the order their words appear; ``[]`` when the query
        names no date. Overlapping phrases are read once (the longest, most specific first).
    """
    try:
        if isinstance(now, datetime):
            today = (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).date()
        else:
            today = now
        return _resolve(query, today)
    except (OverflowError, ValueError):  # 'tomorrow' on 9999-12-31, 'last year' in year 1: no such date
        return []


def _resolve(query: str, today: date) -> list[DateRange]:
    text = query.casefold()
    if _TRIGGER.search(text) is None:
        return []
    found: list[tuple[int, DateRange]] = []
    taken: list[tuple[int, int]] = []

    def claim(m: re.Match[str], start: date | None, end: date | None) -> None:
        # A phrase naming an impossible day ("31 February") still consumes its words: no guess.
        if any(m.start() < b and a < m.end() for a, b in taken):
            return
        taken.append((m.start(), m.end()))
        if start is not None and end is not None:
            found.append((m.start(), DateRange(start, end, m.group(0))))

    for m in _ISO.finditer(text):
        d = _day(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        claim(m, d, d)
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        for m in pattern.finditer(text):
            month, day_n = _MONTH_NUM[m.group(month_group)], int(m.group(day_group))
            d = _day(int(m.group(3)), month, day_n) if m.group(3) else _recent_day(today, month, day_n)
            claim(m, d, d)
    for m in _MONTH_YEAR.finditer(text):
        claim(m, *_month_range(int(m.group(2)), _MONTH_NUM[m.group(1)]))
    for m in _MOD_MONTH.finditer(text):
        mod, month = m.group(1), _MONTH_NUM[m.group(2)]
        if mod == "next":
            year = today.year if month > today.month else today.year + 1
        elif mod == "last":
            year = today.year if month < today.month else today.year - 1
        else:
            year = today.year if month <= today.month else today.year - 1
        claim(m, *_month_range(year, month))
    for m in _MOD_YEAR.finditer(text):
        year = int(m.group(2))
        claim(m, date(year, 1, 1), date(year, 12, 31))
    for m in _WEEKDAY.finditer(text):
        mod, wd = m.group(1), _WEEKDAYS.index(m.group(2))
        back = (today.weekday() - wd) % 7
        if mod == "next":
            d = today + timedelta(days=(wd - today.weekday()) % 7 or 7)
        else:
            d = today - timedelta(days=back or (7 if mod in ("last", "past") else 0))
        claim(m, d, d)
    for m in _AGO.finditer(text):
        n, unit = _number(m.group(1)), m.group(2)
        if unit == "day":
            d = today - timedelta(days=n)
            claim(m, d - timedelta(days=1), d + timedelta(days=1))
        elif unit == "week":
            d = today - timedelta(days=7 * n)
            claim(m, d - timedelta(days=3), d + timedelta(days=3))
        elif unit == "month":
            claim(m, *_month_range(*_shift_month(today.year, today.month, -n)))
        else:
            claim(m, date(today.year - n, 1, 1), date(today.year - n, 12, 31))
    for m in _REL.finditer(text):
        phrase = " ".join(m.group(1).split())
        if phrase in ("today", "tonight", "this morning"):
            claim(m, today, today)
        elif phrase == "yesterday":
            claim(m, today - timedelta(days=1), today - timedelta(days=1))
        elif phrase == "the day before yesterday":
            claim(m, today - timedelta(days=2), today - timedelta(days=2))
        else:
            which, unit = phrase.split()
            back = 0 if which == "this" else 1
            monday = today - timedelta(days=today.weekday())
            if unit == "week":
                start = monday - timedelta(weeks=back)
                claim(m, start, start + timedelta(days=6))
            elif unit == "weekend":
                sat = monday - timedelta(days=2) if back or today.weekday() < 5 else monday + timedelta(days=5)
                claim(m, sat, sat + timedelta(days=1))
            elif unit == "month":
                claim(m, *_month_range(*_shift_month(today.year, today.month, -back)))
            else:
                claim(m, date(today.year - back, 1, 1), date(today.year - back, 12, 31))
    return [r for _, r in sorted(found, key=lambda x: x[0])]


def mentioned(statement: str, when: datetime | date) -> tuple[DateRange, ...]:
    """The dates an engram's own text names, resolved against the engram's date (event time).

    A turn of 17 March 2022 that says "yesterday I went bowling" is about 16 March 2022; "last
    month" in a note of 8 May 2023 names April 2023. The same rule as for queries
    (:func:`resolve`, module docstring), with ``now`` = the engram's ``created``: the moment it was
    said. This is the mention-time / event-time distinction of temporal IR (Alonso, Gertz &
    Baeza-Yates, "On the value of temporal information in information retrieval", SIGIR Forum
    2007): a memory is often about an earlier day than the one it was written on.

    Args:
        statement: the engram's text.
        when: its date (``created``; a naive datetime is taken as UTC).

    Returns:
        The ranges in text order (a tuple; cached per (statement, UTC day) for statements up to
        4,096 characters, since recall asks again for the same candidates); ``()`` when the text
        names no date.
    """
    if isinstance(when, datetime):
        try:
            when = (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).date()
        except OverflowError:
            return ()
    if len(statement) > _CACHED_CHARS:  # the cache holds its keys: long texts are resolved each time
        return tuple(resolve(statement, when))
    return _mentioned(statement, when)


_CACHED_CHARS = 4096


@lru_cache(maxsize=16384)
def _mentioned(statement: str, day: date) -> tuple[DateRange, ...]:
    return tuple(resolve(statement, day))


def date_words(when: datetime) -> str:
    """Words that make an engram's date searchable by BM25: ``"8 May 2023 Monday"`` (UTC day)."""
    d = (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    return _day_words(d.year, d.month, d.day)


@lru_cache(maxsize=4096)
def _day_words(year: int, month: int, day: int) -> str:
    """:func:`date_words` of one UTC day (cached: a store's engrams share few days)."""
    weekday = date(year, month, day).weekday()
    return f"{day} {_MONTHS[month - 1].title()} {year} {_WEEKDAYS[weekday].title()}"
