"""Forgetting: erase an engram and every trace of its statement under the home (file, manifest,
saved indexes, embedding cache rows, quarantined copies, kept edits, stats.db rows).
README "What forget erases".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import logging

from ..errors import DatabaseUnavailableError, StoreError
from ..store.engram import Engram

log = logging.getLogger("plur")


def forget(mem: Any, engram_id: str) -> Engram:
    """Delete an engram and every trace of its statement: :meth:`plur.memory.Memory.forget`, which documents it."""
    return forget_many(mem, [engram_id])[0]


def forget_many(mem: Any, engram_ids: list[str]) -> list[Engram]:
    """:func:`forget` of several engrams at once, as one write: every file deleted under one hold of the
    memory's lock, then the manifest, the indexes (saved once) and stats.db (one transaction, one VACUUM)
    for all of them, so a conversation of thousands of turns (``plur forget --session``) costs one save,
    not one per engram. Returns what was removed, in order.

    Raises:
        NotFoundError, InvalidIdError: an id names no engram (nothing after it is erased; the ones before are).
        StoreError: the home cannot be written.
    """
    from ..index.purge import drop_saved, erase_dense, purge_saved

    removed: list[Engram] = []
    failed: Exception | None = None
    with mem._lock:
        for engram_id in dict.fromkeys(engram_ids):
            try:
                if getattr(mem.store, "remote", False):  # the feed tells every machine which vectors to erase
                    removed.append(mem.store.delete(engram_id,
                                                    erase_keys=vector_keys(mem, mem.store.get(engram_id))))
                else:
                    removed.append(mem.store.delete(engram_id))
            except Exception as exc:  # noqa: BLE001 - what was deleted before it is still erased everywhere
                failed = exc
                break
        if removed:
            _erase_traces(mem, removed, drop_saved, erase_dense, purge_saved)
    if removed:
        forget_stats(mem, [e.id for e in removed], [e.statement for e in removed])
        for e in removed:
            forget_quarantined(mem, e.id)
    if failed is not None:
        raise failed
    return removed


def _erase_traces(mem: Any, removed: list[Engram], drop_saved: Any, erase_dense: Any, purge_saved: Any) -> None:
    """The manifest, index and cached-vector part of :func:`forget_many` (the caller holds the lock)."""
    ids = [e.id for e in removed]
    mem.store.save_manifest()
    if mem._indexes is not None:
        mem._indexes.remove(ids)
        erase_dense(mem._indexes.dense)
        mem._indexes.dirty = True
        try:
            mem.save()
        except (OSError, StoreError) as exc:   # a full disk: the saved copies go instead (rebuilt later)
            drop_saved(mem.home / "index", f"could not save them without the forgotten engram ({exc})")
    else:
        purge_saved(mem.home / "index", ids)
    mem._note_own_write()
    for e in removed:
        try:
            forget_cached_vectors(mem, e)
        except DatabaseUnavailableError as exc:
            # The forget has committed (the database's vectors went in its transaction): never answer "nothing
            # was half-written, run it again" now. This machine's cached copies are erased from the file.
            log.warning("forgot %s; the database went away after it committed (%s); erasing this machine's "
                        "cached vectors from %s instead", e.id, type(exc).__name__, mem.cache_dir)
            path = mem.cache_dir / "embeddings.sqlite"
            if path.exists():
                from ..embed.cache import EmbeddingCache

                with EmbeddingCache(path) as local:
                    local.forget(vector_keys(mem, e))


def forget_stats(mem: Any, engram_ids: str | list[str], texts: list[str] | tuple[str, ...] = ()) -> None:
    """Erase these engrams' rows in stats.db (one transaction; ``texts``, their statements, also blank the
    recall queries that are one of them: :mod:`plur.stats.erase`); on a full disk stats.db was opened read-only,
    so after the deletions above freed space it is opened again and tried once more (issue 38: a full disk
    refused every forget, so plur could not free space).

    Raises:
        StoreError: stats.db still cannot be written; the engrams themselves are already gone (the message says so).
    """
    ids = [engram_ids] if isinstance(engram_ids, str) else list(engram_ids)
    try:
        mem.stats.forget_engrams(ids, texts)
        return
    except StoreError:
        pass
    with mem._lock:
        if mem._stats is not None:
            mem._stats.close()
            mem._stats = None
    try:
        mem.stats.forget_engrams(ids, texts)
    except StoreError as exc:
        named = ids[0] if len(ids) == 1 else f"{len(ids)} engrams"
        if not all([mem.stats.note_pending_forget(i) for i in ids]):
            raise StoreError(f"forgot {named} (files and index entries are erased), but {exc}") from None
        log.warning("forgot %s; stats.db cannot be written now (%s): its rows naming them are erased the next "
                    "time plur opens stats.db with free space (%s)", named, exc, mem.stats.pending_path.name)


def forget_cached_vectors(mem: Any, engram: Engram) -> None:
    """Delete the embedding cache rows of the engram's text and of each of its chunks."""
    if (mem.cache_dir / "embeddings.sqlite").exists() or getattr(mem.store, "remote", False):
        forget_keys(mem, vector_keys(mem, engram))


def vector_keys(mem: Any, engram: Engram) -> list[bytes]:
    """Cache keys (:func:`~plur.embed.cache.text_key`) of the engram's text and of every chunk embedded for it."""
    from ..embed.cache import text_key

    texts = {engram.statement}
    shared = getattr(mem.store, "remote", False)  # the database's vectors: every chunk any machine embedded
    if len(engram.statement) > 100 or mem._resolution is not None or shared:  # chunked? ask the tokenizer
        embedder = mem.model_resolution().embedder
        if embedder is not None:
            texts.update(embedder.chunk_texts([engram.statement])[0])
            if hasattr(embedder, "document_chunks"):  # the chunks its layout embedded (plur.index.chunking)
                from ..index.chunking import layout

                tokens, header = layout(engram, mem.settings)
                texts.update(embedder.document_chunks([engram.statement], [tokens], [header])[0])
    return [text_key(t) for t in sorted(texts)]


def forget_keys(mem: Any, keys: list[bytes]) -> None:
    """Delete these cache keys' vectors: through the open cache (both levels with PostgreSQL), else the file."""
    from ..embed.cache import EmbeddingCache

    if not keys:
        return
    embedder = mem._resolution.embedder if mem._resolution is not None else None
    cache = getattr(embedder, "cache", None)
    if cache is not None:
        cache.forget(keys)
        return
    path = mem.cache_dir / "embeddings.sqlite"
    if path.exists():
        with EmbeddingCache(path) as standalone:
            standalone.forget(keys)


def forget_quarantined(mem: Any, engram_id: str) -> None:
    """Quarantined copies of a forgotten engram, and edits of it kept after a conflict, hold its text: remove them."""
    for q in mem.store.quarantined():
        if q.get("moved") and Path(q["original"]).name == f"{engram_id}.yaml":
            for p in (Path(q["path"]), Path(q["path"] + ".reason")):
                p.unlink(missing_ok=True)
    # and so do the texts `plur edit` kept in <home>/edit after a refused save
    edit_dir = mem.home / "edit"
    if edit_dir.is_dir():
        for p in edit_dir.glob(f"*{engram_id}-*.yaml"):
            p.unlink(missing_ok=True)
