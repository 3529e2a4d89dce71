"""The index methods of :class:`~plur.memory.Memory` (a mixin it inherits): the indexes, the models that fill
and rerank them, and seeing other writers' changes. Each is documented here and delegates in one line to
the module that does it (:mod:`.indexing`, :mod:`.models`, :mod:`.freshness`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import freshness as _freshness, indexing as _indexing, models as _models


class IndexMethods:
    """The indexes of a :class:`~plur.memory.Memory`: opened lazily, kept in step with the store (other
    processes' writes and hand edits included), rebuilt and saved; and the models they use."""

    # -- indexes (plur.memory.indexing) ---------------------------------------------------------
    def index_state(self) -> dict[str, Any]:
        """Where the dense leg's catch-up stands, for status pages and hosts that wait for a steady index.

        Returns:
            ``{"open": bool, "pending_dense": n engrams queued for embedding, "catching_up": bool}``:
            ``catching_up`` while a background thread embeds the queue (recalls meanwhile answer from
            the last consistent index; see :mod:`plur.index.catchup`).
        """
        return _indexing.index_state(self)

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
        return _indexing.catch_up(self, progress=progress, need_dense=need_dense)

    def embed_queued(self) -> int:
        """Embed what the last writes queued for the dense leg, bounded as a recall does it, so the next recall
        does not: a short queue (``recall_embed_batch``) now, a longer one on the background thread.

        For a writer that runs between turns (capture after a turn's block is published): the next turn's
        recall then finds nothing to embed first. A no-op while the indexes are not open or have no dense leg.

        Returns:
            Engrams still queued (0 when all were embedded now).
        """
        return _indexing.embed_queued(self)

    def reindex(self, *, progress: bool = True) -> dict[str, int]:
        """Rebuild both indexes from the store (embeddings come from the cache when present).

        The build saves itself every :data:`~plur.memory.indexing.REINDEX_CHECKPOINT_S` seconds (5 min) and
        when interrupted (Ctrl-C), and leaves ``index/reindexing.json`` until it is done: a reindex that finds
        that file resumes the saved partial build instead of starting over (engrams it already embedded are
        not chunked, hashed or looked up in the cache again).

        Args:
            progress: show progress bars on stderr.

        Returns:
            ``{"engrams": n indexed, "embedded": n sent to the dense leg}``.
        """
        return _indexing.reindex(self, progress=progress)

    def save(self) -> None:
        """Persist the indexes if they changed (also done by :meth:`close` and at exit).

        The indexes are a cache of the engram files: when they cannot be written (read-only home,
        full disk) a warning is logged, the temp folders of the failed save are removed, and the
        next process rebuilds what is missing.
        """
        _indexing.save(self)

    def _index(self, need_dense: bool = True) -> Any:
        """The :class:`~plur.index.indexes.IndexSet`, opened and synced on first use
        (:func:`plur.memory.indexing.open_index`)."""
        return _indexing.open_index(self, need_dense)

    # -- models (plur.memory.models) ------------------------------------------------------------
    @property
    def cache_dir(self) -> Path:
        """Folder of the embedding cache (setting ``cache_dir``, default ``<home>/cache``)."""
        return _models.cache_dir(self)

    @property
    def graph_cache_dir(self) -> Path:
        """Folder of exported query graphs (ONNX, under ``onnx/``): setting ``cache_dir`` when set, else
        ``$XDG_CACHE_HOME/plur`` (default ``~/.cache/plur``). A graph depends only on the model and the
        library versions, not on the memories, so every home of the user shares one export.
        """
        return _models.graph_cache_dir(self)

    def model_resolution(self) -> Any:
        """Resolve (once) which embedding model serves the dense leg; see
        :func:`plur.embed.resolve.resolve_embedder`.

        Returns:
            A :class:`plur.embed.resolve.Resolution` whose ``embedder`` is wrapped in the embedding cache,
            or has ``embedder=None`` (BM25 only) with ``source`` and ``reason`` saying why.
        """
        return _models.model_resolution(self)

    def prepare_serving(self) -> bool:
        """Get a long-lived process ready to answer fast: open the indexes, load the model and give it the
        faster query path of the setting ``query_runtime`` (ONNX Runtime or TorchScript, cached under
        :attr:`graph_cache_dir`; :meth:`SentenceTransformerEmbedder.prepare_fast_queries`).

        Returns:
            True when queries are embedded on a faster path than the eager model.
        """
        return _models.prepare_serving(self)

    def reranker(self) -> Any | None:
        """The second-stage :class:`~plur.embed.rerank.Reranker` (setting ``reranker``), loaded once; None when off."""
        return _models.reranker(self)

    # -- other writers (plur.memory.freshness) --------------------------------------------------
    def refresh_ahead(self, idle_after_s: float = 600.0) -> bool:
        """Run the periodic full scan of the engram folder now when 80% of its interval has passed.

        A long-lived process (``plur serve``) calls this from a background thread, so the scan that
        catches in-place hand edits (49 ms at 10k engrams) runs between requests instead of inside
        the first request after a pause. Stops scanning once nothing used this Memory for
        ``idle_after_s`` seconds (an idle service costs no CPU; the next call scans as usual).

        Args:
            idle_after_s: seconds without use after which it no longer scans.

        Returns:
            True when it scanned.
        """
        return _freshness.refresh_ahead(self, idle_after_s)

    def _scan(self, force: bool = False, use: bool = True) -> None:
        """Pick up files changed outside this Memory (:func:`plur.memory.freshness.scan`)."""
        _freshness.scan(self, force, use)

    def _scan_interval_s(self) -> float:
        """Seconds between full stat scans (:func:`plur.memory.freshness.scan_interval_s`)."""
        return _freshness.scan_interval_s(self)

    def _note_own_write(self) -> None:
        """Remember this Memory's own write (:func:`plur.memory.freshness.note_own_write`)."""
        _freshness.note_own_write(self)
