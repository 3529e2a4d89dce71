"""How an engram is cut into dense chunks: conversation turns in small pieces, each naming its speaker.

A conversation turn (an engram with conversation provenance, :func:`~plur.index.context.conversation_key`)
is embedded in chunks of ``turn_chunk_tokens`` tokens (default 32, about one sentence) instead of
``embed_chunk_tokens`` (96); its cosine is its best chunk's (MaxP, Dai & Callan, SIGIR 2019), so a
question about one thing said in a long turn meets that sentence rather than the turn's average.
With ``chunk_speaker`` on, each chunk of a turn whose ``source.speaker`` is known starts with
``"<speaker>: "`` (a chunk header, as the turn's first words do in LoCoMo-style transcripts), so a
piece cut from the middle of a turn still says who said it: questions name people.

Chosen on LoCoMo conversations 1-5 (turn level, default path, packaged MiniLM): R_any@5 / NDCG_any@5 /
R_any@10 0.750 / 0.605 / 0.862 with 96-token chunks, 0.775 / 0.618 / 0.859 with 32-token chunks,
0.787 / 0.633 / 0.866 with 32-token chunks and the speaker header (README "Benchmark results").

Pure functions of an engram and the settings; the index passes their result to the embedder
(:meth:`plur.embed.cache.CachedEmbedder.embed_document_chunks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .context import conversation_key

__all__ = ["Layout", "dense_key", "embed_engrams", "layout", "layout_identity"]

#: ``(tokens per chunk or None = the embedder's default, header or None)``.
Layout = tuple[int | None, str | None]
_PLAIN: Layout = (None, None)


def layout(engram: Any, settings: Any) -> Layout:
    """The chunk size and header of ``engram``'s dense chunks (``(None, None)`` = the defaults)."""
    if conversation_key(engram) is None:
        return _PLAIN
    tokens = int(settings.turn_chunk_tokens) or None
    speaker = engram.source.get("speaker") if isinstance(engram.source, Mapping) else None
    header = f"{speaker.strip()}: " if settings.chunk_speaker and isinstance(speaker, str) and speaker.strip() else None
    return tokens, header


def dense_key(engram: Any, settings: Any) -> str:
    """What an engram's vectors depend on: its content hash, plus its layout when that is not the default.

    A provenance edit that changes the layout (a speaker added) re-embeds the engram.
    """
    tokens, header = layout(engram, settings)
    if (tokens, header) == _PLAIN:
        return str(engram.content_hash)
    return f"{engram.content_hash}|t{tokens or 0}|h{header or ''}"


def layout_identity(settings: Any) -> str:
    """The layout rule in the dense index's identity, e.g. ``"|turns=32+speaker"`` (a change rebuilds the index)."""
    return f"|turns={int(settings.turn_chunk_tokens)}{'+speaker' if settings.chunk_speaker else ''}"


def embed_engrams(embedder: Any, engrams: Sequence[Any], settings: Any) -> tuple[Any, Any]:
    """Embed ``engrams``' statements by their layouts: (``[m, dims] float32``, ``[m] int64`` owners).

    An embedder without per-text layouts (no ``document_chunks``: a bare model in a test) gets
    the plain statements.
    """
    texts = [e.statement for e in engrams]
    layouts = [layout(e, settings) for e in engrams]
    if not hasattr(embedder, "document_chunks") or all(x == _PLAIN for x in layouts):
        return embedder.embed_document_chunks(texts)
    return embedder.embed_document_chunks(texts, [t for t, _ in layouts], [h for _, h in layouts])
