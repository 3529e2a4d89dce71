"""The :class:`Memory` facade: the one public entry point; it holds the wiring and the names.

Every method is defined on a class (so the reference, the IDE and the type checker read its signature and
docstring) and delegates in one line to the module that does the work. Memory inherits the methods, grouped by
behaviour, from four mixins: :class:`~._api_writes.WriteMethods`, :class:`~._api_conversations.ConversationMethods`,
:class:`~._api_reads.ReadMethods` and :class:`~._api_indexes.IndexMethods`; doctor and close are defined here.
Each behaviour lives in a module of its own:

=====================  ===========================================================================
:mod:`.writes`         learn, learn_outcome, learn_many, update, supersede, feedback
:mod:`.ingest`         conversation ingest (one engram per new turn)
:mod:`.capture`        capture one turn; list and forget conversations
:mod:`.imports`        import engrams read from files
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
from . import doctor as _doctor, lifecycle as _lifecycle
from ._api_conversations import ConversationMethods
from ._api_indexes import IndexMethods
from ._api_reads import ReadMethods
from ._api_writes import WriteMethods

if TYPE_CHECKING:  # pragma: no cover
    from ..stats.db import StatsDB


class Memory(WriteMethods, ConversationMethods, ReadMethods, IndexMethods):
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
        self._folder_mtime: Any = None  # the store's change_token() when last caught up
        self._last_scan = 0.0
        self._scan_cost_s = 0.0
        self._last_use = time.monotonic()  # of any call that scans (refresh_ahead's own scans excepted)
        self._generation = 0                 # bumped on every store change; keys the filter cache
        self._allowed_cache: dict[tuple[Any, ...], set[str] | None] = {}
        self._pinned_cache: tuple[tuple[str, int], list[Engram]] | None = None
        self._newest_cache: tuple[int, list[Engram]] | None = None
        self._bounded_cache: tuple[int, dict[str, Engram]] | None = None   # engrams that can stop being current
        self._closed = False
        self._reranker: Any | None = None
        #: dense-leg catch-up (bounded in a recall, the rest in a background thread, or all now); see
        #: plur.index.catchup
        self.catchup = DenseCatchUp(self._lock, settings.recall_embed_batch, run_on_model=_run_on_model)
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

    # -- health and lifetime (plur.memory.doctor, .lifecycle) ------------------------------
    def doctor(self, *, load_model: bool = True) -> dict[str, Any]:
        """Store health and the model in use (``plur doctor``).

        Args:
            load_model: resolve the embedding model to report on it (``False``: only the one requested).

        Returns:
            ``{home, home_mode ("0700"), home_private (no group/other access to it or anything in it),
            too_open (["<path> <mode>"] of entries group or others can reach), engrams: {total, by_scope,
            by_type, by_status}, layout: {month, flat} (engram files in month folders and in engrams/ itself, an
            older plur's; None for PostgreSQL), quarantined: [...], lock: {...},
            model: {requested, name, identity, dims, source, reason, warnings, device}, settings: {name: value}
            (the store URI without its password),
            secrets_redacted: {kind: n} (secrets the screen cut out of what plur wrote: notes and the recall log,
            each counted once per write, docs/security.md#secrets), secrets_redacted_by_door: {door: n} (``capture``,
            ``import``, ``recall``...)}``.
        """
        return _doctor.doctor(self, load_model=load_model)

    def close(self) -> None:
        """Save indexes and close stats.db and the store. Idempotent."""
        _lifecycle.close(self)

    def keep_home_unwritten(self) -> None:
        """The home was deleted under a running service: :meth:`close` saves no index into it (issue 38)."""
        _lifecycle.keep_home_unwritten(self)

    def on_close(self, callback: Any) -> None:
        """Run ``callback()`` first thing in :meth:`close` (a RecallWorker registers its own close, so a
        busy worker finishes and records before stats.db closes).

        Args:
            callback: called with no arguments.
        """
        _lifecycle.on_close(self, callback)

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _run_on_model(fn: Any, *args: Any) -> Any:
    """A background catch-up batch, whole on the model thread (plur.index.catchup; imported on first use)."""
    from ..embed import model_thread

    return model_thread.run(fn, *args)
