"""Import wiring: engrams read from files (:mod:`plur.formats.transfer`) into the store, screened for
secrets, deduplicated, or only previewed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import NotFoundError
from ..store.engram import Engram


@dataclass(frozen=True)
class ImportResult:
    """What :meth:`plur.memory.Memory.import_engrams` did (or, with ``dry_run``, would do).

    Attributes:
        added: the engrams written (with ``dry_run``: that would be written), in input order.
        known: entries the store already holds (same id and text, or the same statement in the scope);
            their new tags are merged (not with ``dry_run``).
        renamed: ``(id in the file, id stored)`` for entries whose id this store uses for other text.
        secrets: credentials redacted from the text before anything was stored (:mod:`plur.screen.text`).
        dry_run: nothing was written.
    """

    added: tuple[Engram, ...]
    known: tuple[Engram, ...]
    renamed: tuple[tuple[str, str], ...] = ()
    secrets: int = 0
    dry_run: bool = False


def screen(engrams: Iterable[Engram], keep_ids: bool = False) -> tuple[list[Engram], list[str]]:
    """The engrams with credentials redacted from their statements (:func:`plur.screen.text.screen`, capture's
    screen; ``keep_ids``: the setting ``keep_identity_numbers``), and the kind of each secret found."""
    from ..screen.text import screen as screen_text

    out, kinds = [], []
    for e in engrams:
        shown = screen_text(e.statement, keep_ids=keep_ids)
        if shown.kinds:
            kinds += shown.kinds
            e = e.replace(statement=shown.text)
        out.append(e)
    return out, kinds


def import_engrams(mem: Any, engrams: Iterable[Engram], *, dry_run: bool = False) -> ImportResult:
    """Store imported engrams: :meth:`plur.memory.Memory.import_engrams`, which documents it."""
    items, kinds = screen(engrams, getattr(mem.settings, "keep_identity_numbers", False))
    secrets = len(kinds)
    for e in items:
        Engram.create(e.statement, max_statement_bytes=mem.settings.max_statement_bytes)
    with mem._lock:
        mem._scan()
        stored, fresh = [], []
        for e in items:
            have = _stored(mem.store, e.id)
            (stored if have is not None and (have.content_hash, have.scope) == (e.content_hash, e.scope)
             else fresh).append(e)
        if dry_run:
            seen: set[tuple[str, str]] = set()
            added, known = [], list(stored)
            for e in fresh:
                key = (e.scope, e.content_hash)
                if key in seen or mem.store.find_duplicate(e.statement, e.scope) is not None:
                    known.append(e)
                else:
                    seen.add(key)
                    added.append(e)
            return ImportResult(tuple(added), tuple(known), (), secrets, True)
        mem.stats.record_screened(kinds, "import")  # counted (never the text), as capture's are
        results = mem.store.add_many(fresh)
        new = [e for e, created in results if created]
        if mem._indexes is not None and new:
            mem._indexes.add(new)
        mem._note_own_write()
    renamed = tuple((e.id, got.id) for e, (got, created) in zip(fresh, results) if created and got.id != e.id)
    known = [e for e, created in results if not created] + stored
    return ImportResult(tuple(new), tuple(known), renamed, secrets, False)


def _stored(store: Any, engram_id: str) -> Engram | None:
    try:
        return store.get(engram_id)
    except NotFoundError:
        return None
