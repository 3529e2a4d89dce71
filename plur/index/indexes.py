"""Keeps the BM25 and dense indexes in step with the store, and persists them.

Layout under ``<home>/index/``::

    manifest.json   {"format": 1, "tokenizer": <identity>, "model": <identity or null>,
                     "lexical": {engram id: digest of its BM25 signature}, "lexical_digest": "blake2b-64",
                     "dense": {engram id: content_hash (+ chunk layout, plur.index.chunking.dense_key)}}
    lexical/        BM25Index.save() folder
    dense/          DenseIndex.save() folder

Every engram is indexed, retired ones too, so ``recall(include_expired=True)`` can find a superseded
engram; the facade filters engrams that are not current per recall. The BM25 document of an engram with
conversation provenance is the turn plus its neighbouring turns (:mod:`plur.index.context`, setting
``context_window``); the manifest's ``lexical`` entry is then a signature over the turn and its neighbours,
so a neighbour added, changed or removed re-indexes exactly the turns whose document contains it. The
manifest's ``content_hash`` maps tell, on open, which engrams were added, changed (also by hand) or removed
since the indexes were saved, so only those are re-indexed. A changed tokenizer or model identity discards
that leg and rebuilds it with a progress bar; vectors of two models are never mixed. Dense indexing is lazy:
new engrams are embedded on the next dense recall (texts already embedded come from the embedding cache).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..jsonio import loads
from ..config import Settings
from ..store.engram import Engram
from .chunking import dense_key, embed_engrams, layout_identity
from .heap import release_free_heap
from .signatures import DIGEST, SignatureTable
from .context import ConversationContext
from .dates import date_words
from .tokenize import TermCoder
from ..store.atomic import private_dirs

log = logging.getLogger("plur.index.indexes")
FORMAT = 1
#: Engrams whose BM25 documents are built and tokenized together in :meth:`IndexSet.add` (bounds its peak memory).
ADD_BATCH = 1000
#: Documents whose postings :meth:`~plur.index.lexical.BM25Index.add_coded` counts together.
POSTINGS_BATCH = 4 * ADD_BATCH


@lru_cache(maxsize=4096)
def _date_suffixes(words: str) -> tuple[str, str]:
    """``("\n" + words, "@" + words)``, one pair per day for every engram of that day."""
    return "\n" + words, "@" + words


def _identity(embedder: Any | None) -> str | None:
    """What the dense leg's vectors depend on: the embedder's ``index_identity`` (model + chunking) or ``identity``."""
    return getattr(embedder, "index_identity", None) or getattr(embedder, "identity", None)


def _threads(setting: int) -> int:
    """HNSW insert threads from the setting ``index_threads`` (0 = every core)."""
    return int(setting) if setting else max(1, os.cpu_count() or 1)


def _atomic_write_json(path: Path, data: Any) -> None:
    private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


class IndexSet:
    """The lexical and dense legs for one store.

    Args:
        folder: ``<home>/index``.
        settings: BM25 k1/b, tokenizer stemming, HNSW parameters.
        embedder: an :class:`plur.embed.embedder.Embedder` (usually cached), or ``None`` for BM25 only.
        defer_dense: open the lexical leg only and leave the saved dense leg untouched on disk until
            :meth:`attach_embedder` (a BM25-only recall then never loads a model, torch or usearch).
            :meth:`save` keeps the saved dense leg's manifest entries meanwhile.
        skip: engram -> True for an engram never indexed in either leg nor anyone's context (it then
            changes no other engram's score: the memory's captured questions, :func:`plur.memory.filters.asks`).
    """

    def __init__(self, folder: Path, settings: Settings, embedder: Any | None, *,
                 defer_dense: bool = False, skip: Any = None) -> None:
        from .lexical import BM25Index
        from .tokenize import Tokenizer

        self.folder = Path(folder)
        self.settings = settings
        self.embedder = embedder
        self.skip = skip
        self.tokenizer = Tokenizer(stemming=settings.stemming)
        self.context = ConversationContext(settings.context_window, settings.context_own_weight)
        self.model_identity: str | None = self._model_identity(embedder)
        manifest = self._read_manifest()
        #: id -> digest of its BM25 signature (:mod:`plur.index.signatures`)
        self.lexical_hashes = SignatureTable()
        self.dense_hashes: dict[str, str] = {}
        self.lexical = None
        if manifest and manifest.get("tokenizer") == self.tokenizer.identity:
            try:
                self.lexical = BM25Index.load(self.folder / "lexical", tokenizer=self.tokenizer,
                                              k1=settings.bm25_k1, b=settings.bm25_b)
            except Exception as exc:  # noqa: BLE001 - any unreadable index is rebuilt
                log.warning("lexical index unreadable (%s); rebuilding", exc)
            if self.lexical is not None:
                self.lexical_hashes = SignatureTable(manifest.get("lexical", {}).items(),
                                                     digested=manifest.get("lexical_digest") == DIGEST)
        elif manifest:
            log.warning("tokenizer changed (%s -> %s); rebuilding the BM25 index",
                        manifest.get("tokenizer"), self.tokenizer.identity)
        if self.lexical is None:
            self.lexical = BM25Index(k1=settings.bm25_k1, b=settings.bm25_b, tokenizer=self.tokenizer)
        self.dense = None
        self._pending_dense: dict[str, Engram] = {}
        #: True while the dense leg is deferred: its manifest entries stay on disk, read again by
        #: :meth:`attach_embedder` and :meth:`save` (issue 49: held parsed, they were ~40 MiB at 100k engrams).
        self._deferred = defer_dense and embedder is None
        if embedder is not None:
            self._open_dense(manifest)
        if manifest:
            del manifest
            release_free_heap()  # the parsed manifest's strings and dicts
        #: the lexical leg's build on another thread while the dense leg fills (:mod:`plur.index.rebuild`), or None
        self.lexical_build: Any = None
        self.dirty = False

    @property
    def dense_deferred(self) -> bool:
        """True while the dense leg was deferred (``defer_dense``) and no embedder is attached yet."""
        return self._deferred

    def _open_dense(self, manifest: Mapping[str, Any] | None) -> None:
        """Load the saved dense leg if it was built by this embedder's model, else start an empty one."""
        if manifest and manifest.get("model") == self.model_identity:
            try:
                from .dense import DenseIndex

                self.dense = DenseIndex.load(self.folder / "dense", dims=self.embedder.dims,
                                             quantisation=self.settings.hnsw_quantisation)
            except Exception as exc:  # noqa: BLE001
                log.warning("dense index unreadable (%s); rebuilding", exc)
            if self.dense is not None:
                self.dense_hashes = {sys.intern(k): v for k, v in manifest.get("dense", {}).items()}
                self.dense.num_threads = _threads(self.settings.index_threads)
                self.dense.scratch_dir = self.folder
                self.dense.identity = self.model_identity or ""  # the manifest vouched for it (older saves: "")
        elif manifest and manifest.get("model"):
            log.warning("embedding model or chunking changed (%s -> %s); rebuilding the dense index (texts this "
                        "model already embedded come from the cache; a new model or precision embeds them all)",
                        manifest.get("model"), self.model_identity)
        if self.dense is None:
            self.dense = self._new_dense()

    def attach_embedder(self, embedder: Any | None, engrams: Mapping[str, Engram]) -> None:
        """End a deferral: open the saved dense leg for ``embedder`` and queue what changed since.

        Args:
            embedder: the resolved embedder, or ``None`` (no model: the deferral just ends, BM25 only).
            engrams: id -> engram, all statuses (the store now), to find stale or missing vectors.
        """
        if not self._deferred:
            return
        self._deferred = False
        self.embedder = embedder
        self.model_identity = self._model_identity(embedder)
        if embedder is None:
            return
        manifest = self._read_manifest()  # the saved dense leg's entries (a save meanwhile copied them over)
        self._open_dense(manifest)
        del manifest
        engrams = self._kept(engrams)
        self._sync_dense(engrams, {eid: dense_key(e, self.settings) for eid, e in engrams.items()})
        release_free_heap()  # the manifest read again, and its dense values the engrams' own strings replaced

    def _model_identity(self, embedder: Any | None) -> str | None:
        """The embedder's identity plus the chunk layout rule (:func:`~plur.index.chunking.layout_identity`)."""
        ident = _identity(embedder)
        return None if ident is None else ident + layout_identity(self.settings)

    def _sync_dense(self, engrams: Mapping[str, Engram], want: Mapping[str, str]) -> None:
        """Drop vectors of engrams gone from ``want`` (id -> :func:`~plur.index.chunking.dense_key`); queue the changed ones."""
        stale = [eid for eid in self.dense_hashes if eid not in want]
        if stale:
            self.dense.remove(stale)
            for eid in stale:
                self.dense_hashes.pop(eid, None)
            self.dirty = True
        for eid, h in want.items():
            if (have := self.dense_hashes.get(eid)) != h:
                self._pending_dense[eid] = engrams[eid]
            elif have is not h:  # the engram's own content_hash string, not the manifest's copy (issue 49)
                self.dense_hashes[eid] = h

    def _new_dense(self) -> Any:
        from .dense import DenseIndex

        s = self.settings
        dense = DenseIndex(self.embedder.dims, m=s.hnsw_m, ef_construction=s.hnsw_ef_construction,
                           ef_search=s.hnsw_ef_search, exact_threshold=s.exact_threshold,
                           num_threads=_threads(s.index_threads), quantisation=s.hnsw_quantisation)
        dense.scratch_dir = self.folder  # float32 rows of a graph-backed index: a scratch file here, not the heap
        dense.identity = self.model_identity or ""  # saved in its meta.json: which vectors these are
        return dense

    def _read_manifest(self) -> dict[str, Any] | None:
        path = self.folder / "manifest.json"
        try:
            data = loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("index manifest %s unreadable (%s); rebuilding", path, exc)
            return None
        return data if isinstance(data, dict) and data.get("format") == FORMAT else None

    # -- keeping in step ------------------------------------------------------------------
    def sync(self, engrams: Mapping[str, Engram], *, progress: bool = False, dense: bool = True) -> int:
        """Bring both legs in line with ``engrams`` (id -> engram, all statuses, all indexed).

        Args:
            dense: also drop and queue the dense leg's vectors; ``False`` touches the lexical leg only (a rebuild
                fills the dense leg on another thread meanwhile, :mod:`plur.index.rebuild`).

        Returns:
            Number of engrams (re)indexed or removed in the lexical leg.
        """
        engrams = self._kept(engrams)
        self.context.rebuild(engrams.values(), own=self._suffixes)
        want_lex = {eid: self._signature(e) for eid, e in engrams.items()}
        stale = [eid for eid in self.lexical_hashes if eid not in engrams]
        changed = self.lexical_hashes.changed(want_lex)
        if stale:
            self.remove(stale, dense=dense)
        if changed:  # oldest first, as the store lists them (the BM25 document order is then reproducible)
            self.add(sorted((engrams[eid] for eid in changed), key=lambda e: (e.created, e.id)), progress=progress,
                     signatures=want_lex, dense=dense)
        done = len(stale) + len(changed)
        del want_lex, changed
        if self.dense is not None and dense:
            self._sync_dense(engrams, {eid: dense_key(e, self.settings) for eid, e in engrams.items()})
        return done

    def _kept(self, engrams: Mapping[str, Engram]) -> Mapping[str, Engram]:
        """``engrams`` without those :attr:`skip` leaves out."""
        return engrams if self.skip is None else {i: e for i, e in engrams.items() if not self.skip(e)}

    # -- the BM25 document of an engram -----------------------------------------------------
    def _suffixes(self, e: Engram) -> tuple[str, str]:
        """``(own_suffix, key_suffix)``: what follows the statement in the engram's own BM25 text and the content
        hash in what that text depends on: ``"\n"`` / ``"@"`` + its date words when ``index_dates``, else nothing.
        The strings are shared by every engram of a day, so the context keeps no text of its own per engram."""
        return _date_suffixes(date_words(e.created)) if self.settings.index_dates else ("", "")

    def _own(self, e: Engram) -> tuple[str, str]:
        """``(own text, own key)``: the statement (+ its date words when ``index_dates``) and what it depends on."""
        own_suffix, key_suffix = self._suffixes(e)
        return e.statement + own_suffix, self._own_key(e)

    def _own_key(self, e: Engram) -> str:
        """What an engram's own BM25 text depends on, without building the text (a sync computes it for every
        engram): the content hash, plus its date words when ``index_dates``."""
        return e.content_hash + self._suffixes(e)[1]

    def _signature(self, e: Engram) -> str:
        return self.context.signature(e.id) if e.id in self.context else self._own_key(e)

    def _document(self, e: Engram) -> str:
        return self.context.document(e.id) if e.id in self.context else self._own(e)[0]

    def _batch_codes(self, batch: Sequence[Engram], coder: TermCoder) -> list[np.ndarray]:
        """Each engram's BM25 document as term codes (``[terms] int32``, indices into ``coder.vocab``): each distinct
        piece (a turn's statement, a day's date words) tokenized once per batch, as a turn is in
        ``1 + 2 * context_window`` documents (issue 30), and each distinct word stemmed once (issue 49)."""
        ctx, empty = self.context, np.zeros(0, dtype=np.int32)
        coder.forget()
        return [np.concatenate([coder(p) for p in parts if p]) if any(parts) else empty
                for parts in (ctx.document_parts(e.id) if e.id in ctx else [e.statement, self._suffixes(e)[0]]
                              for e in batch)]

    def _reindex_neighbours(self, ids: Iterable[str]) -> list[str]:
        """Re-index the BM25 documents of already indexed neighbours whose context changed."""
        todo = sorted(i for i in ids if i in self.context and i in self.lexical_hashes)
        if todo:
            self.lexical.add(todo, [self.context.document(i) for i in todo])
            for i in todo:
                self.lexical_hashes.put(i, self.context.signature(i))
            self.dirty = True
        return todo

    def add(self, engrams: Iterable[Engram], *, progress: bool = False,
            signatures: Mapping[str, str] | None = None, dense: bool = True) -> list[str]:
        """Index (or re-index) engrams (any status: validity is filtered at recall time).

        Neighbouring turns whose BM25 document includes an added or changed turn are
        re-indexed too (lexical leg only; their vectors do not change). Documents are built and
        tokenized :data:`ADD_BATCH` at a time, so a bulk add of 100k engrams never holds all their
        texts or token lists at once (issue 30).

        Args:
            engrams: the engrams.
            progress: show a tqdm bar (when more than 1,000).
            signatures: id -> :meth:`_signature` already computed with the context as it will be after
                this add (``sync`` passes its own, so the manifest shares those strings); missing ids are computed.
            dense: queue the engrams for the dense leg (``False``: the lexical leg only, see :meth:`sync`).

        Returns:
            Ids (re)indexed in the lexical leg: the given engrams, then the neighbours.
        """
        active = list(engrams)
        touched: list[str] = []
        if self.skip is not None and any(self.skip(e) for e in active):  # never indexed; gone if it was
            touched = self.remove([e.id for e in active if self.skip(e)], dense=dense)
            active = [e for e in active if not self.skip(e)]
        if not active:
            return touched
        affected: set[str] = set()
        for e in active:
            affected |= self.context.put(e, *self._suffixes(e))
        starts: Iterable[int] = range(0, len(active), ADD_BATCH)
        if progress and len(active) > 1000:
            from tqdm import tqdm

            starts = tqdm(starts, desc="BM25 index", unit="batch")
        coder = TermCoder(self.tokenizer)
        ids: list[str] = []
        docs: list[np.ndarray] = []
        for start in starts:  # the postings of POSTINGS_BATCH documents counted at once (fewer, longer term runs)
            batch = active[start:start + ADD_BATCH]
            ids += [e.id for e in batch]
            docs += self._batch_codes(batch, coder)
            if len(ids) >= POSTINGS_BATCH or start + ADD_BATCH >= len(active):
                self.lexical.add_coded(ids, docs, coder.vocab)
                ids, docs = [], []
        sigs = signatures or {}
        for e in active:
            sig = sigs.get(e.id)
            self.lexical_hashes.put(e.id, sig if sig is not None else self._signature(e))
            if dense and self.dense is not None and self.dense_hashes.get(e.id) != dense_key(e, self.settings):
                self._pending_dense[e.id] = e
        self.dirty = True
        mine = {e.id for e in active}
        done = [e.id for e in active] + touched + self._reindex_neighbours(affected - mine)
        if len(active) >= ADD_BATCH:
            release_free_heap()  # the batches' documents and token lists (issue 30)
        return done

    def remove(self, ids: Iterable[str], *, dense: bool = True) -> list[str]:
        """Drop ids from both legs (unknown ids are ignored; ``dense=False``: from the lexical leg only).

        Returns:
            The neighbouring turns re-indexed because their BM25 document lost a removed turn.
        """
        ids = [i for i in ids]
        affected: set[str] = set()
        for i in ids:
            affected |= self.context.drop(i)
        lex = [i for i in ids if i in self.lexical_hashes]
        if lex:
            self.lexical.remove(lex)
        for i in lex:
            self.lexical_hashes.pop(i, None)
        if self.dense is not None and dense:
            den = [i for i in ids if i in self.dense_hashes]
            if den:
                self.dense.remove(den)
            for i in ids:
                self.dense_hashes.pop(i, None)
                self._pending_dense.pop(i, None)
        self.dirty = True
        return self._reindex_neighbours(affected - set(ids))

    @property
    def pending_dense(self) -> int:
        """Engrams waiting to be embedded into the dense leg (done at the next dense recall)."""
        return len(self._pending_dense)

    def flush_dense(self, *, progress: bool | None = None, checkpoint_s: float | None = None) -> int:
        """Embed pending engrams into the dense leg (best chunk per engram); returns how many.

        Args:
            progress: show a tqdm bar (default: when more than 2,000 are pending).
            checkpoint_s: save both legs and the manifest after every batch that ends this many seconds
                after the last save (``None``: never mid-way). An interrupt (Ctrl-C) saves what is done
                either way, so the next open or ``plur reindex`` embeds only the rest (no engram that a
                saved index holds is chunked, hashed or looked up again).
        """
        if self.dense is None or not self._pending_dense:
            return 0
        from .dense_fill import flush_dense

        return flush_dense(self, embed_engrams, progress=progress, checkpoint_s=checkpoint_s)

    # -- persistence ----------------------------------------------------------------------
    def save(self) -> None:
        """Write both legs and the manifest (atomically per file; manifest last); a lexical leg being built on another
        thread (:attr:`lexical_build`) is waited for first."""
        if self.lexical_build is not None:
            self.lexical_build.result()
        if not self.dirty:
            return
        private_dirs(self.folder)
        for name, index in (("lexical", self.lexical), ("dense", self.dense)):
            if index is None:
                continue
            tmp = Path(tempfile.mkdtemp(dir=self.folder, prefix=f".tmp-{name}-"))
            index.save(tmp)
            final = self.folder / name
            old = self.folder / f".old-{name}"
            if final.exists():
                shutil.rmtree(old, ignore_errors=True)
                os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        # Dense entries still pending are not in the saved dense index: leave them out of the
        # manifest so the next open re-embeds them (from the cache).
        if self._deferred:  # the dense leg on disk was not opened: keep its entries, as saved
            saved = self._read_manifest() or {}
            model, dense = saved.get("model"), saved.get("dense", {})
            del saved
        else:
            model = self.model_identity if self.dense is not None else None
            dense = self.dense_hashes
        _atomic_write_json(self.folder / "manifest.json", {
            "format": FORMAT, "tokenizer": self.tokenizer.identity, "model": model,
            "lexical": self.lexical_hashes.to_json(), "lexical_digest": DIGEST, "dense": dense})
        del dense
        if not self._pending_dense and not self._deferred:
            (self.folder / "reindexing.json").unlink(missing_ok=True)  # a resumed reindex is complete now
        self.dirty = False
        release_free_heap()  # the save's transients: ids, vocab, manifest text (issue 30)
