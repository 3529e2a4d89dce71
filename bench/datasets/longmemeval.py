"""LongMemEval loader: one :class:`~bench.datasets.tasks.Task` per question, built as the official retrieval code does.

Source of the protocol: xiaowu0162/LongMemEval ``src/retrieval/run_retrieval.py``
(``process_item_flat_index`` and the gold line ``correct_docs = [id for id in corpus_ids
if "answer" in id]``) and ``src/retrieval/eval_utils.py`` (the metrics, see
:mod:`bench.quality.metrics`):

* session granularity: one document per haystack session, the session's *user* turns
  joined with a space, id = session id;
* turn granularity: one document per user turn, id ``<session id>_<turn index + 1>``
  (the index counts every turn of the session, user and assistant);
* relabelling: in a session whose id contains ``answer``, a unit with no ``has_answer``
  user turn gets ``answer`` replaced by ``noans`` in its id (a session with no such
  turn; a turn whose ``has_answer`` is false). Gold = the set of corpus ids that still
  contain ``answer``. Note the official quirk this keeps: at turn level, turn
  ``answer_x_1_3`` may be relabelled ``noans_x_1_3``, which the turn->session metric
  then maps to a session ``noans_x_1`` distinct from ``answer_x_1``.
* averages: the official README and ``print_retrieval_metrics.py`` skip the 30 abstention
  questions (``_abs`` in the id), giving n=470 on LongMemEval-S; the later
  ``run_retrieval.py`` (commit b60a5b7) additionally skips questions without any
  user-side ``has_answer`` turn. Rows carry ``abstention`` and ``has_target`` so both
  averages can be reported; the headline one is n=470 (``primary``).

``include_assistant`` is *not* an official option: it adds assistant turns to the
session text and as turn documents, relabelled by the same rule applied to every included
turn. Results produced with it are labelled as such.

Robustness: the official files are cleaned before indexing (:func:`clean_sessions`): a session
listed twice is kept once, non-string content becomes text, missing ``has_answer`` reads as false,
non-list sessions are empty; every repair is a note in the run's manifest, never an abort.
Turn documents carry provenance (session, turn, ``haystack_dates``) and the question its
``question_date`` (``now`` for date resolution).

Accepted inputs: the original JSON (a list of question objects with ``question``,
``answer``, ``answer_session_ids``...), and the grouped variant kept in
``shared/data/longmemeval`` (``questions`` / ``answers`` / ``answer_session_ids`` as lists),
of which only the first question of each item is used, and only when it is the original
LongMemEval question (its ``answer_session_ids[0]`` are ``answer_*`` sessions); other
items are skipped with a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plur.errors import ValidationError

from .tasks import DocMeta, Query, Task, read_json

GRANULARITIES: tuple[str, ...] = ("session", "turn")


def load_entries(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Read a LongMemEval file into question entries in the original field format.

    Args:
        path: a ``.json`` file: the original list of questions, or the grouped variant.

    Returns:
        ``(entries, notes)``: entries with ``question_id, question_type, question,
        answer, haystack_session_ids, haystack_sessions, haystack_dates,
        answer_session_ids``; notes are human-readable remarks (skipped items...).

    Raises:
        ValidationError: the file is missing, not JSON, or not a list of question objects.
    """
    p = Path(path)
    data = read_json(p, "LongMemEval file", "pass --data with a path "
                     "(scripts/fetch_longmemeval.py downloads LongMemEval-S)")
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValidationError(f"LongMemEval file {str(p)!r} must hold a JSON list of question objects")
    entries: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, item in enumerate(data):
        if "question" in item:
            entry = dict(item)
        elif isinstance(item.get("questions"), list):
            entry = _ungroup(item)
            if entry is None:
                notes.append(f"skipped grouped item {item.get('question_id')!r}: its first question is not the "
                             "original LongMemEval question (answer_session_ids[0] are not answer_* sessions)")
                continue
        else:
            raise ValidationError(f"item {i} of {str(p)!r} has neither 'question' nor 'questions'; "
                                  "is this a LongMemEval file?")
        missing = [k for k in ("question_id", "haystack_session_ids", "haystack_sessions") if k not in entry]
        if missing:
            raise ValidationError(f"item {i} of {str(p)!r} lacks {', '.join(missing)}")
        entries.append(entry)
    return entries, notes


def _ungroup(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The grouped variant's first question in the original format, or None if it is not original."""
    questions, answers = item["questions"], item.get("answers") or [None]
    sess = item.get("answer_session_ids") or [[]]
    first_ids = sess[0] if sess and isinstance(sess[0], list) else []
    if not questions or not first_ids or not all("answer" in s for s in first_ids):
        return None
    entry = {k: v for k, v in item.items() if k not in ("questions", "answers", "answer_session_ids")}
    entry.update(question=questions[0], answer=answers[0], answer_session_ids=list(first_ids))
    return entry


_DATE = re.compile(r"\A\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*\Z")


def haystack_date(text: Any) -> str | None:
    """``"2023/05/20 (Sat) 02:21"`` (LongMemEval's ``haystack_dates`` / ``question_date``) -> ISO-8601, or None."""
    m = _DATE.match(text) if isinstance(text, str) else None
    if m is None:
        return None
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hh, mm = int(m.group(4) or 0), int(m.group(5) or 0)
    if not (1 <= mo <= 12 and 1 <= d <= 31 and hh < 24 and mm < 60):
        return None
    return f"{y:04d}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:00"


def content_text(content: Any) -> tuple[str, bool]:
    """A turn's ``content`` as text, and whether it had to be converted.

    ``str`` as is; ``None`` -> ``""``; a list of message parts (``{"type": "text", "text": ...}``
    or strings) -> their texts joined by a space; anything else -> ``str(content)``. The official
    code would fail on non-string content (``' '.join``), so a converted turn is noted.
    """
    if isinstance(content, str):
        return content, False
    if content is None:
        return "", True
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else str(p.get("text", "")) if isinstance(p, Mapping) else str(p)
                 for p in content]
        return " ".join(p for p in parts if p), True
    return str(content), True


def clean_sessions(entry: Mapping[str, Any], notes: list[str]) -> list[tuple[str, list[Mapping[str, Any]], str | None]]:
    """``[(session id, turns, ISO date)]`` of one question's haystack, made safe to index.

    What the official files may hold and how it is handled (each case adds a note):

    * a session id listed twice (LongMemEval-S cleaned has one: same content, two dates): the first
      copy is kept, the repeat dropped. plur's store merges identical statements anyway, and the
      official scorer's only difference (the ideal DCG counting a gold session twice) is an artefact;
    * ``haystack_sessions`` and ``haystack_session_ids`` of different lengths: the extra ones are dropped;
    * a session that is not a list (``null``), or turns that are not objects: treated as empty / skipped;
    * non-string ``content``: converted by :func:`content_text`;
    * a missing ``has_answer`` (the official turn-level code asserts it in answer sessions): read as false.
    """
    qid = entry.get("question_id")
    ids = list(entry.get("haystack_session_ids") or [])
    sessions = list(entry.get("haystack_sessions") or [])
    dates = list(entry.get("haystack_dates") or [])
    if len(ids) != len(sessions):
        notes.append(f"question {qid!r}: {len(ids)} haystack_session_ids but {len(sessions)} haystack_sessions; "
                     f"scored the first {min(len(ids), len(sessions))}")
    out: list[tuple[str, list[Mapping[str, Any]], str | None]] = []
    seen: dict[str, int] = {}
    converted = missing_flag = 0
    for j, (sid, session) in enumerate(zip(ids, sessions)):
        sid = str(sid)
        when = haystack_date(dates[j]) if j < len(dates) else None
        if sid in seen:
            same = sessions[seen[sid]] == session
            notes.append(f"question {qid!r}: session {sid!r} listed twice in haystack_session_ids "
                         f"({'same' if same else 'different'} content); the repeat at position {j} was dropped")
            continue
        seen[sid] = j
        if not isinstance(session, list):
            notes.append(f"question {qid!r}: session {sid!r} is {type(session).__name__}, not a list of turns; "
                         "indexed as empty")
            session = []
        turns: list[Mapping[str, Any]] = []
        for i, turn in enumerate(session):
            if not isinstance(turn, Mapping):
                notes.append(f"question {qid!r}: session {sid!r} turn {i} is not an object; skipped")
                turns.append({"role": None, "content": ""})   # keeps the official turn numbering
                continue
            text, changed = content_text(turn.get("content"))
            converted += changed
            if "answer" in sid and turn.get("role") == "user" and "has_answer" not in turn:
                missing_flag += 1
            turns.append({**turn, "content": text})
        out.append((sid, turns, when))
    if converted:
        notes.append(f"question {qid!r}: {converted} turn(s) with non-string content converted to text")
    if missing_flag:
        notes.append(f"question {qid!r}: {missing_flag} user turn(s) of answer sessions lack has_answer; read as false")
    return out


def flat_index(session: Sequence[Mapping[str, Any]], granularity: str, sess_id: str,
               include_assistant: bool = False) -> tuple[list[str], list[str]]:
    """Documents and ids of one haystack session (official ``process_item_flat_index``).

    Args:
        session: the session's turns, ``{"role", "content", ["has_answer"]}``.
        granularity: ``session`` or ``turn``.
        sess_id: the haystack session id.
        include_assistant: also index assistant turns (not an official option).

    Returns:
        ``(texts, ids)``, parallel lists.
    """
    roles = ("user", "assistant") if include_assistant else ("user",)
    kept = [(i, t) for i, t in enumerate(session) if t.get("role") in roles]
    if granularity == "session":
        text = " ".join(str(t.get("content", "")) for _, t in kept)
        doc_id = sess_id
        if "answer" in sess_id and not any(t.get("has_answer") is True for _, t in kept):
            doc_id = sess_id.replace("answer", "noans")
        return [text], [doc_id]
    if granularity == "turn":
        texts, ids = [], []
        for i, turn in kept:
            texts.append(str(turn.get("content", "")))
            doc_id = f"{sess_id}_{i + 1}"
            if "answer" in sess_id and turn.get("has_answer") is not True:
                doc_id = doc_id.replace("answer", "noans")
            ids.append(doc_id)
        return texts, ids
    raise ValidationError(f"granularity {granularity!r} is not one of {', '.join(GRANULARITIES)}")


def build_task(entry: Mapping[str, Any], granularity: str, include_assistant: bool = False,
               notes: list[str] | None = None) -> Task:
    """One question -> its :class:`Task` (corpus from its own haystack, gold by the official rule).

    Turn documents carry their provenance (session id, 0-based turn index, session date) and the
    query its ``question_date`` as ``now``. The haystack is cleaned first (:func:`clean_sessions`);
    what was repaired is appended to ``notes``.

    Raises:
        ValidationError: unknown granularity, or two documents with the same id left after cleaning.
    """
    notes = notes if notes is not None else []
    texts: list[str] = []
    ids: list[str] = []
    meta: list[DocMeta] = []
    haystack = clean_sessions(entry, notes)
    for sess_id, session, when in haystack:
        t, i = flat_index(session, granularity, sess_id, include_assistant)
        texts += t
        ids += i
        if granularity == "turn":
            roles = ("user", "assistant") if include_assistant else ("user",)
            meta += [DocMeta(session=sess_id, turn=n, date=when, role=str(turn.get("role")))
                     for n, turn in enumerate(session) if turn.get("role") in roles]
        else:
            meta.append(DocMeta(date=when))
    if len(set(ids)) != len(ids):
        dup = sorted({x for x in ids if ids.count(x) > 1})[:3]
        raise ValidationError(f"question {entry['question_id']!r}: duplicate corpus ids {dup}")
    gold = frozenset(d for d in ids if "answer" in d)
    qid = str(entry["question_id"])
    abstention = "_abs" in qid
    has_target = any(t.get("has_answer") is True for _, s, _ in haystack for t in s if t.get("role") == "user")
    qtype = str(entry.get("question_type", "unknown"))
    query = Query(qid=qid, text=content_text(entry["question"])[0], gold=gold,
                  group="abstention" if abstention else qtype, primary=not abstention,
                  extra={"question_type": qtype, "abstention": abstention, "has_target": has_target},
                  now=haystack_date(entry.get("question_date")))
    return Task(name=qid, doc_ids=tuple(ids), texts=tuple(texts), queries=(query,),
                session_of="underscore" if granularity == "turn" else None, meta=tuple(meta))


def load_tasks(path: str | Path, granularity: str, *, include_assistant: bool = False,
               limit: int | None = None) -> tuple[list[Task], list[str]]:
    """Load a LongMemEval file as tasks; see :func:`load_entries` and :func:`build_task`.

    Args:
        path: the data file.
        granularity: ``session`` or ``turn``.
        include_assistant: index assistant turns too (labelled, not official).
        limit: keep only the first ``limit`` questions.

    Returns:
        ``(tasks, notes)``.
    """
    if granularity not in GRANULARITIES:
        raise ValidationError(f"granularity {granularity!r} is not one of {', '.join(GRANULARITIES)}")
    entries, notes = load_entries(path)
    if limit is not None:
        entries = entries[:limit]
    tasks = [build_task(e, granularity, include_assistant, notes) for e in entries]
    n_abs = sum(1 for t in tasks if not t.queries[0].primary)
    if n_abs:
        notes.append(f"{n_abs} abstention question(s) scored but left out of the headline average")
    return tasks, notes


def iter_queries(tasks: Iterable[Task]) -> Iterable[Query]:
    """All queries of ``tasks`` in order."""
    for task in tasks:
        yield from task.queries
