"""Score tasks with plur's real engine: learn each corpus into a temporary store, recall through ``Memory.recall``.

Per task (one corpus): a throw-away home in the temp folder, every non-empty document
learned with ``Memory.learn_many`` (``source = {"kind": <dataset>, "doc_id": <corpus id>}``),
then every query recalled once per variant (``bm25``, ``dense``, ``hybrid-<fusion>``) on
that same store, so each document is embedded once. Another fusion reopens the same
home with ``fusion=<name>`` (indexes are persisted, nothing is re-embedded).

Ranking depth: the headline variants are the *default path*, what a user's
``Memory.recall`` returns: ``k = 50`` (the deepest cut-off scored), so each leg takes its
``candidates`` (100) best before fusion, the date boost and the cut, exactly as for
``recall(query)`` with k=10 (whose top 10 is the same). Each variant also runs at full depth
(``<name>@full``, ``k = number of engrams``: every leg ranks the whole corpus, as the official
scorer does), a labelled extra. Documents the engine does not return (outside the
candidates, no shared term, empty documents) follow as a tied tail in corpus order
(:func:`with_tail`); each row's ``n_ranked`` says how many the engine ranked.

Provenance and time: documents with :class:`~bench.datasets.tasks.DocMeta` are learned as conversation
turns (``source.kind = "conversation"``, ``session``, ``turn``) dated by their session, and each
question is recalled with ``now`` = its question date, so neighbouring-turn context and date
resolution work as they do for a user.

Duplicates: the store merges documents whose normalised statements are equal (same
scope), and ``learn_many`` returns the stored engram for each input in order. The
runner maps each engram to *all* the corpus ids it stands for and expands a hit into
those ids, in corpus order, at its rank: exactly how a ranker scoring the duplicates
separately would place them (tied, adjacent). Empty documents (no text to learn) stay
in the corpus for the ideal DCG but are never ranked.

The block: on the default path each row also says what the memory block would inject for the
question (the top ``recall_k`` hits through :func:`plur.prompt.selection.select_block` at
``budget_tokens``, with and without the relevance floor; :mod:`bench.quality.blocks`).

Embeddings: one embedder per process (resolved as plur resolves ``settings.model``),
passed to every temporary ``Memory``, which wraps it in plur's on-disk embedding cache
at ``cache_dir`` shared by all temporary stores: a re-run embeds nothing new.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..datasets.tasks import DocMeta, Task
from ..quality import metrics
from ..quality.blocks import block_fields

MODES: tuple[str, ...] = ("bm25", "dense", "hybrid")
FUSIONS: tuple[str, ...] = ("rrf", "weighted")
SESSION_OF: dict[str, Callable[[str], str]] = {"underscore": metrics.strip_turn_id, "colon": metrics.strip_dia_turn}
TOP_LOGGED = 10  # ranked ids kept in each per-question row


def default_cache_dir() -> Path:
    """``$PLUR_BENCH_CACHE`` or ``~/.cache/plur/bench``: the embedding cache shared by benchmark stores."""
    env = os.environ.get("PLUR_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "plur" / "bench"


#: Hits asked per recall on the default path: the deepest cut-off scored (metrics.KS). With
#: ``k <= candidates`` (100) ``Memory.recall`` fuses the same per-leg candidates as a user's
#: ``recall(query)`` with k=10, so its top 10 is exactly what the user gets.
DEFAULT_PATH_K = max(metrics.KS)
FULL_SUFFIX = "@full"


@dataclass(frozen=True)
class Variant:
    """One recall configuration: a mode, for ``hybrid`` a fusion method, and the ranking depth.

    ``full=False`` is the default path (``Memory.recall(k=50)``: every leg takes its
    ``candidates`` best, then fusion); ``full=True`` asks for every engram (each leg ranks the
    whole corpus), a labelled extra that is not what a user's recall returns.
    """

    mode: str
    fusion: str | None = None
    full: bool = False

    @property
    def name(self) -> str:
        """``bm25``, ``dense``, ``hybrid-rrf``, ``hybrid-weighted``, with ``@full`` for full depth."""
        base = self.mode if self.fusion is None else f"{self.mode}-{self.fusion}"
        return base + (FULL_SUFFIX if self.full else "")


def make_variants(modes: Iterable[str], fusions: Iterable[str], *, full_depth: bool = True) -> list[Variant]:
    """Variants for ``modes`` x ``fusions`` (fusion only matters for ``hybrid``), default path first.

    Args:
        modes: recall modes. fusions: hybrid fusion methods.
        full_depth: also add each variant at full depth (``<name>@full``), after the default-path ones.

    Raises:
        ValueError: an unknown mode or fusion.
    """
    fusions = list(fusions)
    out: list[Variant] = []
    for f in fusions:
        if f not in FUSIONS:
            raise ValueError(f"fusion {f!r} is not one of {', '.join(FUSIONS)}")
    for m in modes:
        if m not in MODES:
            raise ValueError(f"mode {m!r} is not one of {', '.join(MODES)}")
        out += [Variant(m, f) for f in fusions] if m == "hybrid" else [Variant(m)]
    if full_depth:
        out += [Variant(v.mode, v.fusion, True) for v in out]
    return out


@dataclass(frozen=True)
class EngineConfig:
    """How the engine is set up for a benchmark run.

    Attributes:
        dataset: label written into engram sources and rows (``longmemeval``, ``locomo``).
        granularity: ``session`` or ``turn`` (copied into rows).
        model: the ``model`` setting (None = plur's default resolution).
        cache_dir: folder of the shared embedding cache.
        depth: hits asked per default-path recall; None = :data:`DEFAULT_PATH_K` (full-depth
            variants always ask for every engram).
        overrides: further plur settings (e.g. ``{"bm25_k1": 1.2}``).
        torch_threads: intra-op threads per process (None = torch's default).
        capture: store each turn through ``Memory.capture``, as a host's capture does (:mod:`bench.engine.capture_learn`).
    """

    dataset: str
    granularity: str
    model: str | None = None
    cache_dir: str = field(default_factory=lambda: str(default_cache_dir()))
    depth: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    torch_threads: int | None = None
    capture: bool = False

    def settings_overrides(self) -> dict[str, Any]:
        """Settings every temporary store gets: no fsync, no stats, the shared cache."""
        out: dict[str, Any] = {"fsync": False, "record_stats": False, "cache_dir": self.cache_dir}
        if self.model:
            out["model"] = self.model
        return out | dict(self.overrides)


class Engine:
    """One process's engine: the embedding model is resolved (loaded) once, then reused for every task.

    Args:
        config: the run's :class:`EngineConfig`.
        embedder: an already loaded :class:`plur.embed.embedder.Embedder` to use instead of resolving
            ``config.model`` (tests share one model this way).
    """

    def __init__(self, config: EngineConfig, embedder: Any | None = None) -> None:
        from plur.embed import resolve as embed
        from plur.config import load_settings

        self.config = config
        if config.torch_threads:
            try:
                import torch

                torch.set_num_threads(config.torch_threads)
            except ImportError:  # pragma: no cover - BM25-only installs
                pass
        Path(config.cache_dir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="plur-bench-settings-") as tmp:
            self.settings = load_settings(tmp, **config.settings_overrides())
            if embedder is None:
                # int8 runs on the ONNX bundle (exported once under the cache folder); float32 on the model
                onnx_dir = Path(config.cache_dir) if self.settings.embed_precision == "int8" else None
                self.resolution = embed.resolve_embedder(self.settings, onnx_dir=onnx_dir)
            else:
                self.resolution = embed.Resolution(embedder, "given", "embedder passed to the benchmark engine",
                                                   self.settings.model)
        self.embedder = self.resolution.embedder

    def model_info(self) -> dict[str, Any]:
        """What serves the dense leg: ``{requested, name, identity, dims, device, source, reason, warnings}``."""
        emb = self.embedder
        return {"requested": self.settings.model, "name": getattr(emb, "name", None),
                "identity": getattr(emb, "identity", None), "dims": getattr(emb, "dims", None),
                "device": getattr(emb, "device", None), "source": self.resolution.source,
                "reason": self.resolution.reason, "warnings": list(self.resolution.warnings)}

    def settings_dict(self) -> dict[str, Any]:
        """The resolved settings of the temporary stores (JSON-safe; home omitted)."""
        return {k: v for k, v in vars(self.settings).items() if k != "home"}

    def run_task(self, task: Task, variants: Sequence[Variant],
                 on_progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
        """Learn ``task``'s corpus into a temporary store and score every query under every variant.

        Args:
            task: the corpus and its queries.
            variants: recall configurations; all run on the same store.
            on_progress: called with 1 after each (query, variant) recall.

        Returns:
            One row per (query, variant); see :func:`make_row`.
        """
        from plur.memory import Memory

        meta_of = dict(zip(task.doc_ids, task.meta)) if task.meta else {}
        docs = [(d, t.replace("\x00", "")) for d, t in zip(task.doc_ids, task.texts)]
        docs = [(d, t) for d, t in docs if t.strip()]
        meta = [meta_of.get(d) for d, _ in docs]
        fusions = [v.fusion for v in variants if v.fusion is not None]
        fusions = list(dict.fromkeys(fusions)) or [self.settings.fusion]
        session_of = SESSION_OF[task.session_of] if task.session_of else None
        rows: list[dict[str, Any]] = []
        from .pg_task import task_store

        overrides = self.config.settings_overrides()
        with tempfile.TemporaryDirectory(prefix="plur-bench-") as home, task_store(overrides.get("store")) as uri:
            if uri:  # PostgreSQL: a schema per task, as a temporary home per task on the folder store
                overrides["store"] = uri
            docs_of: dict[str, list[str]] = {}
            for i, fusion in enumerate(fusions):
                todo = [v for v in variants if v.fusion == fusion or (i == 0 and v.fusion is None)]
                with Memory(home, embedder=self.embedder, fusion=fusion, **overrides) as mem:
                    if i == 0:
                        docs_of, captured = self._learn(mem, docs, meta)
                    for query in task.queries:
                        for variant in todo:
                            depth = max(len(docs_of), 1) if variant.full else (self.config.depth or DEFAULT_PATH_K)
                            t0 = time.perf_counter()
                            hits = mem.recall(query.text, k=depth, mode=variant.mode, record=False, now=query.now)
                            latency_ms = (time.perf_counter() - t0) * 1000.0
                            ranked = expand(hits, docs_of)
                            ranking = with_tail(ranked, task.doc_ids)
                            row = make_row(self.config, task, query, variant, ranking, session_of,
                                           latency_ms=latency_ms, n_engrams=len(docs_of), n_ranked=len(ranked))
                            if captured is not None:
                                row["capture"] = captured
                            if not variant.full:  # what the memory block injects (bench.quality.blocks)
                                row.update(block_fields(hits, docs_of, query.gold, recall_k=self.settings.recall_k,
                                                        budget_tokens=self.settings.budget_tokens, now=query.now,
                                                        overview=_overview(mem, query.text)))
                            rows.append(row)
                            if on_progress is not None:
                                on_progress(1)
        q_pos = {q.qid: i for i, q in enumerate(task.queries)}
        v_pos = {v.name: i for i, v in enumerate(variants)}
        rows.sort(key=lambda r: (q_pos[r["qid"]], v_pos[r["variant"]]))
        return rows

    def _learn(self, mem: Any, docs: Sequence[tuple[str, str]],
               meta: Sequence[DocMeta | None] = ()) -> tuple[dict[str, list[str]], dict[str, int] | None]:
        """Learn ``(doc id, text)`` pairs; engram id -> the corpus ids it stands for (corpus order), and
        with ``--capture`` what capture did with the turns (``{stored, trivial, known, ...}``, else None).

        A document with a session and turn is learned as a conversation turn (contract B:
        ``source = {"kind": "conversation", "format": <dataset>, "session", "turn", ...}``), so the
        engine sees its neighbouring turns; a dated document gets ``created`` = its date.
        """
        captured: dict[str, int] | None = None
        if self.config.capture:
            from .capture_learn import learn_captured

            stored, captured = learn_captured(mem, docs, meta)
        else:
            items = [_item(self.config.dataset, doc_id, text, m)
                     for (doc_id, text), m in zip(docs, list(meta) or [None] * len(docs))]
            stored = mem.learn_many(items) if items else []
            if len(stored) != len(items):
                raise RuntimeError(f"learn_many returned {len(stored)} engrams for {len(items)} documents; "
                                   "the benchmark needs one result per input to map duplicates")
        # Every vector in before the first query: a recall answers from the last consistent index while
        # a long dense queue is embedded in the background, so without this the first queries of a run
        # would be scored without (part of) the dense leg and figures would vary with the machine's speed.
        mem.catchup.wait()
        mem.catch_up(progress=False)
        pending = mem.index_state()["pending_dense"]
        if pending:
            raise RuntimeError(f"{pending} engrams still wait for their embedding after catch_up; "
                               "the benchmark scores only a complete dense index")
        docs_of: dict[str, list[str]] = {}
        for engram, (doc_id, _) in zip(stored, docs):
            if engram is not None:  # None: a turn capture did not store
                docs_of.setdefault(engram.id, []).append(doc_id)
        return docs_of, captured


def _overview(mem: Any, question: str) -> Any:
    """The overview a host's block would end with for ``question`` (``plur.prompt.overview``), from the top hits."""
    from plur.prompt.selection import overview_lines, overview_why

    return lambda top: overview_lines(mem, None, overview_why(question, top), top)


def _item(dataset: str, doc_id: str, text: str, meta: DocMeta | None) -> dict[str, Any]:
    """``Memory.learn_many`` keyword arguments for one corpus document."""
    item: dict[str, Any] = {"statement": text, "source": {"kind": dataset, "doc_id": doc_id}}
    if meta is None:
        return item
    if meta.session is not None and meta.turn is not None:
        source: dict[str, Any] = {"kind": "conversation", "format": dataset, "session": meta.session,
                                  "turn": meta.turn, "doc_id": doc_id}
        if meta.role:
            source["role"] = meta.role
        if meta.speaker:
            source["speaker"] = meta.speaker
        item["source"] = source
    if meta.date:
        item["created"] = meta.date
    return item


def resolved_settings(config: EngineConfig) -> dict[str, Any]:
    """The settings a temporary store of this run resolves to (JSON-safe; home omitted), no model loaded."""
    from plur.config import load_settings

    with tempfile.TemporaryDirectory(prefix="plur-bench-settings-") as tmp:
        settings = load_settings(tmp, **config.settings_overrides())
    return {k: v for k, v in vars(settings).items() if k != "home"}


def expand(hits: Iterable[Any], docs_of: dict[str, list[str]]) -> list[str]:
    """Corpus-id ranking from engram hits: each hit becomes the ids it stands for, in place.

    Raises:
        KeyError: a hit names an engram that was not learned for this task.
    """
    ranking: list[str] = []
    for hit in hits:
        ranking += docs_of[hit.engram.id]
    return ranking


def with_tail(ranked: Sequence[str], corpus_ids: Sequence[str]) -> list[str]:
    """``ranked`` followed by every corpus id it lacks, in corpus order.

    The official scorer ranks the whole corpus (``np.argsort`` over every score); plur's
    BM25 leg returns only documents sharing a term with the query, and empty documents are
    never learned. Those unreturned documents are tied at the bottom: this puts them there,
    ties broken by corpus order, so metrics at large k see a full ranking as in the official code.
    """
    seen = set(ranked)
    return list(ranked) + [d for d in corpus_ids if d not in seen]


def make_row(config: EngineConfig, task: Task, query: Any, variant: Variant, ranking: Sequence[str],
             session_of: Callable[[str], str] | None, *, latency_ms: float, n_engrams: int,
             n_ranked: int | None = None) -> dict[str, Any]:
    """One per-question row (JSON-safe): identity, flags, gold, top ids, metrics per level.

    ``n_ranked`` is how many ids the engine itself ranked (the rest is the tied tail of
    :func:`with_tail`).

    ``metrics`` holds ``{"session": {...}}`` for session-granularity corpora and
    ``{"turn": {...}, "session": {...}}`` (the latter via turn->session) for turn corpora.
    """
    gold = sorted(query.gold)
    if session_of is None:
        levels = {"session": metrics.score_ranking(ranking, query.gold, task.doc_ids)}
    else:
        levels = {"turn": metrics.score_ranking(ranking, query.gold, task.doc_ids),
                  "session": metrics.score_ranking(ranking, query.gold, task.doc_ids, session_of=session_of)}
    return {"dataset": config.dataset, "granularity": config.granularity, "task": task.name, "qid": query.qid,
            "group": query.group, "primary": query.primary, "scored": query.scored, **query.extra,
            "variant": variant.name, "mode": variant.mode, "fusion": variant.fusion,
            "n_docs": len(task.doc_ids), "n_engrams": n_engrams,
            "n_ranked": len(ranking) if n_ranked is None else n_ranked, "n_gold": len(gold), "gold": gold,
            "top": list(ranking[:TOP_LOGGED]), "latency_ms": round(latency_ms, 3), "metrics": levels}


# -- parallel execution -------------------------------------------------------------------
_WORKER: Engine | None = None


def _init_worker(config: EngineConfig) -> None:
    global _WORKER
    _WORKER = Engine(config)


def _run_in_worker(task: Task, variants: Sequence[Variant]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    assert _WORKER is not None
    return _WORKER.run_task(task, variants), _WORKER.model_info()


def run_tasks(tasks: Sequence[Task], variants: Sequence[Variant], config: EngineConfig, *, workers: int = 1,
              desc: str = "questions") -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Score every task, with a progress bar (ETA) over (query, variant) recalls.

    Args:
        tasks: corpora with their queries.
        variants: recall configurations.
        config: engine set-up.
        workers: processes; 1 runs in this process. Each worker loads the model once.
        desc: progress bar label.

    Returns:
        ``(rows, model_info, settings)``; rows in task order.
    """
    from tqdm import tqdm

    total = sum(len(t.queries) for t in tasks) * len(variants)
    bar = tqdm(total=total, desc=desc, unit="recall", dynamic_ncols=True)
    try:
        if workers <= 1:
            engine_ = Engine(config)
            rows: list[dict[str, Any]] = []
            for task in tasks:
                rows += engine_.run_task(task, variants, on_progress=bar.update)
            return rows, engine_.model_info(), engine_.settings_dict()
        import multiprocessing as mp

        threads = config.torch_threads or max(1, (os.cpu_count() or 1) // workers)
        wconfig = EngineConfig(**{**vars(config), "torch_threads": threads})
        results: dict[int, list[dict[str, Any]]] = {}
        info: dict[str, Any] = {}
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                 initializer=_init_worker, initargs=(wconfig,)) as pool:
            futures = {pool.submit(_run_in_worker, t, list(variants)): i for i, t in enumerate(tasks)}
            for fut in as_completed(futures):
                i = futures[fut]
                results[i], info = fut.result()
                bar.update(len(tasks[i].queries) * len(variants))
        rows = [r for i in range(len(tasks)) for r in results[i]]
        return rows, info, resolved_settings(config)
    finally:
        bar.close()
