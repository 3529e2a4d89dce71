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
    """Delete an engram and every trace of its statement under the home; returns what was removed.

    Erased at once (not at the next save): the engram file; its entry in the store manifest;
    its terms and postings in the saved BM25 index and its rows in the saved dense index (in
    memory and on disk: rows zeroed, graph nodes scrubbed, :func:`plur.index.purge.erase_dense`); the embedding cache rows of its text and chunks; its
    quarantined copies; in stats.db its feedback, its injection links and every recall that
    returned it (the query and all that recall's hit rows), with SQLite's ``secure_delete``,
    the WAL truncated and the file VACUUMed. See README "What forget erases".

    Raises:
        NotFoundError, InvalidIdError: no such engram. StoreError: the home cannot be written.
    """
    from ..index.purge import drop_saved, erase_dense, purge_saved

    with mem._lock:
        if getattr(mem.store, "remote", False):  # the feed tells every machine which cached vectors to erase
            removed = mem.store.delete(engram_id, erase_keys=vector_keys(mem, mem.store.get(engram_id)))
        else:
            removed = mem.store.delete(engram_id)
        mem.store.save_manifest()
        if mem._indexes is not None:
            mem._indexes.remove([removed.id])
            erase_dense(mem._indexes.dense)
            mem._indexes.dirty = True
            try:
                mem.save()
            except (OSError, StoreError) as exc:   # a full disk: the saved copies go instead (rebuilt later)
                drop_saved(mem.home / "index", f"could not save them without the forgotten engram ({exc})")
        else:
            purge_saved(mem.home / "index", [removed.id])
        mem._note_own_write()
        try:
            forget_cached_vectors(mem, removed)
        except DatabaseUnavailableError as exc:
            # The forget has committed (the database's vectors went in its transaction): never answer "nothing
            # was half-written, run it again" now. This machine's cached copies are erased from the file.
            log.warning("forgot %s; the database went away after it committed (%s); erasing this machine's "
                        "cached vectors from %s instead", removed.id, type(exc).__name__, mem.cache_dir)
            path = mem.cache_dir / "embeddings.sqlite"
            if path.exists():
                from ..embed.cache import EmbeddingCache

                with EmbeddingCache(path) as local:
                    local.forget(vector_keys(mem, removed))
    forget_stats(mem, removed.id)
    forget_quarantined(mem, removed.id)
    return removed


def forget_stats(mem: Any, engram_id: str) -> None:
    """Erase ``engram_id``'s rows in stats.db; on a full disk stats.db was opened read-only, so after the
    deletions above freed space it is opened again and tried once more (issue 38: a full disk refused every
    forget, so plur could not free space).

    Raises:
        StoreError: stats.db still cannot be written; the engram itself is already gone (the message says so).
    """
    try:
        mem.stats.forget_engram(engram_id)
        return
    except StoreError:
        pass
    with mem._lock:
        if mem._stats is not None:
            mem._stats.close()
            mem._stats = None
    try:
        mem.stats.forget_engram(engram_id)
    except StoreError as exc:
        if not mem.stats.note_pending_forget(engram_id):
            raise StoreError(f"forgot {engram_id} (its file and index entries are erased), but {exc}") from None
        log.warning("forgot %s; stats.db cannot be written now (%s): its rows naming it are erased the next "
                    "time plur opens stats.db with free space (%s)", engram_id, exc, mem.stats.pending_path.name)


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
