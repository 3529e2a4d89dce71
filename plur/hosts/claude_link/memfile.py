"""One Claude Code memory file <-> one engram, and the ``MEMORY.md`` index lines. Pure apart from file reads.

A Claude Code memory file is YAML frontmatter (``name``, ``description``, ``type`` -- or ``metadata: type:`` --
and any other keys, e.g. ``modified``) and the memory as its body. The engram's statement is the body; the
frontmatter is kept on the engram (``name``, ``description`` and the other keys in its extra fields), and the
file plur writes back carries the same keys (``modified`` re-dated in its own spelling when the engram changed).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import yaml

from ...formats.claude_dir import INDEX_LINE_RE, memory_type, respell, split_frontmatter
from ...store.engram import Engram

INDEX = "MEMORY.md"
#: Frontmatter keys plur writes itself.
OWN_KEYS = ("name", "description", "type")
#: Extra fields of an engram that are not frontmatter (plur's own bookkeeping).
NOT_FRONTMATTER = ("memory_path", "link_file", "updated_on")
CONFLICT_TAG = "conflict"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def engram_hash(e: Engram) -> str:
    """What a file shows of an engram: its text, type and frontmatter fields."""
    front = {k: v for k, v in e.extra.items() if k not in NOT_FRONTMATTER}
    return sha(f"{e.statement}\n{e.type}\n{sorted(map(str, front.items()))}")


def parse(text: str, name: str) -> tuple[str, str | None, dict[str, Any]]:
    """``(body, type, frontmatter fields)`` of a memory file's text (``type``: a plur type or ``None``)."""
    meta, body = split_frontmatter(text, name)
    fields = {k: v for k, v in meta.items() if k != "type" and isinstance(k, str) and k != "plur"}
    return body.strip(), memory_type(meta), fields


def dated(fields: Mapping[str, Any]) -> Any:
    """The ``modified`` time of a memory file's frontmatter (at the top or in ``metadata``), else ``None``."""
    from ...formats.claude_dir import _when

    nested = fields.get("metadata")
    return _when(fields.get("modified") or (nested.get("modified") if isinstance(nested, Mapping) else None))


def render(e: Engram) -> str:
    """The memory file of an engram (frontmatter + body)."""
    from ...formats.claude_dir import CLAUDE_TYPE_OUT, _one_line

    meta: dict[str, Any] = {"name": str(e.extra.get("name") or _one_line(e.statement, 60)),
                            "description": str(e.extra.get("description") or _one_line(e.statement, 150))}
    ctype = CLAUDE_TYPE_OUT.get(e.type, e.type)
    nested = e.extra.get("metadata")
    if isinstance(nested, Mapping) and "type" in nested:
        meta["metadata"] = {**nested, "type": ctype}
    else:
        meta["type"] = ctype
    for k, v in e.extra.items():
        if k not in NOT_FRONTMATTER:
            meta.setdefault(k, v)
    dated = [m for m in (meta, meta.get("metadata")) if isinstance(m, dict) and isinstance(m.get("modified"), str)]
    for m in dated:  # Claude Code keeps the date at the top or in metadata; re-dated, spelled as it was
        if e.updated is not None:
            m["modified"] = respell(m["modified"], e.updated)
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1 << 30)
    for m in dated:
        front = re.sub(rf"(\n[ ]*modified: )'({re.escape(m['modified'])})'\n", r"\1\2\n", front)
    return f"---\n{front}---\n\n{e.statement}\n"


def file_name(e: Engram, taken: set[str]) -> str:
    """A new file name for an engram: ``<type>_<slug>.md``, unique in ``taken``."""
    words = re.findall(r"[a-z0-9]+", str(e.extra.get("name") or e.statement).lower())[:6]
    base = f"{e.type}_{'_'.join(words) or 'memory'}"[:60]
    name, n = f"{base}.md", 2
    while name in taken or name == INDEX:
        name, n = f"{base}_{n}.md", n + 1
    return name


def index_text(current: str, files: Mapping[str, Engram], gone: set[str]) -> str:
    """``MEMORY.md`` with a line for each file of ``files`` it lacks and without the lines of ``gone`` files.

    Lines it did not write (Claude Code's, a person's) are kept as they are, in their order.
    """
    from ...formats.claude_dir import _one_line

    lines = current.splitlines() if current.strip() else ["# Memory index", ""]
    out, listed = [], set()
    for line in lines:
        m = INDEX_LINE_RE.match(line)
        target = m["file"].strip() if m else None
        if target in gone:
            continue
        if target:
            listed.add(target)
        out.append(line)
    for name, e in files.items():
        if name not in listed:
            title = str(e.extra.get("name") or _one_line(e.statement, 60)).replace("]", ")")
            hook = str(e.extra.get("description") or _one_line(e.statement, 150))
            out.append(f"- [{title}]({name}) — {hook}")
    return "\n".join(out) + "\n"
