"""One Claude Code memory file <-> one engram, and the ``MEMORY.md`` index lines. Pure apart from file reads.

A Claude Code memory file is YAML frontmatter (``name``, ``description``, ``type`` -- or ``metadata: type:`` --
and any other keys, e.g. ``modified``) and the memory as its body. The engram's statement is the body; the
frontmatter is kept on the engram (``name``, ``description`` and the other keys in its extra fields), and the
file plur writes back carries the same keys (``modified`` re-dated in its own spelling when the engram changed).

A file plur writes for an engram of its own is in Claude Code's shape (``name`` a kebab-case slug of the
text's words in any script, ``description`` its first line, ``metadata: type:`` and ``modified``); a ``fact``
or ``procedure`` is written as Claude's ``reference`` or ``feedback`` with ``plur: type:`` beside it, so an
edit on Claude's side keeps plur's type. A ``name`` or ``description`` plur derived from the text is not the
engram's own: it follows the text when plur changes it (:func:`own_fields`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Set
from typing import Any

import yaml

from ...formats.claude_dir import (CLAUDE_TYPE_OUT, INDEX_LINE_RE, _one_line, _when, claude_name, joined,
                                   memory_type, respell, split_frontmatter)
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
    """``(body, type, frontmatter fields)`` of a memory file's text (``type``: a plur type or ``None``).

    The fields leave out ``type`` and the ``plur:`` block (at the top or under ``metadata``): the engram
    holds its type itself and :func:`render` writes the block again where it is needed.
    """
    meta, body = split_frontmatter(text, name)
    fields = {k: v for k, v in meta.items() if k != "type" and isinstance(k, str) and k != "plur"}
    nested = fields.get("metadata")
    if isinstance(nested, Mapping) and "plur" in nested:
        fields["metadata"] = {k: v for k, v in nested.items() if k != "plur"}
    return body.strip(), memory_type(meta), fields


def dated(fields: Mapping[str, Any]) -> Any:
    """The ``modified`` time of a memory file's frontmatter (at the top or in ``metadata``), else ``None``."""
    nested = fields.get("metadata")
    return _when(fields.get("modified") or (nested.get("modified") if isinstance(nested, Mapping) else None))


def derived(statement: str) -> dict[str, str]:
    """The ``name`` and ``description`` plur gives a file whose engram has none of its own."""
    return {"name": joined(statement, "-", 40) or "memory", "description": _one_line(statement, 150)}


def own_fields(fields: Mapping[str, Any], e: Engram) -> dict[str, Any]:
    """``fields`` of a file read back, less a ``name`` or ``description`` that is plur's derivation of ``e``'s
    text (as plur wrote it, or as Claude Code re-spells a name when it edits the file): those stay derived,
    so they follow the text when it changes. A name or description the engram already holds is kept."""
    auto = derived(e.statement)
    older = _one_line(e.statement, 60)  # the name plur derived before it wrote slugs
    seen = {"name": {auto["name"], claude_name(auto["name"]), older, claude_name(older)},
            "description": {auto["description"]}}
    out = dict(fields)
    for key in ("name", "description"):
        if key not in e.extra and out.get(key) in seen[key]:
            out.pop(key)
    return out


def _stamp(when: Any) -> str:
    """A time as Claude Code writes ``modified``: ``2026-11-02T09:14:15.764Z``."""
    return respell("2000-01-01T00:00:00.000Z", when)


def render(e: Engram) -> str:
    """The memory file of an engram (frontmatter + body)."""
    auto = derived(e.statement)
    meta: dict[str, Any] = {"name": str(e.extra.get("name") or auto["name"]),
                            "description": str(e.extra.get("description") or auto["description"])}
    ctype = CLAUDE_TYPE_OUT.get(e.type, e.type)
    front_extra = {k: v for k, v in e.extra.items() if k not in NOT_FRONTMATTER}
    nested = front_extra.get("metadata")
    if isinstance(nested, Mapping) and "type" in nested or not front_extra:  # Claude Code's shape, or plur's own
        meta["metadata"] = {**(nested if isinstance(nested, Mapping) else {}), "type": ctype}
        typed = meta["metadata"]
    else:
        meta["type"] = ctype
        typed = meta
    for k, v in front_extra.items():
        meta.setdefault(k, v)
    if ctype != e.type:  # Claude Code has four types: plur's own travels beside them
        typed["plur"] = {"type": e.type}
    stamps = [m for m in (meta, meta.get("metadata")) if isinstance(m, dict) and isinstance(m.get("modified"), str)]
    for m in stamps:  # Claude Code keeps the date at the top or in metadata; re-dated, spelled as it was
        if e.updated is not None:
            m["modified"] = respell(m["modified"], e.updated)
    if not stamps:
        typed["modified"] = _stamp(e.updated or e.created)
        stamps = [typed]
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=1 << 30)
    for m in stamps:
        front = re.sub(rf"(\n[ ]*modified: )'({re.escape(m['modified'])})'\n", r"\1\2\n", front)
    return f"---\n{front}---\n\n{e.statement}\n"


def file_name(e: Engram, taken: set[str]) -> str:
    """A new file name for an engram: ``<type>_<slug>.md`` (the slug's words in any script), unique in ``taken``."""
    base = f"{e.type}_{joined(str(e.extra.get('name') or e.statement), '_', 50) or 'memory'}"
    name, n = f"{base}.md", 2
    while name in taken or name == INDEX:
        name, n = f"{base}_{n}.md", n + 1
    return name


def index_line(name: str, e: Engram, title: str | None = None) -> str:
    """The ``MEMORY.md`` line of file ``name``: ``- [title](name) — hook``, under about 150 characters as
    Claude Code asks (the hook is the file's description; ``title`` is kept where Claude Code chose it)."""
    title = (title or str(e.extra.get("name") or _one_line(e.statement, 40).removesuffix("…"))).replace("]", ")")
    hook = str(e.extra.get("description") or _one_line(e.statement, max(50, 142 - len(title) - len(name))))
    return f"- [{title}]({name}) — {' '.join(hook.split())}"


def index_text(current: str, files: Mapping[str, Engram], gone: Set[str], rewritten: Set[str] = frozenset()) -> str:
    """``MEMORY.md`` in step with the folder: a line for each file of ``files`` it lacks, none for ``gone``
    files, and the line of each ``rewritten`` file (plur changed its engram) written anew.

    Other lines (Claude Code's, a person's) are kept as they are, in their order; a rewritten line keeps
    the title Claude Code gave it when the engram's name is Claude Code's (not derived by plur).
    """
    lines = current.splitlines() if current.strip() else ["# Memory index", ""]
    out, listed = [], set()
    for line in lines:
        m = INDEX_LINE_RE.match(line)
        target = m["file"].strip() if m else None
        if target in gone:
            continue
        if target:
            listed.add(target)
            if target in rewritten and target in files:
                e = files[target]
                line = index_line(target, e, m["title"].strip() if "name" in e.extra else None)
        out.append(line)
    for name, e in files.items():
        if name not in listed:
            out.append(index_line(name, e))
    return "\n".join(out) + "\n"
