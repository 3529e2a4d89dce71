"""The benchmark's capture mode (``--capture``): a corpus stored as capture stores a user's turns.

Each conversation turn goes through :meth:`plur.memory.Memory.capture`, one call per turn in
conversation order, exactly as a host hands the turns it sees (the secret screen, the filter of turns
with nothing to remember, the per-turn ingest with ``{kind: conversation, format: capture, session,
turn, role: user, capture: true}`` provenance, dated by its session). The text is the corpus document the
other modes store (LoCoMo: ``"<speaker>: <text> [image: <caption>]"``), so the storage path is the only
difference. A turn capture does not store (trivial, or said before in the same conversation) is in no
engram: it is never ranked (it joins the tied tail, :func:`bench.engine.runner.with_tail`), as for a user.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any


def learn_captured(mem: Any, docs: Sequence[tuple[str, str]],
                   meta: Sequence[Any]) -> tuple[list[Any | None], dict[str, int]]:
    """Capture ``(doc id, text)`` turns one by one; the stored engram per document (``None``: not stored).

    Args:
        docs: the corpus documents in conversation order. meta: their :class:`bench.datasets.tasks.DocMeta`
            (session and turn required: capture is for conversation turns).

    Returns:
        ``(engram or None per document, counts)``; counts: ``stored`` and one key per skip reason.

    Raises:
        RuntimeError: this plur has no ``Memory.capture``, or a document is not a conversation turn.
    """
    if not hasattr(mem, "capture"):
        raise RuntimeError("--capture needs Memory.capture (issue 42 B); this plur has none")
    out: list[Any | None] = []
    counts: Counter[str] = Counter()
    for (doc_id, text), m in zip(docs, list(meta) or [None] * len(docs)):
        if m is None or m.session is None or m.turn is None:
            raise RuntimeError(f"--capture stores conversation turns; {doc_id!r} has no session/turn "
                               "(use --granularity turn)")
        res = mem.capture(text, session=m.session, turn=m.turn, role="user", scope="global", when=m.date,
                          mode="user")
        out.append(res.stored[0] if res.stored else None)
        counts[res.skipped or "stored"] += 1
    return out, dict(counts)
