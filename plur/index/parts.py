"""The questions of a compound query: "Which port does the web dev server listen on, and which branch do we deploy
from?" asks two things, each answered by another note (pure; no LLM).

The relevance floor's relative part (:mod:`plur.index.floor`: a hit must score a share of the best hit's score)
drops the long tail under a strong match. A compound question has two strong matches, each for half of it: the
note that answers the half with more words in common scores far below the other's, and was kept out (in a fresh
repository, "We deploy the billing service from the branch release-candidate." scored 0.267 for the question
above against 0.703 for the port's note, under 0.66 x 0.703). :func:`question_parts` finds the halves; recall
judges a hit kept out by the floor again against each half alone (:func:`plur.index.floor.clear_by_parts`).

A query is compound when it holds two to :data:`MAX_PARTS` questions of three words or more each:

* separate questions: "Which port does the dev server use? Which branch do we deploy from?";
* questions joined in one sentence: a clause that starts with a question word after ", and" (or, but), a
  semicolon, or a bare "and" / "or" before a wh-word: "..., and which branch do we deploy from?", "What is my dog
  called and where does my sister live?". A question word is an English wh-word (what, which, where, when, who,
  whose, why, how); a verb that opens a yes/no question (is, do, can, ...) counts only after ", and" or a
  semicolon, in a query with a question mark ("What is X, and is it Y?").

One question each: "What did James and Samantha do?" (no question word after "and"), "What did she paint, and
when?" (a part under three words), "What does Nate do that he loves and can make money from?" (a verb after a bare
"and"), "According to Gina, what makes Jon a good mentor?" and "What did Deb share, which made Jolene smile?" (a
bare comma). A query over :data:`MAX_CHARS` characters is not read as questions.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["MAX_CHARS", "MAX_PARTS", "question_parts"]

#: Most parts read from one query (a longer list is not a compound question but a prompt).
MAX_PARTS = 4
#: Longest query read for parts, characters.
MAX_CHARS = 400
_WH = r"what|what's|whats|which|where|where's|when|when's|who|who's|whom|whose|why|how|how's"
_AUX = r"is|are|was|were|am|do|does|did|can|could|will|would|should|shall|may|might|must|has|have|had"
#: A clause joined by a conjunction after a comma, or a semicolon ("..., and which...", "...; is it..."); a bare
#: comma starts a relative clause or follows a phrase that places the question ("..., which brought...",
#: "According to Gina, what...") and splits nothing.
_JOIN = r"(?:\s*,\s*(?:and|or|but|also|plus)\s+|\s*;\s*(?:(?:and|or|but|also|plus)\s+)?)"
#: A wh-word may also follow a bare "and" / "or" ("What is my dog called and where does my sister live?"); a
#: yes/no verb there joins two verbs of one question ("...that he loves and can make money from?").
_SPLIT_WH = re.compile(rf"(?:{_JOIN}|\s+(?:and|or)\s+)(?=(?:{_WH})\b)", re.I)
_SPLIT_ANY = re.compile(rf"(?:{_JOIN}(?=(?:{_WH}|{_AUX})\b)|\s+(?:and|or)\s+(?=(?:{_WH})\b))", re.I)
_SENTENCE = re.compile(r"[^?？!.。\n]+[?？]")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


@lru_cache(maxsize=1024)
def question_parts(query: str) -> tuple[str, ...]:
    """The questions a compound ``query`` asks (each without its question mark), or ``()`` when it asks one thing.

    Pure. Each part has at least three words; at most :data:`MAX_PARTS` parts (more: ``()``).
    """
    text = query.strip()
    if not text or len(text) > MAX_CHARS:
        return ()
    asks = "?" in text or "？" in text
    questions = [s.strip() for s in _SENTENCE.findall(text)] if asks else []
    pieces = questions if len(questions) >= 2 else [text]
    split = _SPLIT_ANY if asks else _SPLIT_WH
    parts = [p.strip(" ,;?？") for piece in pieces for p in split.split(piece)]
    parts = [p for p in parts if p]
    if len(parts) < 2 or len(parts) > MAX_PARTS or any(len(_WORD.findall(p)) < 3 for p in parts):
        return ()
    return tuple(parts)
