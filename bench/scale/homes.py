"""The stores the scale bench measures, built once and kept: LoCoMo's conversations among distractors.

A store of ``n`` engrams holds the 10 LoCoMo conversations (5,882 turns, learned as the quality runner
learns them: ``source.format = "locomo"``, session ``<sample>/D<N>``, ``doc_id`` the turn's dia_id) and
``n - 5,882`` distractor notes (:mod:`bench.scale.distractors`). It is written with ``learn_many``
(fsync off) into ``<work>/home-<n>`` and indexed once, which puts every chunk's vector in the shared
embedding cache: that first indexing is the slow part (embedding every text on the CPU; its time is
kept in ``<work>/home-<n>/scale-built.json`` and printed with every later run). A later run reuses the
store when its ``scale-built.json`` says it was built for this ``n`` by this version of the generator.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..datasets import locomo
from ..datasets.paths import SHARED_DATA
from ..engine.runner import _item
from .distractors import VERSION, distractors

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LOCOMO = SHARED_DATA / "locomo" / "locomo10.json"
BUILT = "scale-built.json"
#: Written when a build starts: a build stopped half-way (a million notes take ~20 minutes to write) resumes.
BUILDING = "scale-building.json"


def locomo_items(path: Path = LOCOMO) -> list[dict[str, Any]]:
    """Every LoCoMo turn as a ``learn_many`` item, as :mod:`bench.engine.runner` learns it (turn granularity)."""
    tasks, _ = locomo.load_tasks(path, "turn")
    out = []
    for task in tasks:
        for doc_id, text, meta in zip(task.doc_ids, task.texts, task.meta):
            text = text.replace("\x00", "")
            if text.strip():
                out.append(_item("locomo", doc_id, text, meta))
    return out


def built_info(home: Path, name: str = BUILT) -> dict[str, Any] | None:
    """What ``scale-built.json`` (or ``name``) says about a kept store, or None."""
    try:
        return json.loads((home / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def ensure_home(work: Path, n: int, cache_dir: Path, *, derived: bool = False,
                log: Any = print) -> tuple[Path, dict[str, Any]]:
    """The kept store of ``n`` engrams under ``work`` (built now when missing or stale) and its build record.

    Args:
        derived: chunks the cache lacks get derived vectors (:mod:`bench.scale.derived`), not the model's;
            ``cache_dir`` must then be a derived run's own copy (:func:`bench.scale.derived.derived_cache`).

    Returns:
        ``(home, info)``: ``info`` holds ``n``, ``version``, ``store_write_s``, ``first_index_s`` (learning
        and the first indexing, embeddings included when the cache lacked them), ``chunks_embedded``.
    """
    home = work / f"home-{n}"
    info = built_info(home)
    if info and info.get("n") == n and info.get("version") == VERSION and info.get("vectors", "model") == (
            "derived" if derived else "model"):
        return home, info
    want = {"n": n, "version": VERSION, "vectors": "derived" if derived else "model"}
    if home.exists() and built_info(home, BUILDING) != want:
        shutil.rmtree(home)
    from plur.memory import Memory

    base = locomo_items()
    if n < len(base):
        raise SystemExit(f"--sizes {n}: a store must hold at least the {len(base):,} LoCoMo turns")
    resumed = home.exists()
    log(f"{'resuming' if resumed else 'building'} the {n:,}-engram store in {home} (once; kept for later runs"
        f"{': the notes written before are merged as duplicates, not written again' if resumed else ''})")
    home.mkdir(parents=True, exist_ok=True)
    (home / BUILDING).write_text(json.dumps(want), encoding="utf-8")
    t0 = time.perf_counter()
    with Memory(home, model=MODEL, fsync=False, cache_dir=str(cache_dir)) as mem:
        def items() -> Iterator[dict[str, Any]]:
            yield from base
            yield from distractors(n - len(base), SHARED_DATA)

        stored = 0
        batch: list[dict[str, Any]] = []
        for item in items():
            batch.append(item)
            if len(batch) == 10_000:
                stored += len(mem.learn_many(batch))
                batch = []
                log(f"  {stored:,} engrams written, {time.perf_counter() - t0:.0f} s")
        stored += len(mem.learn_many(batch))
        write_s = time.perf_counter() - t0
        emb = mem.model_resolution().embedder
        before = emb.stats.misses if emb is not None else 0
        maker = None
        if derived and emb is not None:
            from .derived import DerivedVectors

            maker = DerivedVectors(cache_dir / "embeddings.sqlite", emb.identity, emb.dims)
            emb.inner.embed_documents = maker  # this process only: what the model would have embedded
        t1 = time.perf_counter()
        mem.reindex(progress=True)
        index_s = time.perf_counter() - t1
        info = {"n": n, "version": VERSION, "engrams": mem.store.count(), "store_write_s": round(write_s, 1),
                "first_index_s": round(index_s, 1),
                "chunks_embedded": (emb.stats.misses - before) if emb is not None else 0,
                "vectors": "derived" if derived else "model", "chunks_derived": maker.made if maker else 0,
                "built": time.strftime("%Y-%m-%d %H:%M:%S")}
    if resumed:
        info["resumed"] = True  # the write and index times cover this run only
    (home / BUILT).write_text(json.dumps(info, indent=2), encoding="utf-8")
    (home / BUILDING).unlink(missing_ok=True)
    log(f"  built: {info}")
    return home, info
