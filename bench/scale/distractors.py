"""Distractor notes: what a decade of someone's captured turns looks like, without LoCoMo in it.

Three kinds, interleaved (seeded, so the same ``n`` always gives the same notes):

* **other conversations' turns** (5 in 10): sentences of the LongMemEval haystacks (real chat text,
  none from LoCoMo), one or two per note once the ~20k single sentences are used;
* **personal facts** (3 in 10): a fake-data library's people, places, jobs, dates and likes in
  templates such as "My sister Dana moved to Lake Justin in 2019." (``faker``, extra ``bench``);
* **paraphrases** (2 in 10): a turn of the first kind reworded by rules (an opener, synonyms,
  contractions, two sentences swapped), so near-duplicates crowd the same neighbourhoods.

Each note is a user turn of a conversation (``source.kind = "conversation"``, 20 turns a session), ~150
a day from 2014-01-01 on (a million notes span about 18 years), so BM25 context, dates and the dense
chunking run as they do on captured turns. Statements are distinct after the store's normalisation
(the store would merge equal ones).
"""

from __future__ import annotations

import datetime
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from plur.store.engram import normalize_statement

#: Bumped whenever the notes for a given ``n`` change (a kept store built by another version is rebuilt).
VERSION = 1
TURNS_PER_SESSION = 20
NOTES_PER_DAY = 150
DAY0 = datetime.date(2014, 1, 1)
_SPLIT = re.compile(r"(?<=[.!?])\s+")
OPENERS = ("Honestly, ", "I think ", "As I said, ", "To be fair, ", "Just so you know, ", "By the way, ",
            "Funny thing: ", "Remember, ")
_SWAPS = {"really": "very", "big": "large", "buy": "purchase", "help": "assist", "start": "begin",
          "want": "would like", "like": "enjoy", "great": "excellent", "small": "little", "happy": "glad",
          "think": "believe", "maybe": "perhaps", "get": "obtain", "use": "employ", "show": "display",
          "also": "as well", "quick": "fast", "hard": "difficult", "often": "frequently", "need": "require"}
_CONTRACT = (("I am ", "I'm "), ("do not ", "don't "), ("it is ", "it's "), ("I have ", "I've "),
             ("can not ", "can't "), ("I'm ", "I am "), ("don't ", "do not "), ("it's ", "it is "))
_WORD = re.compile(r"\b(" + "|".join(_SWAPS) + r")\b")


def turn_pool(shared_data: Path) -> list[str]:
    """Distinct sentences (20..400 characters) of every turn in the LongMemEval files under ``shared_data``."""
    seen: set[str] = set()
    pool: list[str] = []
    for path in sorted((shared_data / "longmemeval").glob("*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            for session in item.get("haystack_sessions", []):
                for turn in session:
                    for s in _SPLIT.split(str(turn.get("content", "")).replace("\n", " ")):
                        s = s.strip()
                        if 20 <= len(s) <= 400 and s not in seen:
                            seen.add(s)
                            pool.append(s)
    return pool


def paraphrase(text: str, rng: random.Random) -> str:
    """``text`` reworded by rules: synonyms, a contraction flipped, sentences swapped, an opener."""
    out = _WORD.sub(lambda m: _SWAPS[m.group(1)] if rng.random() < 0.7 else m.group(1), text)
    for a, b in _CONTRACT:
        if a in out and rng.random() < 0.5:
            out = out.replace(a, b, 1)
            break
    parts = _SPLIT.split(out)
    if len(parts) > 1 and rng.random() < 0.5:
        parts = parts[1:] + parts[:1]
        out = " ".join(parts)
    opener = rng.choice(OPENERS)
    return opener + out[:1].lower() + out[1:] if out[:1].isupper() and not out.startswith("I ") else opener + out


class _Facts:
    """Personal facts from a seeded fake-data generator (``faker``)."""

    RELATIONS = ("sister", "brother", "neighbour", "colleague", "friend", "cousin", "aunt", "uncle", "boss",
                 "landlord", "dentist", "mentor", "roommate", "daughter's teacher")
    THINGS = ("book", "film", "band", "dish", "board game", "podcast", "hiking trail", "coffee place", "city",
              "song", "painter", "TV show")

    def __init__(self, seed: int) -> None:
        try:
            from faker import Faker
        except ImportError:  # pragma: no cover - the extra names it
            raise SystemExit("the scale bench needs faker: pip install 'plur[bench]'") from None
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.rng = random.Random(seed)

    def __call__(self) -> str:
        f, r = self.fake, self.rng
        rel = r.choice(self.RELATIONS)
        year = r.randrange(1990, 2031)
        templates = (
            lambda: f"My {rel} {f.first_name()} moved to {f.city()} in {year}.",
            lambda: f"{f.first_name()} works as a {f.job().lower()} at {f.company()} now.",
            lambda: f"My {rel}'s birthday is on {f.date_between('-80y', '-5y').strftime('%B %d')}.",
            lambda: f"I have a {r.choice(('dentist', 'doctor', 'vet', 'tax'))} appointment on "
                    f"{f.date_between('-10y', '+1y').strftime('%A, %B %d %Y')} at {r.randrange(8, 18)}:{r.choice(('00', '30'))}.",
            lambda: f"My favourite {r.choice(self.THINGS)} is {f.catch_phrase().lower()}.",
            lambda: f"{f.name()} is my {rel}; they live on {f.street_name()} in {f.city()}.",
            lambda: f"We adopted a {f.color_name().lower()} {r.choice(('cat', 'dog', 'rabbit', 'parrot'))} called "
                    f"{f.first_name()} in {year}.",
            lambda: f"I paid {r.randrange(20, 3000)} dollars for the {f.word()} {r.choice(('repair', 'course', 'ticket', 'bike'))} "
                    f"in {f.month_name()} {year}.",
            lambda: f"{f.first_name()} from {f.company()} said the {f.bs()} project starts in {f.month_name()}.",
            lambda: f"I'm learning {f.language_name()} with {f.first_name()} every {f.day_of_week()}.",
        )
        return r.choice(templates)()


def distractors(n: int, shared_data: Path, seed: int = 49) -> Iterator[dict[str, Any]]:
    """``n`` distractor notes as ``Memory.learn_many`` items (statement, created, conversation source).

    Raises:
        SystemExit: faker is missing, or there are no LongMemEval turns under ``shared_data``.
    """
    pool = turn_pool(shared_data)
    if not pool:
        raise SystemExit(f"no LongMemEval turns under {shared_data}/longmemeval (set PLUR_SHARED_DATA)")
    rng = random.Random(seed)
    facts = _Facts(seed)
    seen: set[int] = set()
    singles = iter(pool)

    def turn() -> str:
        s = next(singles, None)
        return s if s is not None else pool[rng.randrange(len(pool))] + " " + pool[rng.randrange(len(pool))]

    for i in range(n):
        kind = i % 10
        for attempt in range(100):
            if kind < 5 or attempt >= 50:
                text = turn()
            elif kind < 8:
                text = facts()
            else:
                text = paraphrase(pool[rng.randrange(len(pool))] if rng.random() < 0.5 else turn(), rng)
            key = hash(normalize_statement(text))
            if key not in seen:
                seen.add(key)
                break
        day = DAY0 + datetime.timedelta(days=i // NOTES_PER_DAY)
        yield {"statement": text, "created": f"{day.isoformat()}T{9 + (i % NOTES_PER_DAY) * 12 // NOTES_PER_DAY:02d}:"
                                              f"{i % 60:02d}:00+00:00",
               "source": {"kind": "conversation", "format": "scale", "session": f"x{i // TURNS_PER_SESSION}",
                          "turn": i % TURNS_PER_SESSION, "role": "user"}}
