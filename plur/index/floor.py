"""The relevance floor: which recalled hits are relevant enough to enter the memory block.

A recall returns its top k however weak they are; the floor marks the hits that carry too little
evidence (:attr:`plur.index.recall.Hit.below_floor` says why), the memory block leaves them out
(:mod:`plur.prompt.selection`) and the statistics count them as "returned below the floor", not as
"recalled" (:mod:`plur.stats.db`). A block may therefore be empty: nothing is padded in.

Why a threshold on the hybrid score means the same for every query: with the default ``weighted``
fusion a hit's score is ``(1 - w) * min(1, bm25 / bm25_full) + w * max(0, cosine)``
(:func:`plur.index.fusion.absolute`), where ``bm25_full`` is what a document matching every query
term once scores for *this* query, and the cosine depends on the query and the engram only. Neither
leg is normalised by the other candidates, so 0.3 is as much evidence for one query as for another.
The cosine's scale is the embedding model's own (all-MiniLM-L6-v2 gives unrelated English text
cosines near 0-0.2, BGE models near 0.3-0.5), so the floor is chosen per model (:data:`CALIBRATED`,
keyed by the model's vector identity up to its revision). A second, relative condition
(``top_ratio``: a hit must score at least that share of the query's best hit) drops the long tail
under a strong match, whatever the scale.

The values in :data:`CALIBRATED` were chosen by the benchmark (``python -m bench.quality.floor``) on LoCoMo
conversations 1-5 and reported on 6-10 and the LongMemEval files; README "Relevance floor".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from .recall import Hit

__all__ = ["CALIBRATED", "Floor", "OFF", "UNCALIBRATED", "BM25_ONLY", "clear_by_parts", "mark", "parse_setting",
           "resolve_floor"]


@dataclass(frozen=True)
class Floor:
    """A relevance floor on the hybrid score (both in [0, 1], higher is better).

    A hit clears it when ``score >= min_score`` and ``score >= top_ratio * best score of the recall``.

    Attributes:
        min_score: absolute floor on :attr:`Hit.score` (0 = none).
        top_ratio: relative floor, a share of the recall's best score (0 = none).
        source: where the values come from (shown by ``plur recall --explain`` and ``plur doctor``).
    """

    min_score: float = 0.0
    top_ratio: float = 0.0
    source: str = "off"

    @property
    def active(self) -> bool:
        """False when nothing can be kept out."""
        return self.min_score > 0 or self.top_ratio > 0

    def reason(self, score: float, top: float) -> str:
        """Why a hit of ``score`` (best of its recall: ``top``) is kept out; '' when it clears the floor."""
        if score < self.min_score:
            return f"score {score:.3f} < floor {self.min_score:.3f} ({self.source})"
        if self.top_ratio > 0 and score < self.top_ratio * top:
            return (f"score {score:.3f} < {self.top_ratio:.2f} x best {top:.3f} = {self.top_ratio * top:.3f} "
                    f"({self.source})")
        return ""

    def to_dict(self) -> dict[str, object]:
        """``{"min_score", "top_ratio", "source"}``."""
        return {"min_score": self.min_score, "top_ratio": self.top_ratio, "source": self.source}


OFF = Floor(0.0, 0.0, "off")
#: Floors chosen by the benchmark, by the embedding model's vector identity up to its revision
#: (``name@rev7``, the first field of :attr:`plur.embed.models_lock.ModelSpec.identity`).
#: all-MiniLM-L6-v2 (LoCoMo conversations 1-5, turn level, default path, ``python -m bench.quality.floor``):
#: ``top_ratio`` 0.66 is the largest share that keeps >= 98% of the gold notes the unfloored block
#: holds (98.2%; 22% fewer notes; held out, conversations 6-10: 98.5% kept, 20% fewer notes).
#: ``min_score`` 0.21 = ``dense_weight`` (0.6) x 0.356, the 99th percentile of the cosine between a
#: question and a turn of another conversation (LoCoMo conversations 1-2 questions x 3-5 turns,
#: ``python -m bench.quality.floor_noise``): a note with no lexical evidence clears it only when it is more
#: similar than 99% of unrelated pairs. (LoCoMo's own candidates cannot place the absolute part:
#: names and dates give every turn lexical evidence, and no gold note is lost below 0.32 there.)
#: README "Relevance floor".
CALIBRATED: dict[str, Floor] = {
    "sentence-transformers/all-MiniLM-L6-v2@1110a24": Floor(0.21, 0.66, "calibrated for all-MiniLM-L6-v2"),
}
#: BM25 only (no model; ``mode='bm25'``): the score is ``min(1, bm25 / bm25_full)``; chosen the same
#: way on the BM25 leg's rows (0.34 / 0.62: 98.2% of gold kept on conversations 1-5, 96.6% on 6-10).
BM25_ONLY = Floor(0.34, 0.62, "BM25-only default")
#: A model without a calibrated floor (e.g. BAAI/bge-small-en-v1.5, the default, whose weights are not
#: available where the benchmark ran): looser on both parts than the calibrated floor, so it errs
#: towards showing a note. BGE's cosines sit higher for unrelated text (about 0.3-0.5), which raises
#: every hit's share of the best score: the relative part keeps more, never less, than on MiniLM.
UNCALIBRATED = Floor(0.15, 0.50, "uncalibrated model: lenient default")


def parse_setting(value: str) -> float | None:
    """The ``relevance_floor`` setting: ``'auto'`` -> ``None``, ``'off'`` -> 0.0, a number in [0, 1] -> it.

    Raises:
        ConfigError: anything else (the message names the value and the accepted forms).
    """
    text = str(value).strip().lower()
    if text == "auto":
        return None
    if text == "off":
        return 0.0
    try:
        x = float(text)
    except ValueError:
        x = float("nan")
    if not 0.0 <= x <= 1.0:
        raise ConfigError(f"setting relevance_floor={value!r} must be 'auto', 'off' or a number from 0 to 1 "
                          "(a hybrid score)")
    return x


def resolve_floor(setting: str, model_identity: str | None, mode: str = "hybrid") -> Floor:
    """The floor a recall applies.

    Args:
        setting: the ``relevance_floor`` setting (``auto``, ``off`` or a number).
        model_identity: the dense leg's vector identity (``None``: no model, BM25 only).
        mode: the recall mode actually used (``hybrid``, ``bm25``; ``dense`` scores are bare cosines).

    Returns:
        A :class:`Floor`; :data:`OFF` for ``off`` and for ``dense`` mode under ``auto``.
    """
    value = parse_setting(setting)
    if value is not None:
        return OFF if value == 0 else Floor(value, 0.0, f"setting relevance_floor={value:g}")
    if mode == "bm25" or model_identity is None:
        return BM25_ONLY
    if mode == "dense":
        return OFF
    return CALIBRATED.get(model_identity.split(":")[0], UNCALIBRATED)


def mark(hits: Sequence[Hit], floor: Floor) -> list[Hit]:
    """Set :attr:`Hit.below_floor` on the hits that do not clear ``floor`` (others get '').

    Pure; ranks and scores are unchanged. The relative part compares with the best score of ``hits``.
    """
    if not hits:
        return []
    top = max(h.score for h in hits)
    out = []
    for h in hits:
        why = floor.reason(h.score, top) if floor.active else ""
        out.append(h if why == h.below_floor else dataclasses.replace(h, below_floor=why))
    return out


def clear_by_parts(hits: Sequence[Hit], parts: Sequence[tuple[str, Mapping[str, float]]], floor: Floor) -> list[Hit]:
    """Judge again, against each question of a compound query alone (:mod:`plur.index.parts`), the hits ``floor``
    kept out for the whole query: a hit clears it when its score for one question clears the floor of that
    question's own recall (``min_score``, and ``top_ratio`` of that recall's best score); it gets ``below_floor``
    '' and ``answers`` = that question. Ranks and scores (the whole query's) are unchanged; pure.

    Args:
        hits: the whole query's hits, already marked (:func:`mark`).
        parts: ``(question, {engram id: score})`` per question, each from a recall of that question alone.
        floor: the floor the whole query's hits were marked with.
    """
    if not floor.active or not parts or not any(h.below_floor for h in hits):
        return list(hits)
    out = []
    for h in hits:
        if h.below_floor:
            for question, scores in parts:
                got = scores.get(h.engram.id)
                if got is not None and not floor.reason(got, max(scores.values())):
                    h = dataclasses.replace(h, below_floor="", answers=question)
                    break
        out.append(h)
    return out
