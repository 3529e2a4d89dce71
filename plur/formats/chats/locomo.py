"""LoCoMo conversations (Maharana et al., ACL 2024; github.com/snap-research/LoCoMo ``data/locomo10.json``).

The file is a JSON list of samples (or one sample). A sample has ``sample_id`` and ``conversation``:
``speaker_a``, ``speaker_b``, ``session_<N>`` (a list of ``{"speaker", "dia_id", "text",
"img_url"?, "blip_caption"?}``) and ``session_<N>_date_time`` (``"1:56 pm on 8 May, 2023"``).
Both speakers are people, so every turn is a ``user`` turn with its ``speaker``; the text is
``"<speaker>: <text>"`` plus ``" [image: <blip_caption>]"`` when the turn shares an image (the
caption is all the dataset keeps of it). Session id = ``<sample_id>:session_<N>``; turn = the turn's
position in the session; time = the session's date.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .turns import Turn, need, parse_when

NAME = "locomo"
_SESSION_KEY = re.compile(r"\Asession_(\d+)\Z")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


def looks_like(data: Any) -> bool:
    """A sample, or a list of them, whose ``conversation`` has ``speaker_a``."""
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, Mapping) and isinstance(first.get("conversation"), Mapping) \
        and "speaker_a" in first["conversation"]


def parse_date(value: Any, where: str) -> datetime | None:
    """``1:56 pm on 8 May, 2023`` (taken as UTC; the dataset gives no zone), ISO-8601, or ``None``."""
    return parse_when(value, where, _DATE_FORMAT)


def parse(data: Any, *, where: str, session: str | None = None, date: datetime | None = None) -> list[Turn]:
    """Turns of every session of every sample, sessions in number order.

    Args:
        data: the decoded JSON: a list of samples or one sample.
        where: file name for error messages.
        session: id prefix for a sample without ``sample_id``.
        date: time for sessions without a date.

    Raises:
        ValidationError: a sample without a ``conversation`` mapping, or a turn without text.
    """
    samples = data if isinstance(data, list) else [data]
    out: list[Turn] = []
    for s, sample in enumerate(samples):
        here = f"{where}: sample {s}"
        need(isinstance(sample, Mapping) and isinstance(sample.get("conversation"), Mapping), here,
             "expected a LoCoMo sample with a 'conversation'")
        conv = sample["conversation"]
        prefix = str(sample.get("sample_id") or session or s)
        numbers = sorted(int(m.group(1)) for k, v in conv.items()
                         if (m := _SESSION_KEY.match(k)) and isinstance(v, list))
        for num in numbers:
            when = parse_date(conv.get(f"session_{num}_date_time"), f"{here}: session_{num}_date_time") or date
            for n, t in enumerate(conv[f"session_{num}"]):
                need(isinstance(t, Mapping) and isinstance(t.get("text"), str), here,
                     f"session_{num} turn {n} has no 'text'")
                speaker = str(t.get("speaker") or "")
                text = f"{speaker}: {t['text']}" if speaker else t["text"]
                if isinstance(t.get("blip_caption"), str) and t["blip_caption"].strip():
                    text += f" [image: {t['blip_caption'].strip()}]"
                extra = {"dia_id": t["dia_id"]} if isinstance(t.get("dia_id"), str) else {}
                out.append(Turn(NAME, f"{prefix}:session_{num}", n, "user", text.strip(), when,
                                speaker=speaker or None, extra=extra))
    return out
