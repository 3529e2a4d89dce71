"""LoCoMo loader: one :class:`~bench.datasets.tasks.Task` per conversation (snap-research/LoCoMo, ``data/locomo10.json``).

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

Provenance: every turn carries ``session = "<sample>/D<N>"``, ``turn`` = its 0-based position in the
session and ``date`` = the session's ``session_<N>_date_time`` (``"1:56 pm on 8 May, 2023"``), so
the engine learns it as a conversation turn (neighbouring-turn context, dates). LoCoMo questions
carry no date of their own; they are asked "after the conversation", so ``now`` = the last
session's date.

Categories are reported by number (the README: their names differ between sources);
category 5 (adversarial: it asks about something the conversation does not support,
and stores ``adversarial_answer`` instead of ``answer``) is reported separately
(``primary=False``), the headline average covers categories 1-4.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plur.errors import ValidationError

from .tasks import DocMeta, Query, Task, read_json

GRANULARITIES: tuple[str, ...] = ("session", "turn")
ADVERSARIAL = 5
_SESSION_KEY = re.compile(r"\Asession_(\d+)\Z")
_DIA = re.compile(r"\AD:?(\d+):(\d+)\Z")
_DATE_TIME = re.compile(r"\A\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*\Z", re.I)
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")


def session_date(text: Any) -> str | None:
    """``"1:56 pm on 8 May, 2023"`` -> ``"2023-05-08T13:56:00"`` (LoCoMo's ``session_N_date_time``); None if unparsable."""
    m = _DATE_TIME.match(str(text)) if isinstance(text, str) else None
    if m is None or m.group(5).lower() not in _MONTHS:
        return None
    hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "pm" else 0)
    month = _MONTHS.index(m.group(5).lower()) + 1
    return f"{int(m.group(6)):04d}-{month:02d}-{int(m.group(4)):02d}T{hour:02d}:{int(m.group(2)):02d}:00"


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
    meta: list[DocMeta] = []
    turn_ids: set[str] = set()
    notes: list[str] = []
    dates: list[str] = []
    for n, turns in sessions(conv):
        lines = [turn_text(t) for t in turns]
        turn_ids.update(str(t["dia_id"]) for t in turns)
        when = session_date(conv.get(f"session_{n}_date_time"))
        if when is None:
            notes.append(f"{name} session {n}: date {conv.get(f'session_{n}_date_time')!r} not parsed; no date")
        else:
            dates.append(when)
        if granularity == "turn":
            ids += [str(t["dia_id"]) for t in turns]
            texts += lines
            meta += [DocMeta(session=f"{name}/D{n}", turn=i, date=when, speaker=str(t.get("speaker", "")) or None)
                     for i, t in enumerate(turns)]
        else:
            ids.append(f"D{n}")
            texts.append("\n".join(lines))
            meta.append(DocMeta(date=when))
    asked = max(dates) if dates else None
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
            extra={"category": category, "answer": None if answer is None else str(answer)}, now=asked,
        ))
    task = Task(name=name, doc_ids=tuple(ids), texts=tuple(texts), queries=tuple(queries),
                session_of="colon" if granularity == "turn" else None, meta=tuple(meta))
    return task, notes


def parse_conversations(value: str) -> tuple[int, ...]:
    """``"1-5"`` / ``"6-10"`` / ``"1,3,7-9"`` -> 1-based conversation numbers, sorted, unique.

    Raises:
        ValidationError: a piece that is not a number or a ``lo-hi`` range of numbers >= 1.
    """
    out: set[int] = set()
    for piece in value.split(","):
        piece = piece.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
        if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise ValidationError(f"--conversations {value!r}: use 1-based numbers or ranges such as 1-5 or 1,3,6-10")
        out.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return tuple(sorted(out))


def load_tasks(path: str | Path, granularity: str, *, limit: int | None = None,
               conversations: Sequence[int] | None = None) -> tuple[list[Task], list[str]]:
    """Load ``locomo10.json`` as one task per conversation.

    Args:
        path: the data file.
        granularity: ``session`` or ``turn``.
        limit: keep only the first ``limit`` *questions* overall (conversations are cut accordingly).
        conversations: 1-based numbers of the conversations to keep (file order), e.g. ``(1, 2, 3, 4, 5)``
            for the tuning split; ``None`` = all. Each row records its number (``conversation``).

    Returns:
        ``(tasks, notes)``.

    Raises:
        ValidationError: the file is missing or not a LoCoMo list of samples, or a conversation number
            is past the end of the file.
    """
    p = Path(path)
    data = read_json(p, "LoCoMo file", "pass --data with the path "
                     "of locomo10.json (github.com/snap-research/LoCoMo, data/)")
    if not isinstance(data, list) or not all(isinstance(x, dict) and "qa" in x for x in data):
        raise ValidationError(f"LoCoMo file {str(p)!r} must be a list of samples with 'conversation' and 'qa'")
    if conversations and max(conversations) > len(data):
        raise ValidationError(f"--conversations names {max(conversations)} but {str(p)!r} holds {len(data)}")
    tasks: list[Task] = []
    notes: list[str] = []
    left = limit
    for number, sample in enumerate(data, start=1):
        if conversations and number not in conversations:
            continue
        if left is not None and left <= 0:
            break
        task, n = build_task(sample, granularity)
        queries = tuple(dataclasses.replace(q, extra={**q.extra, "conversation": number}) for q in task.queries)
        if left is not None:
            queries = queries[:left]
            left -= len(queries)
        tasks.append(dataclasses.replace(task, queries=queries))
        notes += n
    return tasks, notes
