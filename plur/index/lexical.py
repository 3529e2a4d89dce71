"""Okapi BM25 index over (id, text) pairs: incremental add/remove, search, save/load.

Scoring (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
Beyond", 2009), for query ``q`` and document ``d``::

    score(d, q) = sum over terms t of q (counted with multiplicity):
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

    idf(t) = log(1 + (N - n(t) + 0.5) / (n(t) + 0.5))

``N`` is the number of live documents, ``n(t)`` how many of them contain ``t``,
``|d|`` the document's length in tokens and ``avgdl`` the mean length. The idf is
the Lucene / BM25+ form: it is always > 0, unlike the classic Robertson-Sparck
Jones idf ``log((N - n + 0.5) / (n + 0.5))`` used by rank-bm25's ``BM25Okapi``,
which is <= 0 for a term in half the documents or more (so with two documents a
word found in exactly one of them would score 0). Apart from the idf, scores equal
rank-bm25 0.2.2's ``BM25Okapi.get_scores``; ``tests/test_lexical.py`` checks this to
1e-6 on LongMemEval turns.

Design: the postings are a read-only CSR base (a loaded index reads a term's slice from the saved files when a
query needs it, so none stays resident) beside a growable delta of the postings added since (per term an ``array``
pair: doc slots ``'i'``, term frequencies ``'B'`` until one exceeds 255, then ``'i'``: :mod:`plur.index.postings`),
so adding one document costs O(its length) and never copies a base term. Removal leaves a tombstone;
``N``, ``n(t)`` and ``avgdl`` count live documents only, and all of them enter the
score at query time, so an add never invalidates stored scores. Tombstones are
compacted away once they exceed 25% of the slots, and dropped by a save, which writes base and delta merged and
then reads its files as the new base.

The index stores no text: callers keep the documents and re-add to update one. Save, load and the
CSR export of the postings live in :mod:`plur.index.lexical_io` (:class:`~plur.index.lexical_io.BM25Files`).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence, Set

import numpy as np

from ..errors import ValidationError
from .lexical_io import FORMAT_VERSION, BM25Files
from .id_slots import IdSlots
from .postings import Postings
from .tokenize import Tokenizer

__all__ = ["BM25Index", "FORMAT_VERSION"]

_COMPACT_RATIO = 0.25  # compact when tombstones exceed this share of slots
#: Most cached term impacts (float64 values, 16 MiB): a query's common terms are then two array ops, not five.
_IMPACT_CACHE_VALUES = 2 * 1024 * 1024


class BM25Index(BM25Files):
    """An incremental Okapi BM25 index; see the module docstring for the formula.

    Args:
        k1: term-frequency saturation, >= 0 (1.5 is rank-bm25's default; Robertson &
            Zaragoza suggest 1.2-2.0). Can be changed at any time without a rebuild.
        b: length normalisation in [0, 1] (0 = none, 1 = full). Also changeable.
        tokenizer: turns documents and queries into terms; its
            :attr:`~plur.index.tokenize.Tokenizer.identity` is saved with the index.

    Raises:
        ValidationError: if ``k1`` or ``b`` is out of range.

    All methods are thread-safe (one internal lock; tokenization runs outside it).
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer if tokenizer is not None else Tokenizer()
        self._lock = threading.RLock()
        self.k1 = k1
        self.b = b
        self._clear()

    # ------------------------------------------------------------------ state
    def _clear(self) -> None:
        self._ids: list[str | None] = []  # slot -> id (None once removed): the one id table
        self._slot = IdSlots(self._ids)  # live id -> slot
        self._dl = np.zeros(64, dtype=np.int32)  # slot -> length in tokens
        self._alive = np.zeros(64, dtype=bool)
        self._postings = Postings()  # term -> (slots, tfs): a CSR base and a delta
        self._total_len = 0  # tokens over live docs
        self._n_dead = 0
        self._norm: np.ndarray | None = None  # cached k1 * (1 - b + b * dl / avgdl)
        # term -> its postings' tf part, tf * (k1 + 1) / (tf + norm[slot]) [len(postings)] float64, valid while
        # _norm is the array it was computed from (any add, remove or k1/b change makes a new one)
        self._impacts: dict[str, np.ndarray] = {}
        self._impact_norm: np.ndarray | None = None
        self._impact_size = 0

    @property
    def k1(self) -> float:
        """BM25 term-frequency saturation (>= 0)."""
        return self._k1

    @k1.setter
    def k1(self, value: float) -> None:
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValidationError(f"BM25 k1 must be a finite number >= 0, got {value!r}; the usual range is 1.2-2.0")
        with self._lock:
            self._k1 = float(value)
            self._norm = None

    @property
    def b(self) -> float:
        """BM25 length normalisation, in [0, 1]."""
        return self._b

    @b.setter
    def b(self, value: float) -> None:
        if not (isinstance(value, (int, float)) and 0 <= value <= 1):
            raise ValidationError(f"BM25 b must be between 0 and 1, got {value!r}; 0.75 is the usual value")
        with self._lock:
            self._b = float(value)
            self._norm = None

    def __len__(self) -> int:
        """Number of live (not removed) documents."""
        return len(self._slot)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot

    def ids(self) -> list[str]:
        """Ids of the live documents, in insertion order."""
        with self._lock:
            return [i for i in self._ids if i is not None]

    def __repr__(self) -> str:
        return (f"BM25Index(k1={self._k1}, b={self._b}, tokenizer={self.tokenizer.identity!r}, "
                f"docs={len(self)}, terms={len(self._postings)})")

    # ------------------------------------------------------------ mutation
    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Index documents; re-adding an existing id replaces its text.

        Cost: O(total tokens) amortised, so adding one engram at a time is cheap.

        Args:
            ids: document ids (any strings), one per text. A repeated id keeps the last text.
            texts: the documents' text.

        Raises:
            ValidationError: if the lengths differ or an id/text is not a ``str``.
        """
        if len(ids) != len(texts):
            raise ValidationError(f"add() got {len(ids)} ids but {len(texts)} texts; pass one text per id")
        for doc_id, text in zip(ids, texts):
            if not isinstance(doc_id, str) or not isinstance(text, str):
                raise ValidationError(
                    f"add() needs str ids and texts, got id {doc_id!r} ({type(doc_id).__name__}) "
                    f"with text of type {type(text).__name__}"
                )
        self.add_tokens(ids, [self.tokenizer(t) for t in texts])

    def add_tokens(self, ids: Sequence[str], tokenized: Sequence[list[str]]) -> None:
        """:meth:`add` for documents already tokenized by :attr:`tokenizer` (``tokenized[i]`` = the terms of
        document ``ids[i]``, as ``self.tokenizer(text)`` returns them). A caller that builds many documents
        from shared parts tokenizes each part once (``tokenizer("a\nb") == tokenizer("a") + tokenizer("b")``)."""
        with self._lock:
            for doc_id, terms in zip(ids, tokenized):
                if doc_id in self._slot:
                    self._remove_one(doc_id)
                self._append(doc_id, terms)
            self._norm = None
            self._maybe_compact()

    def add_coded(self, ids: Sequence[str], docs: Sequence[np.ndarray], vocab: Sequence[str]) -> None:
        """:meth:`add_tokens` for documents as term codes: ``docs[i]`` is ``[its terms] int32``, indices into
        ``vocab`` (the terms :attr:`tokenizer` gives document ``ids[i]``, in any order). The same postings, counted
        for the whole batch with numpy and appended a term at a time instead of a posting at a time (issue 49: a
        100k-engram build spent 4.4 s of CPU in per-document ``Counter`` and ``array.append`` calls)."""
        if len(set(ids)) != len(ids):  # a repeated id keeps its last text: the one-by-one path says how
            self.add_tokens(ids, [[vocab[c] for c in d.tolist()] for d in docs])
            return
        with self._lock:
            for doc_id in ids:
                if doc_id in self._slot:
                    self._remove_one(doc_id)
            first = len(self._ids)
            for doc_id, doc in zip(ids, docs):
                self._append(doc_id, (), len(doc))
            lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
            if lengths.sum():
                slots = np.repeat(np.arange(first, first + len(docs), dtype=np.int64), lengths)
                keys, counts = np.unique((np.concatenate(docs).astype(np.int64) << 32) | slots, return_counts=True)
                self._append_runs(vocab, keys >> 32, (keys & 0xFFFFFFFF).astype(np.int32), counts)
            self._norm = None
            self._maybe_compact()

    def _append_runs(self, vocab: Sequence[str], codes: np.ndarray, slots: np.ndarray, tfs: np.ndarray) -> None:
        """Append postings sorted by (term code, slot): each code's run goes onto its term's arrays at once."""
        postings = self._postings
        bounds = [0, *(np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist(), len(codes)]
        for lo, hi, code in zip(bounds, bounds[1:], codes[bounds[:-1]].tolist()):
            postings.append_run(vocab[code], slots[lo:hi], tfs[lo:hi])

    def _append(self, doc_id: str, terms: Sequence[str], length: int | None = None) -> None:
        """Give ``doc_id`` the next slot and post its ``terms``; ``length`` instead: the caller posts them."""
        slot = len(self._ids)
        if slot == len(self._dl):
            self._dl = np.concatenate([self._dl, np.zeros(slot, dtype=np.int32)])
            self._alive = np.concatenate([self._alive, np.zeros(slot, dtype=bool)])
        post = self._postings.append
        for term, tf in Counter(terms).items() if length is None else ():
            post(term, slot, tf)
        n = len(terms) if length is None else length
        self._ids.append(doc_id)
        self._slot[doc_id] = slot
        self._dl[slot] = n
        self._alive[slot] = True
        self._total_len += n

    def remove(self, ids: Iterable[str]) -> int:
        """Remove documents by id; ids not in the index are ignored.

        Returns:
            How many documents were removed.
        """
        with self._lock:
            removed = 0
            for doc_id in ids:
                if doc_id in self._slot:
                    self._remove_one(doc_id)
                    removed += 1
            if removed:
                self._norm = None
                self._maybe_compact()
            return removed

    def _remove_one(self, doc_id: str) -> None:
        slot = self._slot.pop(doc_id)
        self._ids[slot] = None
        self._alive[slot] = False
        self._total_len -= int(self._dl[slot])
        self._n_dead += 1

    def _maybe_compact(self) -> None:
        if self._n_dead > _COMPACT_RATIO * len(self._ids):
            self.compact()

    def compact(self) -> None:
        """Drop tombstones now: renumber live documents and rewrite postings. O(postings)."""
        with self._lock:
            if self._n_dead:
                self._load_arrays(*self._export())

    # -------------------------------------------------------------- search
    def search(self, query: str, k: int, allowed: Collection[str] | None = None) -> list[tuple[str, float]]:
        """Rank live documents for ``query`` by BM25.

        Args:
            query: free text, tokenized like the documents.
            k: how many results at most (>= 0).
            allowed: if given, only these ids may be returned. It is applied before the
                top-k cut, so it is an authorisation filter: ``k`` results come back
                whenever ``k`` allowed documents match. A ``set`` avoids a copy.

        Returns:
            Up to ``k`` ``(id, score)`` pairs, score > 0 and descending; equal scores
            are ordered by id. Empty when nothing matches (empty index, a query of
            stop words or punctuation only, ``k == 0``).

        Raises:
            ValidationError: if ``k`` is negative or not an int.
        """
        return self.search_scored(query, k, allowed)[0]

    def search_scored(self, query: str, k: int, allowed: Collection[str] | None = None
                      ) -> tuple[list[tuple[str, float]], Callable[[Iterable[str]], dict[str, float]]]:
        """:meth:`search`, plus the BM25 score of any other document for the same query.

        Hybrid recall fills in the BM25 score of an engram that only the dense leg returned, so
        that fusion sums both legs' evidence for every candidate instead of counting a leg that
        ranked it below its top ``k`` as 0 (the scores come from the one pass :meth:`search` makes).

        Returns:
            ``(ranking, scores_of)``: ``ranking`` as :meth:`search` returns it; ``scores_of(ids)`` ->
            ``{id: BM25 score}`` for the live ids among ``ids`` that match the query (score > 0;
            unknown, removed and non-matching ids are left out). ``scores_of`` reads a snapshot of
            this query's scores ``[n slots] float64``, valid whatever the index does meanwhile.

        Raises:
            ValidationError: as :meth:`search`.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValidationError(f"search() k must be an int >= 0, got {k!r}")
        query_tf = Counter(self.tokenizer(query))
        if not query_tf:
            return [], lambda ids: {}
        if allowed is not None and not isinstance(allowed, Set):
            allowed = set(allowed)
        with self._lock:
            ranking, scores = self._search_locked(query_tf, int(k), allowed)
            slot_ids = self._ids  # replaced (not mutated) by compact(); appends only add slots >= n
        if scores is None:
            return ranking, lambda ids: {}
        n = len(scores)

        def scores_of(ids: Iterable[str]) -> dict[str, float]:
            out: dict[str, float] = {}
            with self._lock:
                if self._ids is not slot_ids:  # renumbered since the search: no snapshot to read
                    return out
                for i, s in self._slot.lookup(ids):
                    if s < n and scores[s] > 0:
                        out[i] = float(scores[s])
            return out

        return ranking, scores_of

    def match_score(self, query: str) -> float:
        """The query's full-match score: ``sum over query terms t in the index of qtf(t) * idf(t)`` (>= 0).

        It is the BM25 score of a document of average length (``|d| = avgdl``) that holds each query
        term once: there the term-frequency factor ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))``
        is exactly 1. Every score is below ``(k1 + 1)`` times it. Terms no live document has are left out
        (they cannot match, and a typo should not shrink every score). 0.0 when nothing can match.
        Recall divides by it to put BM25 on an absolute [0, 1] scale (:func:`plur.index.fusion.bm25_unit`).
        """
        query_tf = Counter(self.tokenizer(query))
        with self._lock:
            n_live = len(self._slot)
            if n_live == 0 or not query_tf:
                return 0.0
            alive = self._alive[:len(self._ids)]
            total = 0.0
            for term, qtf in query_tf.items():
                if self._n_dead:
                    got = self._postings.peek(term)
                    df = 0 if got is None else int(np.count_nonzero(alive[got[0]]))
                else:
                    df = self._postings.size(term)
                if df:
                    total += qtf * math.log(1.0 + (n_live - df + 0.5) / (df + 0.5))
            return total

    def _search_locked(self, query_tf: Counter[str], k: int, allowed: Set[str] | None
                       ) -> tuple[list[tuple[str, float]], np.ndarray | None]:
        """``(top k ranking, score per slot [n slots] float64 with dead slots at 0)``; None: nothing matched."""
        n_live = len(self._slot)
        if n_live == 0 or self._total_len == 0:
            return [], None  # nothing can match; also avoids avgdl == 0
        n_slots = len(self._ids)
        alive = self._alive[:n_slots]
        norm = self._norm_array(n_live)
        if self._impact_norm is not norm:  # lengths, k1 or b changed since the impacts were cached
            self._impacts, self._impact_norm, self._impact_size = {}, norm, 0
        k1p1 = self._k1 + 1.0
        scores = np.zeros(n_slots, dtype=np.float64)
        hit = False
        for term, qtf in query_tf.items():
            impact = self._impacts.get(term)
            cached = impact is not None and len(impact) == self._postings.size(term)
            got = self._postings.peek(term, tfs=not cached)  # read for this query: no base posting stays resident
            if got is None:
                continue
            slots, tfs = got
            if self._n_dead:
                df = int(np.count_nonzero(alive[slots]))
                if df == 0:
                    continue
            else:
                df = len(slots)
            idf = math.log(1.0 + (n_live - df + 0.5) / (df + 0.5))
            if not cached:
                tf = tfs.astype(np.float64)
                impact = tf * k1p1 / (tf + norm[slots])
                if self._impact_size + len(impact) <= _IMPACT_CACHE_VALUES:
                    self._impacts[term] = impact
                    self._impact_size += len(impact)
            scores[slots] += (qtf * idf) * impact
            hit = True
        if not hit:
            return [], None
        if self._n_dead:
            scores[~alive] = 0.0
        cand = np.flatnonzero(scores > 0)
        if allowed is not None and len(cand):
            cand = self._filter_allowed(cand, allowed)
        if len(cand) == 0 or k == 0:
            return [], scores
        cand_scores = scores[cand]
        if len(cand) > k:
            top = np.argpartition(-cand_scores, k - 1)[:k]
            keep = cand_scores >= cand_scores[top].min()  # keep boundary ties for the id tiebreak
            cand, cand_scores = cand[keep], cand_scores[keep]
        ids = self._ids
        ranked = sorted(zip((-cand_scores).tolist(), [ids[s] for s in cand.tolist()]))
        return [(doc_id, -neg) for neg, doc_id in ranked[:k]], scores  # type: ignore[misc]

    def _filter_allowed(self, cand: np.ndarray, allowed: Set[str]) -> np.ndarray:
        if len(allowed) < len(cand):  # mark allowed slots: O(|allowed|)
            mask = np.zeros(len(self._ids), dtype=bool)
            mask[self._slot.slots_of(allowed)] = True
            return cand[mask[cand]]
        ids = self._ids  # test each candidate: O(|candidates|)
        keep = np.fromiter((ids[s] in allowed for s in cand.tolist()), dtype=bool, count=len(cand))
        return cand[keep]

    def _norm_array(self, n_live: int) -> np.ndarray:
        """``k1 * (1 - b + b * dl / avgdl)`` per slot, cached until the next change."""
        n_slots = len(self._ids)
        if self._norm is None or len(self._norm) != n_slots:
            avgdl = self._total_len / n_live
            self._norm = self._k1 * (1.0 - self._b + self._b * self._dl[:n_slots] / avgdl)
        return self._norm
