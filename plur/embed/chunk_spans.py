"""Where a text's chunks start and end, kept in the embedding cache beside its vectors.

Cutting a text into chunks (:meth:`plur.embed.embedder.SentenceTransformerEmbedder.chunk_texts`) tokenizes it for
the character offsets of its tokens; only then are the chunks' vectors looked up in the cache. A build of the indexes
from cached embeddings tokenized every statement again for that alone: 12.6 s of the 72 s of CPU of a 100k-engram
build (issue 49, load ~8). The spans depend only on the text, the model's tokenizer (its identity) and the window, so
they are kept in the cache's SQLite file, table ``chunk_spans(identity, text_sha256, window, spans)``: ``spans``
is the ``[2m] int32`` character offsets ``a0, b0, a1, b1, ...`` of a text cut into ``m > 1`` chunks, or empty for a
text that is one chunk. A cache file without the table (written before it) gets it on first use; older plur
versions never read it. :meth:`plur.embed.cache.EmbeddingCache.forget` and ``clear`` remove a text's spans with
its vectors.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["SCHEMA", "cached_chunks"]

SCHEMA = ("CREATE TABLE IF NOT EXISTS chunk_spans (identity TEXT NOT NULL, text_sha256 BLOB NOT NULL, "
          "window INTEGER NOT NULL, spans BLOB NOT NULL, PRIMARY KEY (identity, text_sha256, window)) WITHOUT ROWID")
_BATCH = 500


def _spans_of(text: str, chunks: list[str]) -> bytes:
    """The ``spans`` blob of ``text`` cut into ``chunks`` (slices of it, in order); ``b""`` when it is one chunk."""
    if len(chunks) == 1 and chunks[0] == text:
        return b""
    out, at = [], 0
    for c in chunks:
        a = text.find(c, at) if c else at
        if a < 0:  # not a slice of the text (never, for the tokenizer's offsets): keep it uncached
            raise ValueError("chunk is not a slice of its text")
        out += [a, a + len(c)]
        at = a + 1 if c else a
    return np.asarray(out, dtype=np.int32).tobytes()


def cached_chunks(cache: Any, identity: str, window: int, texts: Sequence[str], keys: Sequence[bytes],
                  cut: Callable[[list[str]], tuple[list[str], np.ndarray]]) -> tuple[list[str], np.ndarray]:
    """``cut(texts)``, taking the spans of texts cut before from ``cache`` and cutting (and keeping) only the rest.

    Args:
        cache: an :class:`~plur.embed.cache.EmbeddingCache` (its connection and lock are used).
        identity: the model identity (its tokenizer cuts the texts). window: what else the cut depends on
            (tokens per chunk; 0 = the model's limit).
        texts: the documents; ``keys``: their :func:`~plur.embed.cache.text_key` digests.
        cut: the tokenizing cut, ``texts -> (chunks, owners)`` as ``chunk_texts`` returns them.

    Returns:
        (chunks, owners) exactly as ``cut(texts)`` would return them.
    """
    spans: dict[bytes, bytes] = {}
    with cache._lock:
        try:
            for start in range(0, len(keys), _BATCH):
                part = list(dict.fromkeys(keys[start:start + _BATCH]))
                rows = cache._conn.execute(
                    f"SELECT text_sha256, spans FROM chunk_spans WHERE identity = ? AND window = ? AND text_sha256 "
                    f"IN ({','.join('?' * len(part))})", [identity, int(window), *part]).fetchall()
                spans.update((bytes(k), bytes(s)) for k, s in rows)
        except sqlite3.Error:  # a read-only cache without the table, a locked file: cut everything
            spans = {}
    todo = [i for i, k in enumerate(keys) if k not in spans]
    fresh: dict[int, list[str]] = {}
    if todo:
        chunks, owners = cut([texts[i] for i in todo])
        for c, o in zip(chunks, owners.tolist()):
            fresh.setdefault(todo[o], []).append(c)
        rows = []
        for i, got in fresh.items():
            try:
                rows.append((identity, keys[i], int(window), _spans_of(texts[i], got)))
            except ValueError:
                continue
        if rows and cache.writable:
            with cache._lock:
                try:
                    cache._conn.execute("BEGIN IMMEDIATE")
                    cache._conn.executemany("INSERT OR REPLACE INTO chunk_spans VALUES (?, ?, ?, ?)", rows)
                    cache._conn.execute("COMMIT")
                except sqlite3.Error:  # the spans are only a shortcut: never fail the caller for them
                    if cache._conn.in_transaction:
                        cache._conn.execute("ROLLBACK")
    out: list[str] = []
    own: list[int] = []
    for i, text in enumerate(texts):
        got = fresh.get(i)
        if got is None:
            blob = spans.get(keys[i], b"")
            if blob:
                ab = np.frombuffer(blob, dtype=np.int32).tolist()
                got = [text[ab[j]:ab[j + 1]] for j in range(0, len(ab), 2)]
            else:
                got = [text]
        out += got
        own += [i] * len(got)
    return out, np.asarray(own, dtype=np.int64)
