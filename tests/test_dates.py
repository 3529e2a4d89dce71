"""The query date parser (plur.index.dates): pure, tested with literal inputs and a fixed now."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from plur.index.dates import DateRange, date_words, mentioned, resolve

NOW = datetime(2023, 6, 14, 15, 30, tzinfo=timezone.utc)  # a Wednesday


def _spans(query: str, now=NOW) -> list[tuple[str, str]]:
    return [(r.start.isoformat(), r.end.isoformat()) for r in resolve(query, now)]


@pytest.mark.parametrize("query, want", [
    ("what did we plan on 2023-05-08?", [("2023-05-08", "2023-05-08")]),
    ("notes from 2023/05/08", [("2023-05-08", "2023-05-08")]),
    ("What did Gina find on 1 February, 2023?", [("2023-02-01", "2023-02-01")]),
    ("Who did Maria have dinner with on May 3, 2023?", [("2023-05-03", "2023-05-03")]),
    ("the 7th of May", [("2023-05-07", "2023-05-07")]),
    ("on June 20th", [("2022-06-20", "2022-06-20")]),           # no year, not yet this year: last year
    ("What did I do in May 2023?", [("2023-05-01", "2023-05-31")]),
    ("trip in Sept 2022", [("2022-09-01", "2022-09-30")]),
    ("When did Melanie go camping in June?", [("2023-06-01", "2023-06-30")]),
    ("camping in July", [("2022-07-01", "2022-07-31")]),        # the most recent July
    ("what did I buy last May", [("2023-05-01", "2023-05-31")]),
    ("what did I buy last June", [("2022-06-01", "2022-06-30")]),  # strictly before this month
    ("how many beach trips in 2022", [("2022-01-01", "2022-12-31")]),
    ("yesterday", [("2023-06-13", "2023-06-13")]),
    ("today", [("2023-06-14", "2023-06-14")]),
    ("this morning", [("2023-06-14", "2023-06-14")]),
    ("Tonight we cook", [("2023-06-14", "2023-06-14")]),
    ("the day before yesterday", [("2023-06-12", "2023-06-12")]),
    ("three days ago", [("2023-06-10", "2023-06-12")]),
    ("two weeks ago", [("2023-05-28", "2023-06-03")]),
    ("a couple of months ago", [("2023-04-01", "2023-04-30")]),
    ("2 years ago", [("2021-01-01", "2021-12-31")]),
    ("last week", [("2023-06-05", "2023-06-11")]),
    ("this week", [("2023-06-12", "2023-06-18")]),
    ("last weekend", [("2023-06-10", "2023-06-11")]),
    ("last month", [("2023-05-01", "2023-05-31")]),
    ("this year", [("2023-01-01", "2023-12-31")]),
    ("last Monday", [("2023-06-12", "2023-06-12")]),
    ("last Wednesday", [("2023-06-07", "2023-06-07")]),          # strictly before today
    ("on Wednesday", [("2023-06-14", "2023-06-14")]),            # today counts
    ("next Friday", [("2023-06-16", "2023-06-16")]),
    ("next May", [("2024-05-01", "2024-05-31")]),
])
def test_dates_resolve_against_now(query, want):
    assert _spans(query) == want


@pytest.mark.parametrize("query", [
    "May I ask what you think?", "you may like it", "what is my dog's name?", "I ran 5 km",
    "room 2023", "Mar a lago", "", "sundays are lazy", "a few of my friends",
])
def test_text_naming_no_date_gives_nothing(query):
    assert resolve(query, NOW) == []


def test_two_dates_in_order_and_overlaps_read_once():
    assert _spans("between 8 May 2023 and last week") == [("2023-05-08", "2023-05-08"),
                                                         ("2023-06-05", "2023-06-11")]
    # "May 8, 2023" is one day, not also the month "May 2023"
    assert _spans("on May 8, 2023") == [("2023-05-08", "2023-05-08")]


def test_naive_and_date_now_and_invalid_days():
    assert _spans("yesterday", datetime(2023, 1, 1, 0, 5)) == [("2022-12-31", "2022-12-31")]
    assert _spans("last month", date(2023, 1, 10)) == [("2022-12-01", "2022-12-31")]
    assert resolve("on 31 February 2023", NOW) == []             # no such day: nothing, not a guess
    assert resolve("on 29 February", NOW) == []                  # neither 2023 nor 2022 has one


def test_range_contains_and_date_words():
    r = DateRange(date(2023, 5, 1), date(2023, 5, 31), "may 2023")
    assert r.contains(datetime(2023, 5, 31, 23, 59, tzinfo=timezone.utc))
    assert not r.contains(datetime(2023, 6, 1, 0, 0, tzinfo=timezone.utc))
    assert r.contains(date(2023, 5, 1))
    assert date_words(datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)) == "8 May 2023 Monday"


def test_mentioned_resolves_an_engrams_own_words_against_its_date():
    # a turn of Thursday 17 March 2022 (15:47 UTC) that says "yesterday" is about 16 March 2022
    said = datetime(2022, 3, 17, 15, 47, tzinfo=timezone.utc)
    assert [(r.start.isoformat(), r.text) for r in mentioned("By the way, yesterday I went bowling!", said)] == [
        ("2022-03-16", "yesterday")]
    assert [(r.start.isoformat(), r.end.isoformat()) for r in mentioned("I wrapped it up last month.", said)] == [
        ("2022-02-01", "2022-02-28")]
    assert [r.start.isoformat() for r in mentioned("Last Tuesday I met three new friends", said)] == ["2022-03-15"]
    # a naive datetime is UTC; a date works too; text naming no date gives ()
    assert mentioned("two days ago", datetime(2022, 3, 17))[0].start == date(2022, 3, 14)
    assert mentioned("two days ago", date(2022, 3, 17)) == mentioned("two days ago", said)
    assert mentioned("May I borrow your bike?", said) == ()


def test_ranges_overlap_when_they_share_a_day():
    march = DateRange(date(2022, 3, 1), date(2022, 3, 31), "march 2022")
    assert march.overlaps(DateRange(date(2022, 3, 31), date(2022, 4, 2), "x"))
    assert DateRange(date(2022, 2, 27), date(2022, 3, 1), "x").overlaps(march)
    assert not march.overlaps(DateRange(date(2022, 4, 1), date(2022, 4, 1), "april 1"))
