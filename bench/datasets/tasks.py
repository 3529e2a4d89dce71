"""The shapes every benchmark loader produces: a :class:`Task` is one corpus plus the queries asked of it.

LongMemEval gives one task per question (each question has its own haystack);
LoCoMo gives one task per conversation (its questions share the conversation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plur.errors import ValidationError


@dataclass(frozen=True)
class Query:
    """One retrieval question.

    Attributes:
        qid: question id, unique within the dataset.
        text: the query text sent to recall.
        gold: relevant corpus ids (may be empty: such questions are scored but left out of averages).
        group: the breakdown key for per-group tables (LongMemEval question_type, LoCoMo ``cat1``..``cat5``).
        primary: True if the question counts in the headline average (LongMemEval: not an
            abstention question; LoCoMo: categories 1-4 with evidence).
        scored: False if the question counts in no average at all (LoCoMo: no usable evidence).
        extra: JSON-safe notes copied into the per-question row (e.g. ``has_target``).
        now: when the question is asked (ISO-8601), passed to ``Memory.recall(now=...)`` so dates
            the question names resolve against it; ``None`` = the current time.
    """

    qid: str
    text: str
    gold: frozenset[str]
    group: str
    primary: bool = True
    scored: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    now: str | None = None


@dataclass(frozen=True)
class DocMeta:
    """Provenance of one corpus document, learned with it (contract B of the helper brief).

    Attributes:
        session: conversation session id (unique within the task), or ``None`` for documents that
            are not turns (whole sessions).
        turn: 0-based position of the turn in its session, or ``None``.
        date: ISO-8601 timestamp of the turn / session (becomes the engram's ``created``), or ``None``.
        role: ``user`` / ``assistant`` / ``None``. speaker: the speaker's name, if known.
    """

    session: str | None = None
    turn: int | None = None
    date: str | None = None
    role: str | None = None
    speaker: str | None = None


@dataclass(frozen=True)
class Task:
    """One corpus and the queries asked against it.

    Attributes:
        name: task id (LongMemEval question id, LoCoMo sample id).
        doc_ids: corpus ids, in corpus order (unique).
        texts: document texts, parallel to ``doc_ids``.
        queries: the questions.
        session_of: how a doc id maps to its session for turn->session metrics:
            ``"underscore"`` (LongMemEval, drop the last ``_<n>``), ``"colon"`` (LoCoMo
            ``D3:7 -> D3``) or ``None`` (the docs already are sessions).
        meta: per-document provenance, parallel to ``doc_ids``; empty = none known.
    """

    name: str
    doc_ids: tuple[str, ...]
    texts: tuple[str, ...]
    queries: tuple[Query, ...]
    session_of: str | None = None
    meta: tuple[DocMeta, ...] = ()

    def __post_init__(self) -> None:
        if self.meta and len(self.meta) != len(self.doc_ids):
            raise ValueError(f"task {self.name!r}: {len(self.doc_ids)} ids but {len(self.meta)} meta entries")
        if len(self.doc_ids) != len(self.texts):
            raise ValueError(f"task {self.name!r}: {len(self.doc_ids)} ids but {len(self.texts)} texts")
        if len(set(self.doc_ids)) != len(self.doc_ids):
            raise ValueError(f"task {self.name!r}: corpus ids are not unique")


def read_json(path: str | Path, label: str, fix: str) -> Any:
    """Parse a benchmark data file.

    Args:
        path: the file.
        label: what it should be, for messages (e.g. ``"LoCoMo file"``).
        fix: how to get it, appended to the missing-file message.

    Raises:
        ValidationError: the file is missing or not valid JSON; the message names the path.
    """
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidationError(f"{label} {str(p)!r} does not exist; {fix}") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{label} {str(p)!r} is not valid JSON ({exc})") from None
