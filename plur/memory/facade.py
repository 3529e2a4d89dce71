"""The :class:`Memory` facade: the one public entry point; it holds the wiring and the names.

Each behaviour lives in a module of its own (this class binds their functions as its methods):

=====================  ===========================================================================
:mod:`.writes`         learn, learn_outcome, learn_many, update, supersede, feedback
:mod:`.ingest`         conversation ingest (one engram per new turn)
:mod:`.forget`         forget: erase an engram and every trace of its text
:mod:`.reads`          get, list, pinned
:mod:`.recall`         the recall pipeline: checks, :mod:`.legs`, fusion, second stage, stats record
:mod:`.filters`        scope/type/tag and validity filters, cached per store change
:mod:`.freshness`      picking up other writers' changes (journal, periodic full scan)
:mod:`.indexing`       opening, catching up, rebuilding and saving the indexes
:mod:`.models`         the embedding model, its fast query path, the reranker, their cache folders
:mod:`.doctor`         the health report
:mod:`.lifecycle`      close, and closing every open Memory at interpreter exit
=====================  ===========================================================================
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

from ..config import Settings, load_settings
from ..index.catchup import DenseCatchUp
from ..store.engram import Engram
from ..store.open import open_store
from . import capture as _capture, doctor as _doctor, filters as _filters, forget as _forget, freshness as _freshness
from . import imports as _imports, indexing as _indexing, ingest as _ingest, legs as _two_legs, lifecycle as _lifecycle
from . import models as _models, reads as _reads, recall as _recall, writes as _writes

if TYPE_CHECKING:  # pragma: no cover
    from ..stats.db import StatsDB


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
        self.store = open_store(settings)  # the engram folder, or PostgreSQL (setting store)
        self._explicit_embedder = embedder
        self._resolution: Any | None = None
        self._indexes: Any | None = None
        self._stats: StatsDB | None = None
        self._lock = threading.RLock()
        self._resolve_lock = threading.Lock()  # model_resolution: the model loads outside _lock
        self._folder_mtime: int | None = None
        self._last_scan = 0.0
        self._scan_cost_s = 0.0
        self._last_use = time.monotonic()  # of any call that scans (refresh_ahead's own scans excepted)
        self._generation = 0                 # bumped on every store change; keys the filter cache
        self._allowed_cache: dict[tuple[Any, ...], set[str] | None] = {}
        self._pinned_cache: tuple[tuple[str, int], list[Engram]] | None = None
        self._newest_cache: tuple[int, list[Engram]] | None = None
        self._bounded_cache: tuple[int, dict[str, Engram]] | None = None   # engrams that can stop being current
        self._asks_cache: tuple[int, frozenset[str]] | None = None    # captured questions (never hits)
        self._closed = False
        self._reranker: Any | None = None
        #: dense-leg catch-up (bounded in a recall, the rest in a background thread, or all now); see
        #: plur.index.catchup
        self.catchup = DenseCatchUp(self._lock, settings.recall_embed_batch)
        _lifecycle.register(self)

    @property
    def stats(self) -> StatsDB:
        """The recall/injection event log (``<home>/stats.db``), opened on first use."""
        if self._stats is None:
            from ..stats.db import StatsDB  # sqlite3: not for commands that never record

            with self._lock:
                if self._stats is None:
                    self._stats = StatsDB(self.home / "stats.db")
        return self._stats

    @property
    def generation(self) -> int:
        """A counter bumped by every change of the store seen so far (this process's writes, and other
        processes' once a read has looked); caches derived from the engrams key on it."""
        return self._generation

    def _by_id(self) -> dict[str, Engram]:
        return self.store.by_id()

    # -- models (plur.memory.models) -------------------------------------------------------
    cache_dir = property(_models.cache_dir)
    graph_cache_dir = property(_models.graph_cache_dir)
    model_resolution = _models.model_resolution
    prepare_serving = _models.prepare_serving
    reranker = _models.reranker

    # -- seeing other writers (plur.memory.freshness) --------------------------------------
    refresh_ahead = _freshness.refresh_ahead
    _scan = _freshness.scan
    _scan_interval_s = _freshness.scan_interval_s
    _note_own_write = _freshness.note_own_write
    _get_or_none = _freshness.get_or_none

    # -- writes (plur.memory.writes, .ingest, .forget) --------------------------------------
    learn = _writes.learn
    learn_outcome = _writes.learn_outcome
    learn_many = _writes.learn_many
    update = _writes.update
    supersede = _writes.supersede
    feedback = _writes.feedback
    ingest = _ingest.ingest
    import_engrams = _imports.import_engrams
    forget = _forget.forget
    capture = _capture.capture
    sessions = _capture.sessions
    forget_session = _capture.forget_session

    # -- reads (plur.memory.reads) ---------------------------------------------------------
    get = _reads.get
    list = _reads.list_
    pinned = _reads.pinned

    # -- recall (plur.memory.recall, .legs, .filters) --------------------------------------
    recall = _recall.recall
    recall_legs = _recall.recall_legs
    relevance_floor = _recall.relevance_floor
    _legs = _two_legs.legs
    _not_current = _filters.not_current
    _blocked = _filters.blocked
    _allowed = _filters.allowed

    # -- indexes (plur.memory.indexing) ----------------------------------------------------
    _index = _indexing.open_index
    index_state = _indexing.index_state
    catch_up = _indexing.catch_up
    embed_queued = _indexing.embed_queued
    reindex = _indexing.reindex
    save = _indexing.save

    # -- health and lifetime (plur.memory.doctor, .lifecycle) ------------------------------
    doctor = _doctor.doctor
    close = _lifecycle.close
    keep_home_unwritten = _lifecycle.keep_home_unwritten
    on_close = _lifecycle.on_close

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
