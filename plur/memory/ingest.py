"""Conversation ingest wiring: parse a chat history (:mod:`plur.formats.chats`) and learn one engram
per new turn, deduplicated by provenance, in batches that let recalls interleave.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..store.engram import Engram, _check_scope, parse_time, tag_tuple


def ingest(mem: Any, messages: Any, *, session: str | None = None, date: Any = None, scope: str = "global",
           roles: Sequence[str] = ("user",), format: str | None = None, tags: Sequence[str] = (),
           source: Mapping[str, Any] | None = None, progress: bool | None = None, dry_run: bool = False,
           rules: bool | None = None, personal: bool | None = None, forget: bool | None = None) -> Any:
    """Learn a conversation, one engram per new turn: :meth:`plur.memory.Memory.ingest`, which documents it."""
    from ..formats import chats as conv

    tags = tag_tuple(tags)
    if tags:
        Engram.create("tags check", tags=tags)   # a bad tag refuses the whole ingest, not every turn
    bad = [r for r in roles if r not in conv.ROLES]
    if bad or not roles:
        raise ValidationError(f"roles {tuple(roles)!r}: use one or more of {', '.join(conv.ROLES)}")
    _check_scope(scope)
    when = parse_time(date, "date") if date is not None else None
    if isinstance(messages, str):
        raise ValidationError(f"ingest() got text {messages[:60]!r}; pass the decoded messages, or "
                              "pathlib.Path(...) for a file")
    problems: list[tuple[str, str]] = []  # malformed items left out; the rest is ingested
    if isinstance(messages, Path):
        data, where = conv.load(messages, problems, max_bytes=mem.settings.max_input_bytes), str(messages)
    else:
        data, where = messages, "messages"
    if isinstance(data, list) and data and all(isinstance(t, conv.Turn) for t in data):
        turns, fmt = list(data), data[0].format
    else:
        fmt = format or conv.detect_format(data, where)
        turns = conv.parse(data, fmt, where=where, session=session, date=when, problems=problems)
        if format is not None and not turns:
            _wrong_format(data, format, where)
    turns, kinds = _screen(turns, bool(getattr(mem.settings, "keep_identity_numbers", False)))
    secrets = len(kinds)
    kept = [t for t in turns if t.role in roles]
    from .ingest_rules import IngestRules

    s = mem.settings
    rule = IngestRules(mem, scope, rules=s.capture_rules if rules is None else rules,
                       personal=s.route_personal if personal is None else personal,
                       forget=s.forget_requests if forget is None else forget)
    with mem._lock:
        mem._scan()
        # provenance key -> its engram (the active one when superseded); the first scope's wins; a view, not a copy
        have = ChainMap(*(_provenance(mem, one) for one in rule.scopes))
    file = (source or {}).get("file") or (messages.name if isinstance(messages, Path) else None)
    kept = conv.keep_file_session(kept, have.values(), data, fmt, session, file)
    # a derived session that disagrees with a turn another file (or no file) stored is another conversation
    # that opens alike, not an edit: it gets its own session (the same file's changed turns stay edits)
    kept = conv.fork_derived(kept, lambda t: _differs(old := have.get(t.key), t.text)
                             and (file is None or (old.source or {}).get("file") != file))
    new: list[tuple[Any, str]] = []            # (turn, the scope it goes to)
    edited: list[tuple[Engram, Any]] = []      # (stored engram, turn whose text changed since)
    queued: set[Any] = set()
    for t in kept:
        if rule:
            t = rule.prepare(t, new, edited)   # nothing to remember, typed with capture off, asks to forget
            if t is None:
                continue
        old = have.get(t.key)
        if old is None and _captured(have, t):
            continue  # the host's plugin captured this very turn live: already stored
        if (old is None and t.key in queued) or (old is not None and not (old.status == "active"
                                                                          and _differs(old, t.text))):
            continue  # stored unchanged, or a key repeated in the data (ingested once)
        into = rule.scope_of(t) if old is None else old.scope
        if rule and not rule.keep(t, into):
            continue
        if old is None:
            queued.add(t.key)
            new.append((t, into))
        else:
            edited.append((old, t))
    left = tuple(sorted(rule.counts.items()))
    engrams = []
    for t, into in new:  # all validated before anything is written; a bad turn is left out and reported
        try:
            engrams.append(Engram.create(t.text, max_statement_bytes=mem.settings.max_statement_bytes,
                                         scope=into, type="user" if t.role == "user" else "reference",
                                         tags=tags, source=t.source(**(source or {})),
                                         created=t.created or when))
        except ValidationError as exc:
            problems.append((f"{where}: session {t.session!r} turn {t.turn}", str(exc)))
    forgotten = tuple(rule.forgotten)
    if dry_run:
        return conv.IngestResult(format=fmt, turns=len(kept), added=tuple(engrams),
                                 skipped=len(kept) - len(new) - len(edited) - sum(n for _, n in left),
                                 problems=tuple(problems),
                                 changed=tuple(old.replace(statement=t.text) for old, t in edited),
                                 secrets=secrets, dry_run=True, left_out=left, forgotten=forgotten)
    mem.stats.record_screened(kinds, "ingest")
    added: list[Engram] = []
    show = progress if progress is not None else len(engrams) > 1000
    from tqdm import tqdm

    with tqdm(total=len(engrams), desc=f"ingest ({fmt})", unit="turn", disable=not show) as bar:
        for start in range(0, len(engrams), 1000):  # the lock is taken per batch: recalls interleave
            with mem._lock:
                gen = mem._generation
                results = mem.store.add_many(engrams[start:start + 1000], dedupe=False)
                batch = [e for e, created in results if created]
                if mem._indexes is not None:
                    mem._indexes.add(batch)
                mem._note_own_write()
                _provenance_added(mem, gen, batch)
            added += batch
            bar.update(len(results))
    changed = []
    for old, t in edited:  # the turn was edited since it was ingested: its new text supersedes the old
        try:
            changed.append(mem.supersede(old.id, t.text, source=t.source(**(source or {})),
                                         created=t.created or when))
        except ValidationError as exc:
            problems.append((f"{where}: session {t.session!r} turn {t.turn}", str(exc)))
    if forgotten:   # notes of this conversation its requests point to, stored before: erased as plur forget erases
        from .forget import forget_many

        forgotten = tuple(e.id for e in forget_many(mem, list(forgotten)))
    return conv.IngestResult(format=fmt, turns=len(kept), added=tuple(added),
                             skipped=len(kept) - len(new) - len(edited) - sum(n for _, n in left),
                             problems=tuple(problems), changed=tuple(changed), secrets=secrets, left_out=left,
                             forgotten=forgotten)


def _screen(turns: list[Any], keep_ids: bool = False) -> tuple[list[Any], list[str]]:
    """The turns with credentials redacted from their text (the one secret screen), and the kinds found. A key
    pasted in two pieces over consecutive turns of one speaker in one conversation is redacted in both
    (:func:`plur.screen.pieces.join`) and counted once."""
    import dataclasses

    from ..screen.pieces import join
    from ..screen.text import screen

    out, kinds = [], []
    last: dict[tuple[str, str, str], int] = {}   # (format, session, role) -> index in out of its latest turn
    for t in turns:
        text, where = t.text, (t.format, t.session, t.role)
        joined = join(out[last[where]].text, text) if where in last else None
        if joined is not None:
            out[last[where]] = dataclasses.replace(out[last[where]], text=joined.before)
            kinds += [joined.kind] * joined.new
            text = joined.text
        shown = screen(text, keep_ids=keep_ids)
        kinds += shown.kinds
        last[where] = len(out)
        out.append(dataclasses.replace(t, text=shown.text) if shown.text != t.text else t)
    return out, kinds


def _wrong_format(data: Any, fmt: str, where: str) -> None:
    """Raise: ``--format fmt`` read nothing from ``where``; name the format it looks like, if any."""
    from ..formats import chats as conv

    try:
        guess = conv.detect_format(data, where)
    except ValidationError:
        guess = None
    hint = (f"it looks like {guess}: drop --format (or pass --format {guess})" if guess and guess != fmt
            else f"check the file, or pass another --format ({', '.join(conv.FORMATS)})")
    raise ValidationError(f"{where} read as {fmt} holds no turns; {hint}")


#: New provenance keys carried over our own writes in a small map in front of the scope's (a ChainMap), merged into a
#: new map once this many: a capture copies the small one, not a map of every turn in the scope (O(n) a turn).
OVERLAY_MAX = 4096


def _provenance(mem: Any, scope: str) -> Mapping[Any, Engram]:
    """Provenance key -> its engram in ``scope`` (the active one when superseded); the caller holds ``mem._lock``.

    Built for every scope in one pass over the store, kept per store generation (``mem._generation``, bumped by
    every change Memory writes or a scan sees) and carried forward over this module's own writes
    (:func:`_provenance_added`): capture ingests one turn per call, and reading every engram's provenance each time
    made a turn cost ~100 ms at 5k engrams (O(n) per turn); a turn routed to ``global`` reads both scopes. Never
    mutated once built (a concurrent ingest may be reading it outside the lock); a write makes a new
    ``ChainMap(added, base)`` that shares ``base`` (:data:`OVERLAY_MAX`).
    """
    from ..formats import chats as conv

    cached = getattr(mem, "_provenance_cache", None)
    if cached is None or cached[0] != mem._generation:
        scopes: dict[str, dict[Any, Engram]] = {}
        engrams = mem.store.all()
        for e in engrams:
            if (k := conv.source_key(e.source)) is not None:
                have = scopes.setdefault(e.scope, {})
                if k not in have or e.status == "active":
                    have[k] = e
        cached = mem._provenance_cache = (mem._generation, scopes, len(engrams))
    return cached[1].get(scope, {})


def _provenance_added(mem: Any, gen: int, batch: Sequence[Engram]) -> None:
    """After our own ``add_many`` (generation ``gen`` -> ``mem._generation``): the cache plus ``batch``, when nothing
    else changed meanwhile (same generation before the add, and the store grew by exactly the batch: an add also
    takes in other writers' files, which only a rebuild reads)."""
    from ..formats import chats as conv

    cached = getattr(mem, "_provenance_cache", None)
    if cached is None or cached[0] != gen:
        return
    total = mem.store.count()                   # not len(all()): that sorts every engram again after each add
    if total != cached[2] + len(batch):
        mem._provenance_cache = None
        return
    scopes = dict(cached[1])
    for scope in {e.scope for e in batch}:
        old = scopes.get(scope, {})
        base = old.maps[1] if isinstance(old, ChainMap) else old
        added = dict(old.maps[0]) if isinstance(old, ChainMap) else {}  # copied: the old may be read outside the lock
        for e in batch:
            if e.scope == scope and (k := conv.source_key(e.source)) is not None and (k not in old
                                                                                       or e.status == "active"):
                added[k] = e
        scopes[scope] = ChainMap(added, base) if len(added) <= OVERLAY_MAX else {**base, **added}
    mem._provenance_cache = (mem._generation, scopes, total)


def _captured(have: Mapping[Any, Engram], t: Any) -> bool:
    """Whether a host's plugin captured turn ``t`` live (its parser's ``CAPTURED_AS`` format, same session and number)."""
    from ..formats.chats import captured_as

    alias = captured_as(t.format)
    return alias is not None and (alias, t.session, t.turn, t.role) in have


def _differs(old: Engram | None, text: str) -> bool:
    """A stored turn holds other text than ``text`` (same text, or the same statement once normalised: no)."""
    return old is not None and old.statement != text and old.content_hash != _text_hash(text)


def _text_hash(text: str) -> str | None:
    """An engram's ``content_hash`` for ``text`` (``None`` when it is no valid statement)."""
    try:
        return Engram.create(text).content_hash
    except ValidationError:
        return None
