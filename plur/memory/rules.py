"""Capture's rules: which conversation turns are never notes, at every door (capture, ``plur ingest``).

* :func:`trivial`: nothing to remember ("ok", "thanks!", "go ahead", a slash command such as ``/plur capture
  off``, a bare shell command);
* :func:`only_asks`: a turn that only asks ("What food allergy do I have?"): a question is never a fact;
* :func:`mark_off` / :func:`off_marks`: the turns typed while capture was off, remembered (without their
  text) in ``<home>/capture-off.jsonl`` so that a later ingest of the conversation leaves them out too.

:func:`plur.memory.capture.capture` and :func:`plur.memory.ingest.ingest` apply them (setting
``capture_rules``); :func:`plur.memory.filters.asks` finds what an earlier version stored against them.
Pure text rules, no LLM: English word lists for acknowledgements and clause starts, the question mark in any
language.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: ``<home>/`` file of the turns handed to capture while it was off (one JSON object a line, no text).
OFF_FILE = "capture-off.jsonl"

_ACK = frozenset("""ok okay k kk ok. thanks thank thx ty you yes yeah yep yup no nope nah sure continue go on ahead
please do it that this lgtm great nice cool perfect done next proceed right good fine got sounds makes sense
alright all agreed agree correct exactly awesome wonderful excellent wow hi hello hey bye goodbye retry again
try keep going carry y n much very thumbs up cheers indeed of course np sorry hmm hm ah oh the same stop wait
looks ship approved approve works worked""".split())
_SHELL = frozenset("""ls cd pwd cat less more head tail grep rg find git npm npx pnpm yarn pip pip3 python python3 node
make cmake cargo go rustc gcc docker kubectl helm terraform rm mv cp mkdir rmdir touch chmod chown curl wget ssh scp
echo export source sudo apt apt-get brew systemctl journalctl top htop ps kill du df tar unzip zip pytest uv poetry
conda vim nano code open man which whoami env history clear exit ./""".split())
_PROSE = frozenset("""the a an is are was were my our your we i you he she they it's because why how what when where
should would could can please that this which who but and so if then than not don't doesn't""".split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_REDACTED = re.compile(r"\[redacted [a-z\-]+\]")
_SLASH = re.compile(r"^/[A-Za-z][\w:\-]*(?:\s|$)")
#: One sentence: up to its end mark (Latin, full-width CJK and Arabic marks).
_SENTENCE = re.compile(r"[^.!?。！？؟\n]+(?:[.!?。！？؟]+|$)")
_ASKS = ("?", "？", "؟")
_CLAUSE = re.compile(r"\s*[,;:，、；–—]\s*|\s+-\s+")
#: Abbreviations whose period ends no sentence ("Dr. Seuss", "U.S.", "C. S. Lewis", "J.K. Rowling").
_ABBREV = re.compile(r"\b(?:[A-Z]|Dr|Mr|Mrs|Ms|St|Jr|Sr|Prof|vs|etc|e\.g|i\.e)\.(?=\s*[\w(])")
#: Words an English clause of a question starts with (a clause starting otherwise, of 3+ words, is a statement:
#: "..., my wife is vegan?"); conjunctions and fillers in front are skipped.
_ASK_START = frozenset("""what what's whats which who who's whom whose when when's where where's why why's how how's
how'd is are was were am do does did don't doesn't didn't can can't could couldn't will won't would wouldn't
shall should shouldn't may might must have has had haven't hasn't isn't aren't wasn't weren't any anything
remind tell""".split())
_SELF = frozenset("i i'm im i've i'd i'll we we're we've we'd my our me".split())
_FILLER = frozenset("""and or but so also then well by the way btw anyway quick question again just hey hi hello oh
um uh ok okay sorry please now""".split())
#: English words a phrase that only places or qualifies a question starts with ("According to Gina, what...?",
#: "..., as of December 2023?", "Based on the conversation, did...?"): such a clause is no statement unless it
#: speaks of the speaker ("In 2020 I moved to Lisbon, what...?").
_OPENER = frozenset("""according as based considering given regarding concerning in on at for from after before during
since until about like unlike similar compared besides apart per despite with without between among following
that which who whose where when while one both either neither including involving except""".split())
#: English words a clause that states something holds (a verb of being, having or saying it will): "...,
#: the kids are vegan?". A later clause without one, and without the speaker, continues the question
#: ("When did James, Samantha and John go...?", "..., one of her cats?").
_STATES = frozenset("""is are was were am be been being isn't aren't wasn't weren't has have had hasn't haven't
hadn't will won't would wouldn't can can't could couldn't should shouldn't must may might shall do does did don't
doesn't didn't it's he's she's that's there's they're they've we're you're i'm""".split())
#: English function words: a clause with none of them is read as another language (the clause checks cannot tell,
#: so it counts as a statement: when unsure, store).
_ENGLISH = frozenset("""the a an of to in on at for with and or his her their its him them it this that these those
from by as out up about into over after before than what which who how when where why""".split())
#: A sentence beside the question that only says how to answer ("Answer yes or no.").
_HOW_TO_ANSWER = frozenset("answer reply in with only yes no or one word".split())



def trivial(text: str) -> bool:
    """Whether a turn has nothing to remember: an acknowledgement ("ok", "thanks!", "go ahead"), a
    slash command (``/clear``), a bare shell command (``ls -la``, ``git status``), or almost no words.

    Pure; language-neutral for letters (any script counts as words), English for the acknowledgement
    and prose word lists.
    """
    t = _REDACTED.sub(" ", text).strip()
    if _SLASH.match(t):
        return True
    words = [w.lower() for w in _WORD.findall(t)]
    letters = sum(len(w) for w in words)
    if letters < 3 and not any(ord(c) > 0x2E7F for c in t):      # CJK: one or two characters can be a fact
        return True
    if len(words) <= 6 and all(w in _ACK for w in words):
        return True
    first = t.lstrip("$ ").split(None, 1)[0] if t.lstrip("$ ") else ""
    if "\n" not in t and (first in _SHELL or first.startswith("./")) and len(t.split()) <= 12 \
            and not any(w in _PROSE for w in words):
        return True
    return False


def only_asks(text: str) -> bool:
    """Whether a turn only asks for information: every sentence is a question (it ends with ``?``,
    ``？`` or ``؟``) and no clause of one is a statement ("Can you book a table, my wife is vegan?"
    holds a fact: its clause "my wife is vegan" speaks of the speaker; so does "I'm planning a trip to Japan,
    could you recommend...?"); greetings and acknowledgements beside the question ("Hi! What is my dog
    called?") and how to answer ("... Answer yes or no.") do not count as content.

    A question's first clause is a statement when it does not start like a question ("ls shows nothing in the
    deploy folder, why?") nor with a phrase that places the question ("According to Gina, what...?", "Based on
    the conversation, did...?"); a later clause when it speaks of the speaker, holds a verb of being or having
    ("..., the kids are vegan?"), or is not English. So "When did James, Samantha and John go to the game?" and
    "What was Tim's issue last week, as mentioned on November 6, 2023?" only ask. Every LoCoMo question that
    ends with a question mark is one (tests/test_capture_questions.py).

    Pure. The question mark decides in any language; the clause checks read English, so in another language a
    question with a comma clause is kept (when unsure, store).
    """
    t = _ABBREV.sub(lambda m: m.group()[:-1], _REDACTED.sub(" ", text)).strip()
    sentences = [s.strip() for s in _SENTENCE.findall(t) if s.strip()]
    if not any(s.endswith(_ASKS) for s in sentences):
        return False
    asked = False
    for sentence in sentences:
        if not sentence.endswith(_ASKS):
            words = [w.lower() for w in _WORD.findall(sentence)]
            if trivial(sentence) or all(w in _FILLER or w in _ACK for w in words) \
                    or (words[:1] == ["answer"] and all(w in _HOW_TO_ANSWER for w in words)):
                continue                                   # "Hi!", "Thanks.", "Answer yes or no."
            return False                                   # a statement beside the question
        asked = True
        clauses = [c for c in _CLAUSE.split(sentence.rstrip("?？؟ ")) if _WORD.search(c)]
        for n, clause in enumerate(clauses):
            words = [w.lower() for w in _WORD.findall(clause)]
            while words and words[0] in _FILLER:
                words = words[1:]
            if len(words) >= 3 and _states(words, first=n == 0, alone=len(clauses) == 1):
                return False          # "I'm planning a trip to Japan and wondered if...?", "..., my wife is vegan?"
    return asked


def _states(words: list[str], *, first: bool, alone: bool) -> bool:
    """Whether a clause (lower-cased words, fillers in front dropped; 3 or more) of a question states something."""
    if words[0] in _SELF:
        return True
    if alone or words[0] in _ASK_START:
        return False
    speaks = any(w in _SELF for w in words)
    if words[0] in _OPENER:
        return speaks
    if first:
        return True
    return speaks or any(w in _STATES for w in words) or not any(w in _ENGLISH for w in words)


def left_out(text: str) -> str:
    """Why a conversation turn is never a note, by its (screened) text alone: ``trivial`` (:func:`trivial`:
    an acknowledgement, a slash or shell command), ``question`` (:func:`only_asks`), or ``""`` (keep it).
    Capture and ingest apply it (with the setting ``capture_rules``); pure."""
    if not text.strip() or trivial(text):
        return "trivial"
    return "question" if only_asks(text) else ""


# -- turns typed while capture was off -------------------------------------------------------------
def mark_off(home: Any, session: str, turn: int, role: str, text: str = "") -> None:
    """Remember that turn ``turn`` of ``session`` was handed to capture while capture was off, so that a later
    ingest of the conversation leaves it out too (:func:`off_marks`).

    One JSON line is appended to ``<home>/capture-off.jsonl`` (owner-only): ``{"session", "turn", "role",
    "at"}`` plus ``"hash"``, the :func:`~plur.store.engram.content_hash` of ``text`` (of its screened text: a
    transcript's numbering may differ from the host's, its text does not). Never the text. The DSH plugin
    appends the same line (without ``hash``: its numbering is the log's) when its own switch is off.
    Nothing is written when the home does not exist; a failed write is logged, never raised (the turn is
    still not stored).
    """
    from ..store.engram import content_hash

    folder = Path(home)
    if not folder.is_dir():
        return
    line = {"session": session, "turn": turn, "role": role,
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")}
    if text.strip():
        line["hash"] = content_hash(text.strip())
    data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        fd = os.open(folder / OFF_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)        # one write of one short line: appends of several processes never interleave
        finally:
            os.close(fd)
    except OSError as exc:
        import logging

        logging.getLogger("plur").warning("could not record a turn typed while capture was off in %s (%s)",
                                          folder / OFF_FILE, exc.strerror or exc)


@dataclass(frozen=True)
class OffMarks:
    """The turns handed to capture while it was off (:func:`mark_off`), as ingest matches them.

    Attributes:
        turns: ``(session, turn, role)`` of every mark: matched by position in a log numbered as its host
            captures (DSH: :func:`plur.formats.chats.captured_as`).
        texts: ``(session, role, content hash)`` of the marks with a hash: matched by text in any format.
    """

    turns: frozenset[tuple[str, int, str]] = frozenset()
    texts: frozenset[tuple[str, str, str]] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.turns or self.texts)


def off_marks(home: Any) -> OffMarks:
    """Every mark in ``<home>/capture-off.jsonl`` (lines that are not such marks are ignored)."""
    try:
        raw = (Path(home) / OFF_FILE).read_text("utf-8", errors="replace")
    except OSError:
        return OffMarks()
    turns, texts = set(), set()
    for line in raw.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(m, dict) and isinstance(m.get("session"), str) and isinstance(m.get("role"), str)):
            continue
        if isinstance(m.get("turn"), int) and not isinstance(m["turn"], bool):
            turns.add((m["session"], m["turn"], m["role"]))
        if isinstance(m.get("hash"), str):
            texts.add((m["session"], m["role"], m["hash"]))
    return OffMarks(frozenset(turns), frozenset(texts))
