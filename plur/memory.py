"""The :class:`Memory` facade: the one public entry point that wires store, indexes and stats.

    >>> from plur import Memory
    >>> with Memory("/tmp/plur-demo") as mem:                      # doctest: +SKIP
    ...     mem.learn("The user's dog is called Rex.", scope="global")
    ...     [h.engram.statement for h in mem.recall("what is my dog's name?", k=3)]

Writes go to the store at once (atomic YAML files). Indexes are opened lazily on
the first recall, so ``plur learn`` never loads an embedding model; they catch up
from the store by content hash, so engrams written by other processes or edited
by hand are indexed at the next recall (see :mod:`plur.index.indexes`).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import os
import threading
import time
import weakref
from datetime import datetime, timedelta, timezone
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .config import Settings, load_settings
from .embed import model_thread
from .store.engram import Engram, _check_scope, parse_duration, parse_time, utcnow
from .errors import ValidationError
from .index.catchup import DenseCatchUp
from .index.recall import Fills, Hit, allowed_ids, check_mode, combine
from .stats import StatsDB
from .store.store import EngramStore

log = logging.getLogger("plur")


class Memory:
    """Long-term memory for agents, on the user's own machine.

    Args:
        home: plur home folder (default ``$PLUR_HOME`` or ``~/.plur``).
        settings: a resolved :class:`~plur.config.Settings`; default :func:`load_settings(home, **overrides)`.
        embedder: an :class:`plur.embed.embedder.Embedder` to use instead of resolving ``settings.model``
            (it is wrapped in the on-disk embedding cache).
        **overrides: setting name -> value (see ``plur.config.SETTINGS``).

    Thread-safety: one Memory may be shared by threads (the recall worker); its
    index operations are serialised by a lock. Several processes may share a home.
    """

    def __init__(self, home: str | os.PathLike[str] | None = None, *, settings: Settings | None = None,
                 embedder: Any | None = None, **overrides: Any) -> None:
        if settings is None:
            settings = load_settings(home, **overrides)
        elif overrides:
            settings = settings.replace(**overrides)
        self.settings = settings
        self.home = settings.home
        self.store = EngramStore(self.home, max_statement_bytes=settings.max_statement_bytes,
                                 fsync=settings.fsync)
        self._explicit_embedder = embedder
        self._resolution: Any | None = None
        self._indexes: Any | None = None
        self._stats: StatsDB | None = None
        self._lock = threading.RLock()
        self._folder_mtime: int | None = None
        self._last_scan = 0.0
        self._scan_cost_s = 0.0
        self._last_use = time.monotonic()  # of any call that scans (refresh_ahead's own scans excepted)
        self._generation = 0                 # bumped on every store change; keys the filter cache
        self._allowed_cache: dict[tuple[Any, ...], set[str] | None] = {}
        self._pinned_cache: tuple[tuple[str, int], list[Engram]] | None = None
        self._newest_cache: tuple[int, list[Engram]] | None = None
        self._bounded_cache: tuple[int, list[Engram]] | None = None   # engrams that can stop being current
        self._closed = False
        self._reranker: Any | None = None
        #: dense-leg catch-up (bounded in a recall, the rest in a background thread); see plur.index.catchup
        self.catchup = DenseCatchUp(self._lock, settings.recall_embed_batch)
        _OPEN.add(self)

    # -- lazily built parts ---------------------------------------------------------------
    @property
    def stats(self) -> StatsDB:
        """The recall/injection event log (``<home>/stats.db``), opened on first use."""
        if self._stats is None:
            with self._lock:
                if self._stats is None:
                    self._stats = StatsDB(self.home / "stats.db")
        return self._stats

    @property
    def cache_dir(self) -> Path:
        """Folder of the embedding cache (setting ``cache_dir``, default ``<home>/cache``)."""
        return Path(self.settings.cache_dir).expanduser() if self.settings.cache_dir else self.home / "cache"

    @property
    def graph_cache_dir(self) -> Path:
        """Folder of exported query graphs (ONNX, under ``onnx/``): setting ``cache_dir`` when set, else
        ``$XDG_CACHE_HOME/plur`` (default ``~/.cache/plur``). A graph depends only on the model and the
        library versions, not on the memories, so every home of the user shares one export.
        """
        if self.settings.cache_dir:
            return self.cache_dir
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        return (Path(xdg) if xdg else Path.home() / ".cache") / "plur"

    def model_resolution(self) -> Any:
        """Resolve (once) which embedding model serves the dense leg; see :func:`plur.embed.resolve.resolve_embedder`.

        Returns:
            A :class:`plur.embed.resolve.Resolution` whose ``embedder`` is wrapped in the embedding cache,
            or has ``embedder=None`` (BM25 only) with ``source`` and ``reason`` saying why.
        """
        with self._lock:
            if self._resolution is None:
                from .embed import cache as embed_cache, resolve as embed

                if self._explicit_embedder is not None:
                    res = embed.Resolution(embedder=self._explicit_embedder, source="path",
                                           reason="embedder passed to Memory()", requested=self.settings.model)
                else:
                    res = embed.resolve_embedder(self.settings)
                if res.embedder is not None:
                    cache = embed_cache.EmbeddingCache(self.cache_dir / "embeddings.sqlite")
                    cached = embed_cache.CachedEmbedder(res.embedder, cache)
                    cached.max_chunks = self.settings.max_embed_chunks  # bounded indexing cost per engram
                    cached.chunk_tokens = self.settings.embed_chunk_tokens or None
                    res = dataclasses.replace(res, embedder=cached)
                self._resolution = res
            return self._resolution

    def prepare_serving(self) -> bool:
        """Get a long-lived process ready to answer fast: open the indexes, load the model and give it the
        faster query path of the setting ``query_runtime`` (ONNX Runtime or TorchScript, cached under
        :attr:`graph_cache_dir`; :meth:`SentenceTransformerEmbedder.prepare_fast_queries`).

        Returns:
            True when queries are embedded on a faster path than the eager model.
        """
        self.recall("warm up", 1, record=False)  # opens the indexes and loads the model
        embedder = self.model_resolution().embedder
        if self.settings.query_runtime == "eager" or embedder is None:
            return False
        prepare = getattr(embedder, "prepare_fast_queries", None)
        return bool(prepare(self.settings.query_runtime, self.graph_cache_dir)) if prepare is not None else False

    def _index(self, need_dense: bool = True) -> Any:
        """The :class:`~plur.index.indexes.IndexSet`, opened and synced with the store on first use.

        Args:
            need_dense: resolve the embedding model and open the dense leg. ``False`` (a BM25-only
                recall) opens the lexical leg alone and defers the model, so no torch is imported;
                a later call with ``True`` attaches it.
        """
        if self._indexes is None:
            from .index.indexes import IndexSet

            defer = not need_dense and self._resolution is None and self._explicit_embedder is None
            embedder = None if defer else self.model_resolution().embedder
            idx = IndexSet(self.home / "index", self.settings, embedder, defer_dense=defer)
            self._scan(force=True)
            self._synced_at_open = idx.sync(self._by_id(), progress=True)
            self._indexes = idx
        elif need_dense and self._indexes.dense_deferred:
            embedder = self.model_resolution().embedder
            self._scan()
            self._indexes.attach_embedder(embedder, self._by_id())
        return self._indexes

    def _by_id(self) -> dict[str, Engram]:
        return self.store.by_id()

    def _scan_interval_s(self) -> float:
        """Seconds between full stat scans: ``refresh_interval_s``, stretched to 50x the last scan's cost."""
        base = self.settings.refresh_interval_s
        return max(base, 50.0 * self._scan_cost_s) if base > 0 else 0.0

    def refresh_ahead(self, idle_after_s: float = 600.0) -> bool:
        """Run the periodic full scan of the engram folder now when 80% of its interval has passed.

        A long-lived process (``plur serve``) calls this from a background thread, so the scan that
        catches in-place hand edits (49 ms at 10k engrams) runs between requests instead of inside
        the first request after a pause. Stops scanning once nothing used this Memory for
        ``idle_after_s`` seconds (an idle service costs no CPU; the next call scans as usual).

        Returns:
            True when it scanned.
        """
        with self._lock:
            interval = self._scan_interval_s()
            now = time.monotonic()
            if (self._indexes is None or interval <= 0 or now - self._last_use > idle_after_s
                    or now - self._last_scan < 0.8 * interval):
                return False
            self._scan(force=True, use=False)
            return True

    def _scan(self, force: bool = False, use: bool = True) -> None:
        """Pick up files changed outside this Memory (other processes, hand edits).

        Args:
            force: a full stat scan even when none is due.
            use: count this call as use (see :meth:`refresh_ahead`).
        """
        try:
            mtime = self.store.root.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = None
        now = time.monotonic()
        if use:
            self._last_use = now
        # A changed folder mtime (other writers, files added or removed) is caught up through the writer
        # journal and a name listing, without a stat of every file (EngramStore.refresh(full=False)), so a
        # reader keeps up with a stream of writers. In-place edits do not change the folder's mtime: a full
        # stat scan runs every refresh_interval_s, stretched to 50x its last cost (<= 2% of wall time);
        # 0 means a full scan at every call.
        full = force or now - self._last_scan >= self._scan_interval_s()
        if not full and mtime == self._folder_mtime:
            return
        changes = self.store.refresh(full=full)
        if full:
            self._scan_cost_s = time.monotonic() - now
            self._last_scan = now
        self._folder_mtime = mtime
        if changes.added or changes.updated or changes.removed:
            self._generation += 1
        if self._indexes is not None and (changes.added or changes.updated or changes.removed):
            if changes.removed:
                self._indexes.remove(changes.removed)
            changed = [self._get_or_none(i) for i in (changes.added | changes.updated)]
            self._indexes.add([e for e in changed if e is not None])

    def _note_own_write(self) -> None:
        """Our own writes change the folder's mtime; remember it so the next recall does not re-scan."""
        self._generation += 1
        try:
            self._folder_mtime = self.store.root.stat().st_mtime_ns
        except FileNotFoundError:
            pass

    def _get_or_none(self, engram_id: str) -> Engram | None:
        try:
            return self.store.get(engram_id)
        except Exception:  # noqa: BLE001 - vanished or quarantined meanwhile
            return None

    # -- writes ---------------------------------------------------------------------------
    def learn(self, statement: str, *, scope: str = "global", type: str = "fact", tags: Sequence[str] = (),
              domain: str | None = None, rationale: str | None = None, source: Mapping[str, Any] | None = None,
              pinned: bool = False, created: Any = None, valid_from: Any = None, valid_until: Any = None,
              ttl: Any = None) -> Engram:
        """Remember ``statement``; an exact duplicate in the same scope returns the existing engram.

        A duplicate is not written again, but tags it lacks are added to it (never dropped): the
        returned engram then carries the union of its tags and ``tags``.

        Args:
            statement: the text (non-blank, at most ``max_statement_bytes`` UTF-8 bytes).
            scope, type, tags, domain, rationale, source, pinned: the :class:`Engram` fields.
            created: when it was true/said (ISO-8601 or datetime; default now).
            valid_from, valid_until: validity window (ISO-8601 or datetime); outside it recall and the
                memory block skip the engram (:meth:`Engram.is_current`).
            ttl: time to live from now, e.g. ``'30d'`` (:func:`~plur.store.engram.parse_duration`)
                or a ``timedelta``; sets ``valid_until`` (give one of the two).

        Raises:
            ValidationError: empty statement, bad scope/type/tag/time, ttl with valid_until, or over
                ``max_statement_bytes``.
        """
        engram = Engram.create(statement, max_statement_bytes=self.settings.max_statement_bytes, scope=scope,
                               type=type, tags=tuple(tags), domain=domain, rationale=rationale, source=source,
                               pinned=pinned, created=created, valid_from=valid_from,
                               valid_until=_until(valid_until, ttl))
        with self._lock:
            stored, created_new = self.store.add(engram)
            if created_new and self._indexes is not None:
                self._indexes.add([stored])
            self._note_own_write()
        return stored

    def learn_many(self, items: Iterable[Mapping[str, Any]]) -> list[Engram]:
        """Learn many engrams under one store lock (each item: ``learn`` keyword arguments).

        Returns:
            The stored engrams in input order (duplicates map to the engram already stored).
        """
        engrams = []
        for item in items:
            item = dict(item)
            statement = item.pop("statement")
            item["tags"] = tuple(item.get("tags", ()))
            engrams.append(Engram.create(statement, max_statement_bytes=self.settings.max_statement_bytes, **item))
        with self._lock:
            results = self.store.add_many(engrams)
            if self._indexes is not None:
                self._indexes.add([e for e, new in results if new])
            self._note_own_write()
        return [e for e, _ in results]

    def update(self, engram_id: str, *, expected: str | None = None, **changes: Any) -> Engram:
        """Change fields of an engram (statement, scope, type, tags, pinned, status, ...).

        Args:
            engram_id: the engram to change.
            expected: the version the caller started from (:func:`plur.store.engram.engram_version`
                of the engram it showed or edited); when the stored engram differs now, nothing is
                written and :class:`~plur.errors.ConflictError` is raised. Without it, the version
                read here is used, so a change landing between this read and the write is not lost either.
            **changes: field -> new value.

        Raises:
            NotFoundError, InvalidIdError, ValidationError.
            ConflictError: changed since ``expected`` ("changed since you opened it"; CLI exit 7, web 409).
            DuplicateError: the new text is exactly another active engram's in the scope (``other_id``).
        """
        from .store.engram import engram_version

        if "statement" in changes:
            Engram.create(changes["statement"], max_statement_bytes=self.settings.max_statement_bytes)
        if "tags" in changes:
            changes["tags"] = tuple(changes["tags"])
        with self._lock:
            base = self.store.get(engram_id)
            new = base.replace(**changes)
            stored = self.store.put(new, expected=expected or engram_version(base))
            if self._indexes is not None:
                self._indexes.add([stored])
            self._note_own_write()
        return stored

    def supersede(self, old_id: str, statement: str, **fields: Any) -> Engram:
        """Replace an engram by a new statement ("I moved to Porto" replaces "I live in Lisbon").

        The new engram takes the old one's scope, type, tags, domain and pinned flag unless ``fields``
        says otherwise, and records ``supersedes=old_id``. The old engram is kept (its history stays
        on disk) but retired: ``status='retired'``, ``valid_until`` = now. Recall, the memory block
        and the worker then skip it; ``recall(..., include_expired=True)`` still finds it.

        Args:
            old_id: the engram being replaced. statement: the new text.
            **fields: :meth:`learn` keyword arguments for the new engram (``created``, ``ttl``...).

        Returns:
            The new engram.

        Raises:
            NotFoundError, InvalidIdError: no such engram. ValidationError: a bad field, or ``old_id``
            already retired, or the new statement equals the old one (use :meth:`update`).
        """
        old = self.get(old_id)
        if old.status != "active":
            raise ValidationError(f"{old_id} is already retired; supersede the engram that replaced it "
                                  "(see `plur list --status active`)")
        if Engram.create(statement).content_hash == old.content_hash and fields.get("scope", old.scope) == old.scope:
            raise ValidationError(f"the new statement equals {old_id}'s; use `plur update` to change its fields")
        for name in ("scope", "type", "tags", "domain", "pinned"):
            fields.setdefault(name, getattr(old, name))
        new = self.learn(statement, **fields)
        with self._lock:
            stored = self.store.put(dataclasses.replace(new, supersedes=old.id))
            retired = self.store.put(old.replace(status="retired", valid_until=utcnow()))
            if self._indexes is not None:
                self._indexes.add([stored, retired])
            self._note_own_write()
        return stored

    def ingest(self, messages: Any, *, session: str | None = None, date: Any = None, scope: str = "global",
               roles: Sequence[str] = ("user",), format: str | None = None, tags: Sequence[str] = (),
               source: Mapping[str, Any] | None = None, progress: bool | None = None) -> Any:
        """Learn a conversation, one engram per turn, with its provenance; re-ingesting adds only new turns.

        Each kept turn becomes an engram of type ``user`` (user turns) or ``reference`` (assistant
        turns, only when ``roles`` includes ``'assistant'``), ``created`` = the turn's own timestamp,
        else its session's date, else ``date``, else now, and ``source`` = the conversation
        provenance ``{kind: conversation, format, session, turn, role, speaker?, ...}``
        (:class:`~plur.store.ingest.turns.Turn`).

        Deduplication is by provenance, not by text: a turn whose ``(format, session, turn, role)`` is
        already stored in ``scope`` is skipped, so re-ingesting a file, or the file with turns appended,
        adds only the new turns, while two equal turns of different sessions are two engrams (the
        store's merge of exact duplicates is bypassed for ingested turns). ``learn`` of a statement
        equal to an ingested turn still returns that turn's engram.

        Args:
            messages: decoded conversation data (a list of ``{role, content}`` messages, a ChatGPT
                export, LongMemEval entries, LoCoMo samples, Claude Code events...), a
                :class:`pathlib.Path` of such a file, or a list of ``Turn``.
            session: session id where the data has none (messages: default a hash of the first message).
            date: timestamp for turns without their own or their session's (ISO-8601 or datetime).
            scope: scope of the new engrams.
            roles: which turns to keep (``user``, ``assistant``).
            format: the conversation format (:data:`plur.store.ingest.FORMATS`); default detected.
            tags: tags for every new engram. source: extra provenance keys (e.g. ``{"file": ...}``).
            progress: show a tqdm bar on stderr (default: when more than 1,000 turns are new).

        Returns:
            An :class:`~plur.store.ingest.turns.IngestResult` (``added``, ``skipped``, ``turns``, ``format``).

        Raises:
            ValidationError: malformed data, unknown format/role, bad scope, date or tag.
        """
        from .store import ingest as conv

        bad = [r for r in roles if r not in conv.ROLES]
        if bad or not roles:
            raise ValidationError(f"roles {tuple(roles)!r}: use one or more of {', '.join(conv.ROLES)}")
        _check_scope(scope)
        when = parse_time(date, "date") if date is not None else None
        if isinstance(messages, str):
            raise ValidationError(f"ingest() got text {messages[:60]!r}; pass the decoded messages, or "
                                  "pathlib.Path(...) for a file")
        if isinstance(messages, Path):
            data, where = conv.load(messages), str(messages)
        else:
            data, where = messages, "messages"
        if isinstance(data, list) and data and all(isinstance(t, conv.Turn) for t in data):
            turns, fmt = list(data), data[0].format
        else:
            fmt = format or conv.detect_format(data, where)
            turns = conv.parse(data, fmt, where=where, session=session, date=when)
        kept = [t for t in turns if t.role in roles]
        with self._lock:
            self._scan()
            have = {k for e in self.store.all() if e.scope == scope
                    and (k := conv.source_key(e.source)) is not None}
        new: list[Any] = []
        for t in kept:
            if t.key not in have:
                have.add(t.key)
                new.append(t)
        engrams = []
        for t in new:  # all validated before anything is written
            try:
                engrams.append(Engram.create(t.text, max_statement_bytes=self.settings.max_statement_bytes,
                                             scope=scope, type="user" if t.role == "user" else "reference",
                                             tags=tuple(tags), source=t.source(**(source or {})),
                                             created=t.created or when))
            except ValidationError as exc:
                raise ValidationError(f"{where}: session {t.session!r} turn {t.turn}: {exc}; nothing was "
                                      "ingested") from None
        added: list[Engram] = []
        show = progress if progress is not None else len(engrams) > 1000
        from tqdm import tqdm

        with tqdm(total=len(engrams), desc=f"ingest ({fmt})", unit="turn", disable=not show) as bar:
            for start in range(0, len(engrams), 1000):  # the lock is taken per batch: recalls interleave
                with self._lock:
                    results = self.store.add_many(engrams[start:start + 1000], dedupe=False)
                    batch = [e for e, created in results if created]
                    if self._indexes is not None:
                        self._indexes.add(batch)
                    self._note_own_write()
                added += batch
                bar.update(len(results))
        return conv.IngestResult(format=fmt, turns=len(kept), added=tuple(added), skipped=len(kept) - len(new))

    def forget(self, engram_id: str) -> Engram:
        """Delete an engram and every trace of its statement under the home; returns what was removed.

        Erased at once (not at the next save): the engram file; its entry in the store manifest;
        its terms and postings in the saved BM25 index and its rows in the saved dense index (in
        memory and on disk, compacted); the embedding cache rows of its text and chunks; its
        quarantined copies; in stats.db its feedback, its injection links and every recall that
        returned it (the query and all that recall's hit rows), with SQLite's ``secure_delete``,
        the WAL truncated and the file VACUUMed. See README "What forget erases".

        Raises:
            NotFoundError, InvalidIdError: no such engram. StoreError: the home cannot be written.
        """
        from .index.purge import compact_dense, purge_saved

        with self._lock:
            removed = self.store.delete(engram_id)
            self.store.save_manifest()
            if self._indexes is not None:
                self._indexes.remove([removed.id])
                compact_dense(self._indexes.dense)
                self._indexes.dirty = True
                self.save()
            else:
                purge_saved(self.home / "index", [removed.id])
            self._note_own_write()
            self._forget_cached_vectors(removed)
        self.stats.forget_engram(removed.id)
        self._forget_quarantined(removed.id)
        return removed

    def _forget_cached_vectors(self, engram: Engram) -> None:
        """Delete the embedding cache rows of the engram's text and of each of its chunks."""
        from .embed.cache import EmbeddingCache, text_key

        path = self.cache_dir / "embeddings.sqlite"
        if not path.exists():
            return
        texts = {engram.statement}
        if len(engram.statement) > 100 or self._resolution is not None:  # may be chunked: ask the model's tokenizer
            embedder = self.model_resolution().embedder
            if embedder is not None:
                texts.update(embedder.chunk_texts([engram.statement])[0])
                if hasattr(embedder, "document_chunks"):  # the chunks its layout embedded (plur.index.chunking)
                    from .index.chunking import layout

                    tokens, header = layout(engram, self.settings)
                    texts.update(embedder.document_chunks([engram.statement], [tokens], [header])[0])
        embedder = self._resolution.embedder if self._resolution is not None else None
        cache = getattr(embedder, "cache", None)
        if cache is not None:
            cache.forget([text_key(t) for t in texts])
            return
        with EmbeddingCache(path) as standalone:
            standalone.forget([text_key(t) for t in texts])

    def _forget_quarantined(self, engram_id: str) -> None:
        """Quarantined copies of a forgotten engram, and edits of it kept after a conflict, hold its text: remove them."""
        for q in self.store.quarantined():
            if q.get("moved") and Path(q["original"]).name == f"{engram_id}.yaml":
                for p in (Path(q["path"]), Path(q["path"] + ".reason")):
                    p.unlink(missing_ok=True)
        # and so do the texts `plur edit` kept in <home>/edit after a refused save
        edit_dir = self.home / "edit"
        if edit_dir.is_dir():
            for p in edit_dir.glob(f"*{engram_id}-*.yaml"):
                p.unlink(missing_ok=True)

    def feedback(self, engram_id: str, useful: bool, *, agent: str | None = None,
                 query: str | None = None) -> dict[str, int]:
        """Record that an engram was (or was not) useful, in stats.db (the engram file is not touched).

        Args:
            engram_id: the engram the feedback is about (must exist).
            useful: ``True`` useful, ``False`` not useful.
            agent: who says so (an agent id), if known. query: the recall query it answered, if known.

        Returns:
            The engram's feedback totals so far, ``{"useful": n, "not_useful": m}``.

        Raises:
            NotFoundError, InvalidIdError: no such engram. ValidationError: ``useful`` is not a bool.
        """
        if not isinstance(useful, bool):
            raise ValidationError(f"useful must be true or false, got {useful!r}")
        self.get(engram_id)
        self.stats.record_feedback(engram_id=engram_id, useful=useful, agent=agent, query=query)
        return self.stats.feedback_counts(engram_id)

    # -- reads ----------------------------------------------------------------------------
    def get(self, engram_id: str) -> Engram:
        """The engram with this id. Raises NotFoundError / InvalidIdError."""
        self._scan()
        return self.store.get(engram_id)

    def list(self, *, scope: str | None = None, type: str | None = None, tag: str | None = None,
             status: str | None = None, text: str | None = None) -> list[Engram]:
        """Engrams matching every given filter, newest first (``text``: case-insensitive substring)."""
        self._scan()
        if self._newest_cache is None or self._newest_cache[0] != self._generation:
            every = self.store.all()
            every.sort(key=lambda e: (e.created, e.id), reverse=True)
            self._newest_cache = (self._generation, every)
        needle = text.casefold() if text else None
        return [e for e in self._newest_cache[1]
                if (scope is None or e.scope == scope) and (type is None or e.type == type)
                and (tag is None or tag in e.tags) and (status is None or e.status == status)
                and (needle is None or needle in e.statement.casefold())]

    def pinned(self, scope: str | None = None) -> list[Engram]:
        """Current pinned engrams visible in ``scope`` (that scope plus ``global``; ``None`` = all), newest first.

        Current = :meth:`Engram.is_current` (active, inside its validity window now).

        Cached until the store changes, so the recall worker can ask every turn at O(1) cost.
        """
        self._scan()
        key = ("pinned", self._generation)
        if self._pinned_cache is None or self._pinned_cache[0] != key:
            every = [e for e in self.store.by_id().values() if e.pinned and e.status == "active"]
            every.sort(key=lambda e: (e.created, e.id), reverse=True)
            self._pinned_cache = (key, every)
        now = datetime.now(timezone.utc)
        return [e for e in self._pinned_cache[1]
                if (scope is None or e.scope in (scope, "global")) and e.is_current(now)]

    def _legs(self, query: str, k: int, scope: str | None, types: Sequence[str] | None,
              tags: Sequence[str] | None, need_bm25: bool, need_dense: bool, include_expired: bool = False
              ) -> tuple[list[tuple[str, float]], list[tuple[str, float]], float, Fills]:
        """The two legs' rankings (validity-filtered), the query's BM25 full-match score and the fills.

        Fills (both legs run): ``({id: BM25 score} of dense-only candidates, {id: cosine} of BM25-only
        candidates)``, so that fusion sums both legs' evidence for every candidate; see
        :func:`plur.index.recall.combine`.
        """
        idx = self._index(need_dense)
        self._scan()
        allowed = self._allowed(scope, types, tags)
        if allowed is not None and not allowed:
            return [], [], 0.0, ({}, {})
        n = max(k, self.settings.candidates)
        blocked = set() if include_expired else self._not_current()
        if len(blocked) > 4 * n:  # many retired/expired: filter before the top-n cut instead of over-fetching
            allowed = (set(self._by_id()) if allowed is None else allowed) - blocked
            blocked = set()
        fetch = n + len(blocked)

        def keep(ranking: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
            return [p for p in ranking if p[0] not in blocked][:n] if blocked else list(ranking)

        dense: list[tuple[str, float]] = []
        use_dense = need_dense and idx.dense is not None
        if use_dense:
            # A short queue is embedded now; a longer one by a background thread while this recall answers
            # from the last consistent dense index (BM25 finds the queued engrams), see plur.index.catchup.
            self.catchup.before_search(idx)
            use_dense = bool(len(idx.dense))
        with self.catchup.embed_lock if use_dense else contextlib.nullcontext():
            # the query is embedded on the model thread while this thread runs the BM25 leg
            qvec = model_thread.submit(idx.embedder.embed_query, query) if use_dense else None
            bm25: list[tuple[str, float]] = []
            fills: Fills = ({}, {})
            if need_bm25:
                ranking, bm25_of = idx.lexical.search_scored(query, fetch, allowed)
                bm25 = keep(ranking)
            bm25_full = idx.lexical.match_score(query) if need_bm25 else 0.0
            if qvec is not None:
                vector = qvec.result()
                dense = keep(idx.dense.search(vector, fetch, allowed))
                if bm25 and self.settings.fusion == "weighted":  # rrf fuses ranks, not scores
                    in_bm25 = {i for i, _ in bm25}
                    in_dense = {i for i, _ in dense}
                    fills = (bm25_of(i for i in in_dense if i not in in_bm25),
                             idx.dense.scores_for(vector, (i for i in in_bm25 if i not in in_dense)))
        return bm25, dense, bm25_full, fills

    def _not_current(self) -> set[str]:
        """Ids of engrams that are not current now (retired, expired, not yet valid); see :meth:`Engram.is_current`.

        The engrams that can be non-current (retired, or with a validity bound) are listed once per
        store change; each call only checks those against the clock.
        """
        if self._bounded_cache is None or self._bounded_cache[0] != self._generation:
            bounded = [e for e in self.store.by_id().values()
                       if e.status != "active" or e.valid_until is not None or e.valid_from is not None]
            self._bounded_cache = (self._generation, bounded)
        now = datetime.now(timezone.utc)
        return {e.id for e in self._bounded_cache[1] if not e.is_current(now)}

    def _allowed(self, scope: str | None, types: Sequence[str] | None,
                 tags: Sequence[str] | None) -> set[str] | None:
        """The filter's admitted ids, cached until the store changes (an O(n) pass per store change)."""
        if scope is None and not types and not tags:
            return None
        key = (self._generation, scope, tuple(sorted(types or ())), tuple(sorted(tags or ())))
        got = self._allowed_cache.get(key)
        if got is None:
            if len(self._allowed_cache) > 64 or any(k[0] != self._generation for k in self._allowed_cache):
                self._allowed_cache.clear()
            got = allowed_ids(self._by_id(), scope=scope, types=types, tags=tags)
            self._allowed_cache[key] = got
        return got

    def _check_query(self, query: Any, k: Any, scope: str | None) -> None:
        if not isinstance(query, str):
            raise ValidationError(f"query must be text, got {type(query).__name__} {query!r:.60}")
        try:
            query.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(f"query is not valid Unicode text ({exc.reason} at position {exc.start}); "
                                  "check the terminal's or caller's encoding (UTF-8 expected)") from None
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValidationError(f"k must be a non-negative integer, got {k!r}")
        if scope is not None:
            _check_scope(scope)

    def recall(self, query: str, k: int = 10, *, scope: str | None = None, types: Sequence[str] | None = None,
               tags: Sequence[str] | None = None, mode: str = "hybrid", agent: str | None = None,
               record: bool = True, min_score: float | None = None, include_expired: bool = False,
               now: Any = None, explain: bool = False) -> list[Hit]:
        """Engrams relevant to ``query``, best first.

        Args:
            query: free text (any language); empty or stop-word-only queries give ``[]``.
            k: maximum number of hits (top-k); 0 gives ``[]``.
            scope: ``None`` = every scope; ``'project:a'`` = that scope plus ``global`` only
                (an authorisation boundary, never a ranking hint).
            types: keep only these engram types. tags: keep engrams with any of these tags.
            mode: ``hybrid`` (BM25 + dense fused by ``settings.fusion``), ``bm25`` or ``dense``.
                Without an embedding model, ``hybrid`` and ``dense`` use BM25 alone.
            agent: who asked (recorded in stats.db).
            record: write the recall to stats.db (and ``settings.record_stats``).
            min_score: drop hits scoring below this, in [0, 1] (see :class:`~plur.index.recall.Hit`
                for what a score means; with the default ``weighted`` fusion it is absolute, so one
                threshold means the same for every query).
            include_expired: also return engrams that are not current (retired, e.g. superseded, or
                outside their ``valid_from``/``valid_until`` window). Default: skipped.
            now: when the question is asked (datetime or ISO-8601 text; default the current time):
                dates the query names ("last May", "two weeks ago") are resolved against it and
                engrams dated in them are boosted (setting ``date_boost``; README "Dates in recall").
            explain: fill each hit's ``context_matches`` (query terms matched via neighbouring turns).

        Returns:
            At most ``k`` :class:`~plur.index.recall.Hit` objects, ``rank`` 1..n, scores in [0, 1]
            non-increasing.

        Raises:
            ValidationError: bad query type, k, scope, mode, min_score or ``now``.
        """
        self._check_query(query, k, scope)
        check_mode(mode)
        if min_score is not None and (isinstance(min_score, bool) or not isinstance(min_score, (int, float))
                                      or not 0.0 <= min_score <= 1.0):
            raise ValidationError(f"min_score must be a number in [0, 1] (scores are in [0, 1]), got {min_score!r}")
        if k == 0 or not query.strip():
            return []
        t0 = time.perf_counter()
        s = self.settings
        with self._lock:
            # Without an embedding model, dense recall degrades to BM25 (the fallback was already loud).
            mode_used = "bm25" if mode == "dense" and self._index(mode != "bm25").dense is None else mode
            bm25, dense, top, fills = self._legs(query, k, scope, types, tags, mode_used != "dense",
                                                 mode_used != "bm25", include_expired)
            hits = self._second_stage(query, k, now, explain, lambda n: combine(
                bm25, dense, mode=mode_used, k=n, lookup=self._get_or_none, fusion_method=s.fusion,
                rrf_k=s.rrf_k, dense_weight=s.dense_weight, bm25_full=top, fills=fills))
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        latency_ms = (time.perf_counter() - t0) * 1000.0
        if record and s.record_stats:
            self.stats.record_recall(agent=agent, scope=scope, query=query, mode=mode, latency_ms=latency_ms,
                                     hits=hits)
        return hits

    def _second_stage(self, query: str, k: int, now: Any, explain: bool, fused: Any) -> list[Hit]:
        """Date boost and reranker over the fused candidates (``fused(n)`` -> top n hits), then the cut to k."""
        from .index import stages
        from .index.dates import resolve

        s = self.settings
        ranges = resolve(query, parse_time(now, "now") if now is not None else utcnow()) if s.date_boost else []
        reranker = self.reranker()
        if not ranges and reranker is None:
            hits = fused(k)
        else:
            hits = stages.boost_dates(fused(max(k, s.candidates)), ranges, s.date_boost, mentions=s.date_mentions)
            if reranker is not None:
                hits = stages.rerank(hits, query, reranker, max(k, s.rerank_top_n))
            hits = hits[:k]
        return stages.explain_context(hits, query, self._index(need_dense=False)) if explain else hits

    def reranker(self) -> Any | None:
        """The second-stage :class:`~plur.embed.rerank.Reranker` (setting ``reranker``), loaded once; None when off."""
        if not self.settings.reranker:
            return None
        with self._lock:
            if self._reranker is None:
                from .embed.rerank import load_reranker

                self._reranker = load_reranker(self.settings.reranker, device=self.settings.device)
            return self._reranker

    def recall_legs(self, query: str, k: int = 10, *, scope: str | None = None, agent: str | None = None,
                    record: bool = True) -> dict[str, list[Hit]]:
        """The hybrid ranking beside the BM25 and dense rankings (each leg run once), for the playground.

        Returns:
            ``{"hybrid": [...], "bm25": [...], "dense": [...]}``; ``dense`` is empty without a model.
        """
        self._check_query(query, k, scope)
        if k == 0 or not query.strip():
            return {"hybrid": [], "bm25": [], "dense": []}
        t0 = time.perf_counter()
        s = self.settings
        with self._lock:
            bm25, dense, top, fills = self._legs(query, k, scope, None, None, True, True)
            out = {m: self._second_stage(query, k, None, True, lambda n, m=m: combine(
                bm25, dense, mode=m, k=n, lookup=self._get_or_none, fusion_method=s.fusion, rrf_k=s.rrf_k,
                dense_weight=s.dense_weight, bm25_full=top, fills=fills)) for m in ("hybrid", "bm25", "dense")}
        if record and s.record_stats:
            self.stats.record_recall(agent=agent, scope=scope, query=query, mode="hybrid",
                                     latency_ms=(time.perf_counter() - t0) * 1000.0, hits=out["hybrid"])
        return out

    def index_state(self) -> dict[str, Any]:
        """Where the dense leg's catch-up stands, for status pages and hosts that wait for a steady index.

        Returns:
            ``{"open": bool, "pending_dense": n engrams queued for embedding, "catching_up": bool}``:
            ``catching_up`` while a background thread embeds the queue (recalls meanwhile answer from
            the last consistent index; see :mod:`plur.index.catchup`).
        """
        from .index.catchup import queued

        idx = self._indexes
        return {"open": idx is not None, "pending_dense": queued(idx) if idx is not None else 0,
                "catching_up": bool(self.catchup.running)}

    def catch_up(self, *, progress: bool = True, need_dense: bool = True) -> dict[str, int]:
        """Bring the indexes up to date with the store now (what the first recall after an ingest does).

        Shows tqdm bars on stderr (BM25 indexing, embedding) when ``progress``, so a first recall after
        a big ingest does not look hung; the CLI calls it before recalling.

        Args:
            progress: show progress bars on stderr.
            need_dense: also the dense leg (``False`` for a BM25-only recall: no model is loaded).

        Returns:
            ``{"indexed": n engrams (re)indexed in BM25 at open, "embedded": n engrams embedded}``.
        """
        with self._lock:
            opening = self._indexes is None
            idx = self._index(need_dense)
            indexed = self._synced_at_open if opening else 0
            if not opening:
                self._scan()
            embedded = 0
            if not idx.dense_deferred:
                pending = idx.pending_dense
                embedded = idx.flush_dense(progress=progress and pending > 100)
        return {"indexed": indexed, "embedded": embedded}

    # -- maintenance ----------------------------------------------------------------------
    def reindex(self, *, progress: bool = True) -> dict[str, int]:
        """Rebuild both indexes from the store (embeddings come from the cache when present).

        Returns:
            ``{"engrams": n indexed, "embedded": n sent to the dense leg}``.
        """
        import shutil

        from .index.indexes import IndexSet

        self.catchup.stop()
        with self._lock:
            self._indexes = None
            shutil.rmtree(self.home / "index", ignore_errors=True)
            res = self.model_resolution()
            self._scan(force=True)
            idx = IndexSet(self.home / "index", self.settings, res.embedder)
            n = idx.sync(self._by_id(), progress=progress)
            embedded = idx.flush_dense(progress=progress)
            idx.dirty = True
            idx.save()
            self._indexes = idx
        return {"engrams": n, "embedded": embedded}

    def doctor(self, *, load_model: bool = True) -> dict[str, Any]:
        """Store health and the model in use.

        Returns:
            ``{home, home_mode ("0700"), home_private (no group/other access), engrams: {total, by_scope,
            by_type, by_status}, quarantined: [...], lock: {...},
            model: {requested, name, identity, dims, source, reason, warnings, device} , index: {...}}``.
        """
        self._scan(force=True)
        engrams = self.store.all()

        def count(attr: str) -> dict[str, int]:
            out: dict[str, int] = {}
            for e in engrams:
                out[getattr(e, attr)] = out.get(getattr(e, attr), 0) + 1
            return dict(sorted(out.items()))

        model: dict[str, Any] = {"requested": self.settings.model}
        if load_model:
            model = self.model_resolution().as_dict()
        try:
            mode: int | None = self.home.stat().st_mode & 0o777
        except OSError:
            mode = None
        return {"home": str(self.home), "home_mode": None if mode is None else f"{mode:04o}",
                "home_private": mode is None or not mode & 0o077,
                "engrams": {"total": len(engrams), "by_scope": count("scope"),
                                                    "by_type": count("type"), "by_status": count("status")},
                "quarantined": self.store.quarantined(), "lock": self.store.lock_state(), "model": model,
                "settings": {k: str(v) for k, v in vars(self.settings).items()}}

    def save(self) -> None:
        """Persist the indexes if they changed (also done by :meth:`close` and at exit).

        The indexes are a cache of the engram files: when they cannot be written (read-only home,
        full disk) a warning is logged, the temp folders of the failed save are removed, and the
        next process rebuilds what is missing.
        """
        with self._lock:
            if self._indexes is not None:
                folder = self.home / "index"
                before = set(folder.glob(".*")) if folder.is_dir() else set()
                try:
                    self._indexes.save()
                except OSError as exc:
                    log.warning("indexes not saved in %s (%s); they are rebuilt from the engram files "
                                "when needed", folder, exc)
                    import shutil

                    for p in set(folder.glob(".*")) - before if folder.is_dir() else ():
                        if p.is_dir():
                            shutil.rmtree(p, ignore_errors=True)
                        else:
                            p.unlink(missing_ok=True)

    def close(self) -> None:
        """Save indexes and close stats.db. Idempotent."""
        if self._closed:
            return
        self.catchup.stop()
        try:
            self.save()
        finally:
            self._closed = True
            if self._stats is not None:
                self._stats.close()
            self.store.close()
            _OPEN.discard(self)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _until(valid_until: Any, ttl: Any) -> datetime | None:
    """``valid_until`` from an explicit time or a time to live from now (at most one of the two)."""
    if ttl is None:
        return None if valid_until is None else parse_time(valid_until, "valid_until")
    if valid_until is not None:
        raise ValidationError("give either ttl or valid_until, not both")
    return utcnow() + (ttl if isinstance(ttl, timedelta) else parse_duration(ttl))


_OPEN: "weakref.WeakSet[Memory]" = weakref.WeakSet()


@atexit.register
def _save_open_memories() -> None:  # pragma: no cover - runs at interpreter exit
    for mem in list(_OPEN):
        try:
            mem.close()
        except Exception as exc:  # noqa: BLE001
            log.warning("could not save indexes of %s at exit: %s", mem.home, exc)
