"""LongMemEval loader: one :class:`~bench.tasks.Task` per question, built as the official retrieval code does.

Source of the protocol: xiaowu0162/LongMemEval ``src/retrieval/run_retrieval.py``
(``process_item_flat_index`` and the gold line ``correct_docs = [id for id in corpus_ids
if "answer" in id]``) and ``src/retrieval/eval_utils.py`` (the metrics, see
:mod:`bench.metrics`):

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

Accepted inputs: the original JSON (a list of question objects with ``question``,
``answer``, ``answer_session_ids``...), and the grouped variant kept in
``shared/data/longmemeval`` (``questions`` / ``answers`` / ``answer_session_ids`` as lists),
of which only the first question of each item is used, and only when it is the original
LongMemEval question (its ``answer_session_ids[0]`` are ``answer_*`` sessions); other
items are skipped with a note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plur.errors import ValidationError

from .tasks import Query, Task, read_json

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


def build_task(entry: Mapping[str, Any], granularity: str, include_assistant: bool = False) -> Task:
    """One question -> its :class:`Task` (corpus from its own haystack, gold by the official rule).

    Raises:
        ValidationError: unknown granularity, or two documents with the same id.
    """
    texts: list[str] = []
    ids: list[str] = []
    for sess_id, session in zip(entry["haystack_session_ids"], entry["haystack_sessions"]):
        t, i = flat_index(session, granularity, str(sess_id), include_assistant)
        texts += t
        ids += i
    if len(set(ids)) != len(ids):
        dup = sorted({x for x in ids if ids.count(x) > 1})[:3]
        raise ValidationError(f"question {entry['question_id']!r}: duplicate corpus ids {dup}")
    gold = frozenset(d for d in ids if "answer" in d)
    qid = str(entry["question_id"])
    abstention = "_abs" in qid
    has_target = any(t.get("has_answer") is True for s in entry["haystack_sessions"] for t in s
                     if t.get("role") == "user")
    qtype = str(entry.get("question_type", "unknown"))
    query = Query(qid=qid, text=str(entry["question"]), gold=gold,
                  group="abstention" if abstention else qtype, primary=not abstention,
                  extra={"question_type": qtype, "abstention": abstention, "has_target": has_target})
    return Task(name=qid, doc_ids=tuple(ids), texts=tuple(texts), queries=(query,),
                session_of="underscore" if granularity == "turn" else None)


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
    tasks = [build_task(e, granularity, include_assistant) for e in entries]
    n_abs = sum(1 for t in tasks if not t.queries[0].primary)
    if n_abs:
        notes.append(f"{n_abs} abstention question(s) scored but left out of the headline average")
    return tasks, notes


def iter_queries(tasks: Iterable[Task]) -> Iterable[Query]:
    """All queries of ``tasks`` in order."""
    for task in tasks:
        yield from task.queries
