"""Off-turn recall: a background worker that keeps one memory block per agent ready to read.

A host calls :meth:`RecallWorker.submit` when a message arrives (it returns at once) and
reads the agent's block through :class:`plur.prompt.section.MemorySection` whenever it assembles a
prompt. Recall, rendering and stats writes all happen on the worker's thread(s). A block reflects
the previous submission until the recall for the newest one lands, so a host that wants the
block for the message it answers waits for it, bounded: :meth:`RecallWorker.wait_for` (what
:mod:`plur.hosts` does on a turn's first request, setting ``turn_wait_s``), or
:meth:`RecallWorker.warm`.

Concurrency model:

* ``submit`` stores the newest request per agent (a generation counter) and wakes a thread;
  requests that were not started yet are replaced, never queued, so a burst costs one recall.
* Results publish only if newer than the agent's published block (a stale result is dropped)
  and only if the agent's scope has not changed since the request.
* The cache is a ``dict`` that is never mutated after it is published: the worker builds a new
  dict and swaps the reference under its lock, and readers do a single ``dict.get`` with no lock.
* An entry is replaced only when the rendered text changes (hash-gated), so an unchanged block
  keeps the host's prompt prefix byte-identical.
* Capture (the setting ``capture``, :mod:`plur.prompt.capture`): each submitted message is learned on the
  capture thread after the recall that answers it (never recalled into its own block), so no recall waits
  behind a capture; captures are not coalesced like recalls, and :meth:`RecallWorker.close` learns those waiting.
* Injection events are counted on **first read**: the first :meth:`RecallWorker.read` of each new
  entry puts a notice on the worker's queue (``SimpleQueue.put``, no lock held by the worker), and
  the worker thread writes one ``injections`` row. So stats.db counts blocks that actually reached
  a prompt, once per distinct block, and ``read`` never touches disk.

At interpreter exit every live worker is closed before daemon threads or :mod:`atexit` handlers
can trip over each other (:mod:`plur.prompt.exit`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from datetime import datetime, timezone
from typing import Any

from ..store.engram import SCOPE_RE, Engram
from ..errors import PlurError, ValidationError
from ..screen.text import redact
from . import capture as capture_mod
from .block import Block
from .injected import record_injected
from .selection import recall_block
from .capture import Capture, CaptureThread, own_scope
from .worker_state import _AgentState, _Entry, _Request
from .exit import shutting_down, track, untrack

log = logging.getLogger("plur.prompt.worker")
#: Seconds :meth:`RecallWorker.close` waits by default for the recall in flight (a cold one loads the model).
CLOSE_WAIT_S = 120.0
#: Seconds a recall waits for the warm-up before it answers by keyword (BM25) instead.
KEYWORD_AFTER_S = 1.0


_STOP = object()


class RecallWorker:
    """Background recall into a per-agent block cache; one worker serves many agents.

    Args:
        memory: a :class:`plur.memory.Memory` (must be safe to call from other threads; it is).
        k: engrams recalled per submission (default ``memory.settings.recall_k``).
        budget_tokens: token budget of each block (default ``memory.settings.budget_tokens``).
        timeout_s: deadline of one recall in seconds (default ``memory.settings.recall_timeout_s``;
            ``<= 0`` disables it). It bounds how long :meth:`warm` waits, not usefulness: a recall
            that takes longer (a cold first one) is counted in ``timeouts`` and still published, unless
            a newer submission superseded it, so the first block lands on the second turn even in a
            cold process. Python cannot interrupt a thread, so a slow recall occupies its thread until
            it returns; use ``threads > 1`` if agents must not queue behind it.
        threads: number of worker threads (>= 1).
        capture: also learn each submitted message (:meth:`plur.memory.Memory.capture`); default: the
            setting ``capture`` (``user`` and ``all`` capture, ``off`` not); see :mod:`plur.prompt.capture`.

    On start, a warm-up thread runs one unrecorded recall to open the memory's indexes and load its
    embedding model. A submission waits for it at most :data:`KEYWORD_AFTER_S`, then is recalled by
    keyword (BM25, counted in ``keyword``), so even a cold process has a block for the second turn.

    Raises:
        ValidationError: ``threads < 1`` or a negative ``k`` / ``budget_tokens``.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, memory: Any, *, k: int | None = None, budget_tokens: int | None = None,
                 timeout_s: float | None = None, threads: int = 1, capture: bool | None = None) -> None:
        s = memory.settings
        self.capture = getattr(s, "capture", "off") != "off" if capture is None else bool(capture)
        self.session = f"worker-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S.%fZ')}"
        self.memory = memory
        self.k = int(s.recall_k if k is None else k)
        self.budget_tokens = int(s.budget_tokens if budget_tokens is None else budget_tokens)
        self.timeout_s = float(s.recall_timeout_s if timeout_s is None else timeout_s)
        if threads < 1:
            raise ValidationError(f"threads={threads!r} must be at least 1")
        if self.k < 0 or self.budget_tokens < 0:
            raise ValidationError(f"k={self.k} and budget_tokens={self.budget_tokens} must not be negative")
        self._cache: dict[str, _Entry] = {}          # published, never mutated: swapped whole
        self._agents: dict[str, _AgentState] = {}
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False
        self._ready = threading.Event()              # set when the warm-up recall has finished
        self._counters = {"submitted": 0, "recalls": 0, "published": 0, "unchanged": 0,
                          "dropped_stale": 0, "timeouts": 0, "errors": 0, "injections": 0,
                          "captured": 0, "capture_errors": 0, "keyword": 0}
        self._capturer = CaptureThread(self._learn)   # stores and embeds captured messages, off the recall threads
        track(self)
        getattr(memory, "on_close", lambda _: None)(self.close)  # Memory.close() closes this worker first
        # the warm-up (index open, model load) runs beside the recall threads, which use BM25 until it is done
        self._warmer = threading.Thread(target=self._warm_up, name="plur-recall-warmup", daemon=True)
        self._threads = [threading.Thread(target=self._run, name=f"plur-recall-{i}",
                                          daemon=True) for i in range(threads)]
        self._warmer.start()
        for t in self._threads:
            t.start()

    # -- host side --------------------------------------------------------------------------
    def submit(self, agent_id: str, text: str, scope: str | None = None, *, capture: bool | None = None,
               session: str | None = None, awaited: bool = False) -> int:
        """Ask for a fresh block for ``agent_id`` built from ``text``; returns at once.

        Args:
            agent_id: the agent's id (non-empty).
            text: what to recall for (usually the newest user message).
            scope: the agent's scope, bound to this request: ``None`` recalls every scope,
                ``'project:a'`` recalls ``project:a`` and ``global`` only. If it differs from the
                agent's previous scope, the agent's cached block is withdrawn at once.
            capture: learn ``text`` after its recall (default: the worker's ``capture``).
            session: the conversation id in the capture's provenance (default ``worker-<start time>``,
                one per worker); turns are numbered 0.. per (agent, session) in submission order.
            awaited: the caller will :meth:`wait_for` this request: while the model still loads it is
                recalled by keyword (BM25) at once instead of after :data:`KEYWORD_AFTER_S`.

        Returns:
            The request's generation (1, 2, ... per agent).

        Raises:
            ValidationError: empty agent id, non-text or blank ``text``, malformed scope.
            PlurError: the worker is closed.
        """
        if not isinstance(agent_id, str) or not agent_id:
            raise ValidationError(f"agent_id must be a non-empty string, got {agent_id!r}")
        if not isinstance(text, str) or not text.strip():
            got = "blank text" if isinstance(text, str) else type(text).__name__   # never the value: it may be logged
            raise ValidationError(f"text to recall for must be non-blank text, got {got}")
        if scope is not None and (not isinstance(scope, str) or not SCOPE_RE.match(scope)):
            raise ValidationError(f"invalid scope {scope!r}: use 'global', 'project:<name>' or 'agent:<name>'")
        with self._lock:
            if self._closed:
                raise PlurError("this RecallWorker is closed; create a new one to submit recalls")
            st = self._agents.get(agent_id)
            if st is None:
                st = self._agents[agent_id] = _AgentState()
            st.gen += 1
            if scope != st.scope:
                st.scope = scope
                entry = self._cache.get(agent_id)
                if entry is not None and entry.scope != scope:
                    self._publish(agent_id, None)
            wake = st.pending is None
            st.pending = _Request(st.gen, text, scope, awaited)
            if self.capture if capture is None else capture:
                sid = session or self.session
                turn = st.turns.get(sid, 0)
                st.turns[sid] = turn + 1
                st.captures.append(Capture(st.gen, text, scope or own_scope(agent_id), sid, turn,
                                            datetime.now(timezone.utc)))
            self._counters["submitted"] += 1
            gen = st.gen
        if wake:
            self._inbox.put(("recall", agent_id))
        return gen

    def read(self, agent_id: str) -> str:
        """The agent's cached block ('' if none). Lock-free, no I/O; what :class:`MemorySection` calls.

        The first read of each new block queues one injection event for the worker to record.
        """
        block = self.read_block(agent_id)
        return "" if block is None else block.text

    def read_block(self, agent_id: str) -> Block | None:
        """Like :meth:`read` (counts the first read as an injection) but returns the whole block, or ``None``."""
        entry = self._cache.get(agent_id)
        if entry is None:
            return None
        if not entry.read:
            entry.read = True
            if not self._closed:
                self._inbox.put(("read", agent_id, entry))
        return entry.block

    def peek(self, agent_id: str) -> Block | None:
        """The agent's cached :class:`~plur.prompt.block.Block` without counting a read (debugging, tests)."""
        entry = self._cache.get(agent_id)
        return None if entry is None else entry.block

    def warm(self, agent_id: str, text: str, scope: str | None = None, timeout_s: float | None = None) -> str:
        """Submit and wait (once, e.g. at session start) until that recall has finished.

        Args:
            agent_id: as for :meth:`submit`.
            text: as for :meth:`submit`.
            scope: as for :meth:`submit`.
            timeout_s: longest wait in seconds. Default: the worker's warm-up (opening the indexes,
                loading the model) however long it takes, then the recall deadline.

        Returns:
            The agent's block after the wait: the new one, or the previous one ('' if none) if the
            recall failed or the wait timed out. Not counted as an injection (no prompt was assembled).
        """
        warmed = self._ready.is_set()
        # cold: the first recall may be keyword-only, so it is submitted again once the model is ready; the
        # capture rides on that last submission, learned after its recall (never recalled into its own block,
        # never captured twice)
        gen = self.submit(agent_id, text, scope, capture=None if warmed else False)
        t0 = time.monotonic()
        self._ready.wait(timeout_s)  # a cold start (index open, model load) is waited for in full
        if not warmed:  # a hybrid recall once warm (after a timeout: the capture at least, recalled by keyword)
            gen = self.submit(agent_id, text, scope)
        limit: float | None = (max(0.0, timeout_s - (time.monotonic() - t0)) if timeout_s is not None
                               else self.timeout_s if self.timeout_s > 0 else None)
        with self._cond:
            self._cond.wait_for(
                lambda: self._closed or (st := self._agents.get(agent_id)) is None or st.finished_gen >= gen,
                timeout=limit)
        block = self.peek(agent_id)
        return "" if block is None else block.text

    def wait_for(self, agent_id: str, gen: int, timeout_s: float) -> bool:
        """Block until the recall of ``agent_id``'s submission ``gen`` (or a newer one) has finished, at most
        ``timeout_s`` seconds: what an in-process host does before the first model request of a turn.

        Returns:
            ``True`` when it finished (its block, or the previous one if it failed, is what :meth:`read`
            gives now); ``False`` on timeout, a closed worker or a dropped agent.
        """
        with self._cond:
            done = self._cond.wait_for(
                lambda: self._closed or (st := self._agents.get(agent_id)) is None or st.finished_gen >= gen,
                timeout=max(0.0, timeout_s))
            st = self._agents.get(agent_id)
            return bool(done) and not self._closed and st is not None and st.finished_gen >= gen

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Block until everything queued before this call is processed (recalls, injection notices, captures).

        Returns:
            ``True`` when idle, ``False`` if ``timeout_s`` passed first or the worker is closed.
        """
        if self._closed:
            return False
        barrier = threading.Barrier(len(self._threads) + 1)
        for _ in self._threads:
            self._inbox.put(("barrier", barrier))
        t0 = time.monotonic()
        try:
            barrier.wait(timeout_s)
        except threading.BrokenBarrierError:
            return False
        return self._capturer.wait_idle(None if timeout_s is None else max(0.0, timeout_s - (time.monotonic() - t0)))

    def drop(self, agent_id: str) -> None:
        """Forget an agent (its block, generation and pending request), e.g. when its session ends."""
        with self._lock:
            st = self._agents.pop(agent_id, None)
            if agent_id in self._cache:
                self._publish(agent_id, None)
            self._cond.notify_all()
        self._capturer.put(agent_id, st.captures if st else [], False)  # submitted before the drop: still learned

    def stats(self) -> dict[str, int]:
        """Counters: submitted, recalls, published, unchanged (hash gate), dropped_stale, timeouts,
        errors, injections, captured, capture_errors, keyword (recalled by BM25 while the model warmed up);
        plus agents (known) and cached (agents with a block)."""
        with self._lock:
            return dict(self._counters, agents=len(self._agents), cached=len(self._cache))

    def close(self, timeout_s: float | None = None) -> None:
        """Stop the threads: pending recalls are skipped, queued injection notices are still written.

        Idempotent. Blocks are still readable after close; :meth:`submit` raises.

        Args:
            timeout_s: longest wait for each thread, seconds (default :data:`CLOSE_WAIT_S`: the recall
                in flight, even a cold one loading the model, finishes and is recorded).
        """
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        untrack(self)
        for _ in self._threads:
            self._inbox.put(_STOP)
        # the recall in flight finishes and records its stats (nothing promised is lost); pending ones are skipped
        wait = timeout_s if timeout_s is not None else max(CLOSE_WAIT_S, self.timeout_s + 1.0)
        for t in [*self._threads, self._warmer]:
            t.join(wait)
            if t.is_alive():
                log.log(logging.DEBUG if shutting_down() else logging.WARNING,
                        "recall thread %s still busy after %.1f s; left running as a daemon", t.name, wait)
        for agent_id in list(self._agents):  # captures waiting (their recall skipped) are learned too
            self._capturer.put(agent_id, self._take_captures(agent_id, None), False)
        self._capturer.close(wait)

    def __enter__(self) -> "RecallWorker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- worker side ------------------------------------------------------------------------
    def _publish(self, agent_id: str, entry: _Entry | None) -> None:
        """Swap in a new cache dict (caller holds the lock)."""
        new = dict(self._cache)
        if entry is None:
            new.pop(agent_id, None)
        else:
            new[agent_id] = entry
        self._cache = new

    def _warm_up(self) -> None:
        """Open the indexes and load the model with one unrecorded recall: a cold start is not charged to a turn."""
        t0 = time.monotonic()
        try:
            from ..memory.models import warm_model  # the model (and a deferred ONNX bundle) loads outside the lock
            warm_model(self.memory)
            if self._closed:  # closed meanwhile (interpreter exit): no more native work on this thread
                return
            self.memory.recall("warm up", 1, record=False)
            log.debug("recall worker warmed up in %.2f s", time.monotonic() - t0)
        except Exception as exc:  # noqa: BLE001 - the real recalls will report it
            level = logging.DEBUG if self._closed or shutting_down() else logging.WARNING
            log.log(level, "recall worker warm-up failed (%s: %s)", type(exc).__name__, exc)
        finally:
            self._ready.set()

    def _run(self) -> None:
        while True:
            item = self._inbox.get()
            if item is _STOP:
                return
            kind = item[0]
            try:
                if kind == "recall":
                    if not self._closed:
                        self._process(item[1])
                elif kind == "read":
                    self._record_injection(item[1], item[2])
                elif kind == "barrier":
                    try:
                        item[1].wait()
                    except threading.BrokenBarrierError:
                        pass
            except Exception:  # noqa: BLE001 - a worker thread must survive anything
                log.exception("plur recall worker: unexpected error handling %s", kind)

    def _pinned(self, scope: str | None) -> list[Engram]:
        return self.memory.pinned(scope)

    def _process(self, agent_id: str) -> None:
        with self._lock:
            st = self._agents.get(agent_id)
            req = st.pending if st is not None else None
            if st is None or req is None:
                return
            st.pending = None
            self._counters["recalls"] += 1
        t0 = time.monotonic()
        block: Block | None = None
        outcome = "ok"
        # a cold model: keyword meanwhile (at once when a host waits for this recall)
        mode = "hybrid" if self._ready.wait(0.0 if req.awaited else KEYWORD_AFTER_S) else "bm25"
        try:
            block = recall_block(self.memory, req.text, scope=req.scope, agent=agent_id, k=self.k,
                                 budget_tokens=self.budget_tokens, pinned=self._pinned(req.scope), mode=mode)
        except Exception as exc:  # noqa: BLE001 - keep the previous block, log, carry on
            outcome = "errors"
            log.log(logging.DEBUG if self._closed or shutting_down() else logging.WARNING,
                    "recall for agent %r failed (%s: %s); keeping its previous memory block",
                        agent_id, type(exc).__name__, redact(str(exc)))   # a host's log may keep its query
        elapsed = time.monotonic() - t0
        late = block is not None and self.timeout_s > 0 and elapsed > self.timeout_s
        if late:  # the deadline bounds waiting (warm), not usefulness: a slow recall is still published
            log.info("recall for agent %r took %.2f s, over the %.2f s deadline (recall_timeout_s); "
                     "its block is published late", agent_id, elapsed, self.timeout_s)
        with self._cond:
            if self._agents.get(agent_id) is not st:  # dropped (and maybe re-created) meanwhile
                st = None
            self._counters["timeouts"] += late
            self._counters["keyword"] += mode == "bm25"
            if outcome != "ok":
                self._counters[outcome] += 1
            elif st is None or req.gen <= st.published_gen or req.scope != st.scope:
                self._counters["dropped_stale"] += 1
            else:
                assert block is not None
                st.published_gen = req.gen
                current = self._cache.get(agent_id)
                if current is not None and current.block.hash == block.hash:
                    self._counters["unchanged"] += 1
                elif current is None and not block.text:
                    self._counters["unchanged"] += 1
                else:
                    self._publish(agent_id, _Entry(block, req.scope, req.gen, req.text) if block.text else None)
                    self._counters["published"] += 1
            if st is not None:
                st.finished_gen = max(st.finished_gen, req.gen)
            self._cond.notify_all()
        self._capturer.put(agent_id, self._take_captures(agent_id, req.gen))  # learned on the capture thread

    def _take_captures(self, agent_id: str, upto_gen: int | None) -> list[Capture]:  # those recalled (None: all)
        with self._lock:
            st = self._agents.get(agent_id)
            if st is None:
                return []
            due = [c for c in st.captures if upto_gen is None or c.gen <= upto_gen]
            st.captures = [c for c in st.captures if c not in due]
            return due

    def _learn(self, agent_id: str, due: list[Capture], embed: bool) -> None:
        ok, failed = capture_mod.learn(self.memory, agent_id, due)
        with self._lock:
            self._counters["captured"] += ok
            self._counters["capture_errors"] += failed
        if ok and embed:  # embed them now, between turns, not in the next turn's recall
            try:
                getattr(self.memory, "embed_queued", lambda: 0)()
            except Exception as exc:  # noqa: BLE001 - the next recall embeds them itself
                log.debug("could not embed captured messages ahead (%s: %s)", type(exc).__name__, exc)

    def _record_injection(self, agent_id: str, entry: _Entry) -> None:
        with self._lock:
            if entry.recorded:
                return
            entry.recorded = True
            self._counters["injections"] += 1
        try:
            record_injected(self.memory, agent_id, entry.block, message=entry.message)
        except Exception as exc:  # noqa: BLE001
            log.log(logging.DEBUG if shutting_down() else logging.WARNING,
                    "could not record the injection of a memory block for agent %r: %s", agent_id, exc)
