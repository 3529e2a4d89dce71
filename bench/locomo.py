"""LoCoMo loader: one :class:`~bench.tasks.Task` per conversation (snap-research/LoCoMo, ``data/locomo10.json``).

Corpus (per conversation, its questions share it):

* turn granularity: one document per dialog turn, id = its ``dia_id`` (``D<session>:<turn>``),
  text = ``"<speaker>: <text>"`` plus ``" [image: <blip_caption>]"`` when the turn shares an image;
* session granularity: one document per ``session_<N>`` list, id ``D<N>``, its turn texts joined
  with newlines.

Query = ``question``; gold = its ``evidence`` dia_ids (at session granularity: their sessions).
Evidence is normalised as the dataset README (shared/data/locomo/README.md) requires:
several ids packed in one string are split (``'D8:6; D9:17'``), bad syntax is repaired
where unambiguous (``'D:11:26' -> 'D11:26'``, ``'D30:05' -> 'D30:5'``), and ids that do not
parse (``'D'``) or name no turn of the conversation (``'D10:19'`` in conv-42) are dropped.
A question left with no evidence is scored but kept out of averages.

Categories are reported by number (the README: their names differ between sources);
category 5 (adversarial: it asks about something the conversation does not support,
and stores ``adversarial_answer`` instead of ``answer``) is reported separately
(``primary=False``), the headline average covers categories 1-4.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from plur.errors import ValidationError

from .tasks import Query, Task, read_json

GRANULARITIES: tuple[str, ...] = ("session", "turn")
ADVERSARIAL = 5
_SESSION_KEY = re.compile(r"\Asession_(\d+)\Z")
_DIA = re.compile(r"\AD:?(\d+):(\d+)\Z")


def turn_text(turn: Mapping[str, Any]) -> str:
    """``"<speaker>: <text>"`` plus ``" [image: <blip caption>]"`` when the turn has one."""
    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [image: {caption}]"
    return text


def sessions(conversation: Mapping[str, Any]) -> list[tuple[int, list[Mapping[str, Any]]]]:
    """``[(N, turns)]`` for every ``session_N`` *list* key, by N (orphan ``_date_time`` keys ignored)."""
    out = []
    for key, value in conversation.items():
        m = _SESSION_KEY.match(key)
        if m and isinstance(value, list):
            out.append((int(m.group(1)), value))
    return sorted(out, key=lambda x: x[0])


def normalize_evidence(evidence: Iterable[Any], valid: set[str]) -> tuple[list[str], list[str]]:
    """Repair and filter evidence ids.

    Args:
        evidence: the raw ``evidence`` list.
        valid: the conversation's dia_ids.

    Returns:
        ``(kept, dropped)``: kept = normalised ids that name a turn (order kept, no
        duplicates); dropped = raw pieces that did not parse or name no turn.
    """
    kept: list[str] = []
    dropped: list[str] = []
    for raw in evidence:
        for piece in re.split(r"[;,\s]+", str(raw).strip()):
            if not piece:
                continue
            m = _DIA.match(piece)
            norm = f"D{int(m.group(1))}:{int(m.group(2))}" if m else None
            if norm is None or norm not in valid:
                dropped.append(piece)
            elif norm not in kept:
                kept.append(norm)
    return kept, dropped


def build_task(sample: Mapping[str, Any], granularity: str) -> tuple[Task, list[str]]:
    """One conversation -> its :class:`Task` and notes about repaired/dropped evidence.

    Raises:
        ValidationError: unknown granularity or a malformed sample.
    """
    if granularity not in GRANULARITIES:
        raise ValidationError(f"granularity {granularity!r} is not one of {', '.join(GRANULARITIES)}")
    name = str(sample.get("sample_id", "?"))
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise ValidationError(f"LoCoMo sample {name!r} has no 'conversation' object")
    ids: list[str] = []
    texts: list[str] = []
    turn_ids: set[str] = set()
    for n, turns in sessions(conv):
        lines = [turn_text(t) for t in turns]
        turn_ids.update(str(t["dia_id"]) for t in turns)
        if granularity == "turn":
            ids += [str(t["dia_id"]) for t in turns]
            texts += lines
        else:
            ids.append(f"D{n}")
            texts.append("\n".join(lines))
    notes: list[str] = []
    queries = []
    for i, qa in enumerate(sample.get("qa", [])):
        evidence = qa.get("evidence", [])
        kept, dropped = normalize_evidence(evidence, turn_ids)
        if dropped or [str(e) for e in evidence] != kept:
            notes.append(f"{name} q{i}: evidence {evidence!r} -> {kept!r}")
        gold = frozenset(kept) if granularity == "turn" else frozenset(k.split(":")[0] for k in kept)
        category = int(qa.get("category", 0))
        answer = qa.get("answer", qa.get("adversarial_answer"))
        queries.append(Query(
            qid=f"{name}/q{i}", text=str(qa.get("question", "")), gold=gold,
            group=f"cat{category}" if gold else "no-evidence",
            primary=category != ADVERSARIAL and bool(gold), scored=bool(gold),
            extra={"category": category, "answer": None if answer is None else str(answer)},
        ))
    task = Task(name=name, doc_ids=tuple(ids), texts=tuple(texts), queries=tuple(queries),
                session_of="colon" if granularity == "turn" else None)
    return task, notes


def load_tasks(path: str | Path, granularity: str, *, limit: int | None = None) -> tuple[list[Task], list[str]]:
    """Load ``locomo10.json`` as one task per conversation.

    Args:
        path: the data file.
        granularity: ``session`` or ``turn``.
        limit: keep only the first ``limit`` *questions* overall (conversations are cut accordingly).

    Returns:
        ``(tasks, notes)``.

    Raises:
        ValidationError: the file is missing or not a LoCoMo list of samples.
    """
    p = Path(path)
    data = read_json(p, "LoCoMo file", "pass --data with the path "
                     "of locomo10.json (github.com/snap-research/LoCoMo, data/)")
    if not isinstance(data, list) or not all(isinstance(x, dict) and "qa" in x for x in data):
        raise ValidationError(f"LoCoMo file {str(p)!r} must be a list of samples with 'conversation' and 'qa'")
    tasks: list[Task] = []
    notes: list[str] = []
    left = limit
    for sample in data:
        if left is not None and left <= 0:
            break
        task, n = build_task(sample, granularity)
        if left is not None:
            task = Task(task.name, task.doc_ids, task.texts, task.queries[:left], task.session_of)
            left -= len(task.queries)
        tasks.append(task)
        notes += n
    return tasks, notes
