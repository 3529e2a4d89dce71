"""Newest first: when recalled notes disagree over time, the newer leads and the older is marked earlier.

"I work as a data analyst at Google." (January) and "I've officially started at Anthropic now." (March) both
answer "Where does the user currently work?"; ranked by score alone the older one leads, because it shares
the question's word "work". This stage, after fusion and the relevance floor, looks at a recall's first
:data:`TOP` hits, finds notes among them that are versions of one fact, and rearranges them; it never drops
a hit and never changes a score:

* the newer note is placed right before the older one, at the place of the better-ranked of the two (a
  group of several versions: newest first, at the place of its best-ranked member);
* the older note gets :attr:`~plur.index.recall.Hit.earlier_than` = the newer note's id (the memory block
  marks its line ``earlier than <id>``, :mod:`plur.prompt.block`);
* a newer note below the relevance floor that updates a note above it clears the floor with it (its
  :attr:`~plur.index.recall.Hit.updates` names the older note), so the block never shows only the stale one.

Two of those hits are versions of one fact (:func:`updates`) when all hold:

1. they were said by the same speaker in the same role (``source.speaker`` / ``source.role``; a note
   without a conversation source counts as the user's), and the older one clears the relevance floor;
2. one is newer: a later ``created``, or the same ``created`` and a later turn of the same conversation
   (notes of one day keep their order by time);
3. the newer one does not read as an addition ("also", "too", "as well": two pets, two languages, a second
   allergy are compatible facts, not versions), and they are not about two people ("My sister lives in
   Berlin." / "My brother lives in Berlin now."; "I drive a Corolla." / "My wife drives a Volvo now.": by
   their first words, :data:`PEOPLE`);
4. and either the newer one says it changes something ("now", "moved", "switched", "instead", "renamed"...:
   :data:`CHANGE_CUES`), both are short statements (at most :data:`MAX_WORDS` words: in a long turn a cue
   word is rarely about the fact asked for), and the cosine between the two notes' pieces closest to the
   query is at least :data:`CHANGED_COSINE` (:data:`CHANGED_NOW_COSINE` when the question asks for the
   current state: "currently", "now", "these days", :data:`NOW_CUES`; "I've officially started at Anthropic
   now" shares little with "I work as a data analyst at Google" but both answer "Where does the user
   currently work?");
5. or each states a number the other does not ("pre-approved for $350,000" / "$400,000"; "a personal best of
   27:12 in a 5K" / "25:50 in a 5K"), and that cosine is at least :data:`NUMBER_COSINE`.

Cosine alone is no evidence: "My sister lives in Berlin." and "My brother lives in Berlin." are closer (0.88
with MiniLM) than "My sister lives in Berlin." and "My sister lives in Madrid." (0.60). Deterministic and local
(the vectors the dense index holds; no model call, no LLM); English cue words. The thresholds were chosen on
the cases of ``tests/data/newest_facts.yaml`` and checked against LoCoMo, where few statements update others
(docs/concepts/recall.md "Newest first"). Setting ``newest_first`` turns the stage off.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..store.engram import Engram
from .recall import Hit

__all__ = ["ADDITION_CUES", "CHANGE_CUES", "CHANGED_COSINE", "CHANGED_NOW_COSINE", "MAX_WORDS", "NOW_CUES",
           "NUMBER_COSINE", "PEOPLE", "TOP", "Said", "lead_order", "newest_first", "said", "says", "time_key", "updates"]

#: Words and phrases by which a statement says it changes an earlier one (English, case-folded, whole words).
CHANGE_CUES = frozenset("""now nowadays anymore instead currently switch switched changed moved move relocated
renamed quit left stopped upgraded sold replaced canceled cancelled raised lowered bumped migrated promoted engaged
married divorced updated rescheduled postponed joined started became become gone correction""".split()) | frozenset((
    "these days", "any more", "no longer", "no more", "from now on", "change of plan", "change of plans", "new name",
    "went up", "went down", "down to", "up to", "pulled out", "i was wrong"))
#: Words and phrases by which a statement adds a fact beside an earlier one instead of replacing it.
ADDITION_CUES = frozenset("also too besides both".split()) | frozenset(("as well", "in addition"))
#: Words and phrases by which a question asks for the current state of something.
NOW_CUES = frozenset("current currently now nowadays still latest anymore today".split()) | frozenset((
    "these days", "at the moment", "most recent", "any more"))
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


#: Characters of a note or question the cue and number checks read (a 1 MB note is read once, in part).
READ_CHARS = 8192


def _phrases(text: str) -> frozenset[str]:
    """The words, word pairs and word triples of ``text`` (its first :data:`READ_CHARS`), case-folded."""
    w = [x.casefold().replace("\u2019", "'") for x in _WORD.findall(text[:READ_CHARS])]
    return frozenset(w) | frozenset(" ".join(w[i:i + n]) for n in (2, 3) for i in range(len(w) - n + 1))


def says(text: str, cues: frozenset[str]) -> bool:
    """Whether ``text`` holds one of the words or phrases ``cues`` (:data:`CHANGE_CUES`, :data:`ADDITION_CUES`,
    :data:`NOW_CUES`)."""
    return not cues.isdisjoint(_phrases(text))


_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
#: People a note can be about besides the user ("my sister ..."): two notes about two of them (or one about the
#: user, "I ...", and one about another) are not versions of one fact.
PEOPLE = frozenset("""wife husband partner spouse fiance fiancee girlfriend boyfriend son daughter kid kids child children
baby mother mom mum father dad parents sister brother sibling siblings grandmother grandma grandfather grandpa aunt uncle
cousin niece nephew friend friends boss manager colleague coworker roommate flatmate neighbour neighbor teacher
doctor""".split())
_SELF = frozenset("i i'm im i've i'd i'll we we're we've we'd".split())
_OPENERS = frozenset("and but so oh well btw yes no hey hi ok okay honestly actually just also".split())


@dataclasses.dataclass(frozen=True)
class Said:
    """What the stage reads in a note's text (:func:`said`).

    Attributes:
        changes: it says it changes something (:data:`CHANGE_CUES`). adds: it says it adds (:data:`ADDITION_CUES`).
        words: how many words it has (in its first :data:`READ_CHARS`, plus one when it is longer). numbers: the numbers it states (``"$350,000"`` -> ``"350,000"``).
        person: who it is about, when its first words say (``self``, ``sister``...; '' unknown).
    """

    changes: bool
    adds: bool
    words: int
    numbers: frozenset[str]
    person: str = ""


def _person(statement: str) -> str:
    """Who a note is about, by its first words: ``self`` ("I ...", "We ..."), a person it names ("My sister
    ..." -> ``sister``), or '' (anything else: a thing, a name, a greeting; unknown)."""
    words = [w.casefold().replace("\u2019", "'") for w in _WORD.findall(statement[:200])]
    while words and words[0] in _OPENERS:
        words = words[1:]
    if not words:
        return ""
    if words[0] in _SELF:
        return "self"
    if words[0] in ("my", "our") and len(words) > 1:
        noun = words[1].removesuffix("'s")
        return noun if noun in PEOPLE else ""
    return ""


@functools.lru_cache(maxsize=8192)
def said(statement: str) -> Said:
    """:class:`Said` of a note's text (memoised: a note is read by many recalls)."""
    found = _phrases(statement)
    words = len(statement[:READ_CHARS].split()) + (len(statement) > READ_CHARS)
    return Said(not CHANGE_CUES.isdisjoint(found), not ADDITION_CUES.isdisjoint(found), words,
                frozenset(_NUMBER.findall(statement[:READ_CHARS])), _person(statement))


#: How many of a recall's best hits the stage reads: the versions of a fact the question asks about are among
#: its best answers. A fixed number, so a recall's first k hits do not depend on k.
TOP = 5
#: Longest note (words) whose change cue counts (condition 4).
MAX_WORDS = 30
#: Cosine (of the two notes' pieces closest to the query) two short notes need when the newer says it changes.
CHANGED_COSINE = 0.35
#: The same, when moreover the question asks for the current state (:data:`NOW_CUES`).
CHANGED_NOW_COSINE = 0.20
#: Cosine two notes that state different numbers need (condition 5).
NUMBER_COSINE = 0.50


def time_key(engram: Engram) -> tuple[datetime, int]:
    """When a note was said: ``(created, turn)``; the turn orders the notes of one conversation said at one time."""
    src = engram.source if isinstance(engram.source, Mapping) else {}
    turn = src.get("turn")
    return engram.created, turn if isinstance(turn, int) and not isinstance(turn, bool) else -1


def _voice(engram: Engram) -> tuple[str, str]:
    src = engram.source if isinstance(engram.source, Mapping) else {}
    return str(src.get("speaker") or ""), str(src.get("role") or "user")


def _session(engram: Engram) -> str:
    src = engram.source if isinstance(engram.source, Mapping) else {}
    return str(src.get("session") or "")


def _newer(a: Engram, b: Engram) -> bool:
    """Whether ``a`` was said after ``b`` (a later time, or a later turn of the same conversation at one time)."""
    if a.created != b.created:
        return a.created > b.created
    return _session(a) == _session(b) != "" and time_key(a)[1] > time_key(b)[1]


def updates(newer: Engram, older: Engram, cosine: float, asks_now: bool = False) -> bool:
    """Whether ``newer`` is a later version of the fact ``older`` states (conditions 1-5 of the module doc,
    except the floor).

    Args:
        newer, older: two recalled notes. cosine: the cosine in [-1, 1] between their pieces closest to the query.
        asks_now: the question asks for the current state (:data:`NOW_CUES`).
    """
    if not _newer(newer, older) or _voice(newer) != _voice(older):
        return False
    new, old = said(newer.statement), said(older.statement)
    if new.adds or (new.person and old.person and new.person != old.person):
        return False
    if new.changes and max(new.words, old.words) <= MAX_WORDS \
            and cosine >= (CHANGED_NOW_COSINE if asks_now else CHANGED_COSINE):
        return True
    return bool(new.numbers - old.numbers) and bool(old.numbers - new.numbers) and cosine >= NUMBER_COSINE


def lead_order(hits: Sequence[Any]) -> list[Any]:
    """``hits`` (best first) with each group of versions together, newest first, at its best member's place.

    Pure; reads only each hit's ``engram`` and ``earlier_than`` (an id of another hit in ``hits``, or '').
    Hits without a version keep their order. Works on :class:`~plur.index.recall.Hit` and anything shaped
    like it (the memory block calls it on the hits it is given).
    """
    pos = {h.engram.id: i for i, h in enumerate(hits)}
    parent = list(range(len(hits)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    linked = False
    for i, h in enumerate(hits):
        j = pos.get(getattr(h, "earlier_than", "") or "")
        if j is not None and j != i:
            a, b = root(i), root(j)
            parent[max(a, b)] = min(a, b)
            linked = True
    if not linked:
        return list(hits)
    groups: dict[int, list[int]] = {}
    for i in range(len(hits)):
        groups.setdefault(root(i), []).append(i)
    out: list[Any] = []
    for first in sorted(groups):  # a group's root is its best-ranked member (the smaller index wins)
        members = groups[first]
        members.sort(key=lambda i: (time_key(hits[i].engram), -i), reverse=True)
        out.extend(hits[i] for i in members)
    return out


def newest_first(hits: Sequence[Hit], pieces: Callable[[Sequence[str]], Mapping[str, Any]],
                 query: str = "") -> list[Hit]:
    """Find versions of one fact among the first :data:`TOP` ``hits`` and put the newest first (module doc).

    Args:
        hits: a recall's hits, best first, the relevance floor already marked (``below_floor``).
        pieces: ids -> ``{id: [dims] float32}``, each note's piece (chunk vector, unit norm) closest to the
            query; ids without a vector are left out (such a hit takes no part).
        query: the question (does it ask for the current state? :data:`NOW_CUES`).

    Returns:
        The same hits, the first :data:`TOP` rearranged by :func:`lead_order`, ``rank`` renumbered 1..n,
        ``earlier_than`` set on older versions, ``below_floor`` cleared (``updates`` set) on a newer version of a
        note above the floor. ``hits[:k]`` depends on the first ``max(k, TOP)`` hits only.
    """
    head = list(hits[:TOP])
    if len(head) < 2 or all(h.below_floor for h in head):
        return list(hits)
    vec = pieces([h.engram.id for h in head])
    idx = [i for i, h in enumerate(head) if h.engram.id in vec]
    if len(idx) < 2:
        return list(hits)
    asks_now = says(query, NOW_CUES)
    newest: dict[int, int] = {}     # older hit -> the newest hit that updates it
    lifted: dict[int, int] = {}     # newer hit below the floor -> the older hit above it that it updates
    for i in idx:
        if head[i].below_floor:     # an older note below the floor is not in the block: left alone
            continue
        for j in idx:
            cosine = float(vec[head[i].engram.id] @ vec[head[j].engram.id])
            if i == j or not updates(head[j].engram, head[i].engram, cosine, asks_now):
                continue
            if i not in newest or time_key(head[j].engram) > time_key(head[newest[i]].engram):
                newest[i] = j
            if head[j].below_floor:
                lifted.setdefault(j, i)
    if not newest:
        return list(hits)
    for i, j in newest.items():
        head[i] = dataclasses.replace(head[i], earlier_than=head[j].engram.id)
    for j, i in lifted.items():
        head[j] = dataclasses.replace(head[j], below_floor="", updates=head[i].engram.id)
    out = lead_order(head) + list(hits[TOP:])
    return [h if h.rank == r else dataclasses.replace(h, rank=r) for r, h in enumerate(out, start=1)]
