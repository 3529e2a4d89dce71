"""``Stop`` for ``plur hook claude-code``: the assistant's answer to capture when the setting is ``all``.

Claude Code and Codex run the ``Stop`` hook when the assistant has finished its answer. The answer's text
is ``last_assistant_message`` in the input where the host gives it (Codex), else the last assistant
message of the session's transcript (``transcript_path``, JSON Lines; only its last 1 MiB is read).
The user's own turns are captured at ``UserPromptSubmit`` (their words as typed, before the model runs,
so a session that dies still left them); ``Stop`` adds only what ``capture = "all"`` asks for: the
service (or :meth:`plur.memory.Memory.capture`) skips assistant turns under ``user``.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Bytes read from the end of a transcript.
TAIL_BYTES = 1 << 20


def assistant_text(event: dict[str, Any]) -> str:
    """The answer that just ended ('' when none can be read)."""
    given = event.get("last_assistant_message")
    if isinstance(given, str) and given.strip():
        return given
    path = event.get("transcript_path")
    if not isinstance(path, str) or not path:
        return ""
    try:
        with open(os.path.expanduser(path), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            lines = fh.read().splitlines()
    except OSError:
        return ""
    for raw in reversed(lines):
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        msg = item.get("message") if isinstance(item, dict) else None
        if not isinstance(msg, dict) or msg.get("role") != "assistant" and item.get("type") != "assistant":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        if any(t.strip() for t in texts):
            return "\n".join(t for t in texts if t.strip())
    return ""
