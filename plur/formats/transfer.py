"""Import and export of engrams in other formats. Pure file formats: no store, no index.

Formats (:data:`FORMATS`):

``jsonl``
    One :meth:`Engram.to_dict` JSON object per line (UTF-8). Lossless. On import only ``statement``
    is required: a missing ``scope`` is ``global``, ``created`` now, ``id`` a fresh one
    (:func:`engram_from_json`).

``plur-yaml``
    PLUR's ``engrams.yaml``; the field mapping is documented in :mod:`plur.formats.plur_yaml`.

``claude-dir``
    A Claude-style memory folder; see :mod:`plur.formats.claude_dir`.

Import only (:data:`IMPORT_FORMATS`), text people bring from elsewhere (:mod:`plur.formats.notes`):
``claude-memory`` (claude.ai's memory, four shapes), ``chatgpt-memory`` (ChatGPT's saved memories, one
per line) and ``notes`` (plain text or Markdown). A text file's format is told by its content.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any
from pathlib import Path


from ..errors import StoreError, ValidationError
from ..store.atomic import private_dirs
from .claude_dir import claude_file as _claude_file, read_claude_dir as _read_claude_dir
from ..store.engram import Engram, _check_scope, new_id, parse_time, utcnow
from . import capped
from .inside import is_inside, keep_inside
from .plur_yaml import dump_plur_yaml, from_plur, read_plur_yaml as _read_plur_yaml, to_plur

FORMATS: tuple[str, ...] = ("jsonl", "plur-yaml", "claude-dir")
#: What ``plur import`` reads: :data:`FORMATS` and the text notes of :mod:`plur.formats.notes`.
IMPORT_FORMATS: tuple[str, ...] = FORMATS + ("claude-memory", "chatgpt-memory", "notes")
#: Files a folder of notes is read for (other files in it are left alone).
_NOTE_FILES = (".md", ".markdown", ".txt", ".text", ".jsonl", ".ndjson", ".yaml", ".yml")


def detect_format(path: str | os.PathLike[str]) -> str:
    """Guess the format from a path: a folder -> ``claude-dir``, ``*.jsonl``/``*.ndjson`` -> ``jsonl``,
    ``*.yaml``/``*.yml`` -> ``plur-yaml``.

    Raises:
        ValidationError: no rule applies; the message asks for ``--format``.
    """
    p = Path(path)
    if p.is_dir() or (not p.exists() and p.suffix == ""):
        return "claude-dir"
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".yaml", ".yml"):
        return "plur-yaml"
    raise ValidationError(f"cannot tell the format of {str(p)!r} from its name; "
                          f"pass --format ({', '.join(FORMATS)})")


def detect_import_format(path: str | os.PathLike[str], max_bytes: int | None = None) -> str:
    """The :data:`IMPORT_FORMATS` entry of an existing file or folder, from its name and, for text, its content
    (read within ``max_bytes``: :mod:`plur.formats.capped`).

    Raises:
        ValidationError: a chat export (naming ``plur ingest``), or text that fits several formats
            (naming the candidates and ``--format``).
    """
    from .notes import detect_text

    p = Path(path)
    suffix = p.suffix.lower()
    if p.is_dir() or suffix in (".jsonl", ".ndjson", ".yaml", ".yml"):
        return detect_format(p)
    if suffix == ".zip" or (suffix == ".json" and chat_format(p, max_bytes=max_bytes)):
        raise ValidationError(f"{str(p)!r} looks like a chat export (conversations), not notes; use "
                              f"`plur ingest {p}` for it, or pass --format ({', '.join(IMPORT_FORMATS)})")
    if suffix == ".json":
        raise ValidationError(f"cannot tell the format of {str(p)!r}: it is JSON but no chat export that "
                              f"`plur ingest` reads, and `plur import` reads JSON Lines (one engram per line, "
                              f"named .jsonl); pass --format ({', '.join(IMPORT_FORMATS)})")
    return detect_text(capped.read_text(p, max_bytes, "utf-8-sig"), repr(str(p)), suffix)


def import_sources(paths: Iterable[str | os.PathLike[str]], skipped: list[str] | None = None) -> list[Path]:
    """The files and memory folders that ``paths`` name: a Claude memory folder (``MEMORY.md``, or
    markdown files with frontmatter) is one source; any other folder gives its note files, recursively
    (hidden ones skipped), in name order. A file that leads out of its folder (a symlink to ``../x`` or
    ``/etc/...``) is never read (:mod:`plur.formats.inside`): a line saying so is appended to ``skipped``.

    Raises:
        ValidationError: a path that does not exist, or a folder with no note file.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            raise ValidationError(f"no file or folder {str(p)!r}; check the path")
        if not p.is_dir() or is_claude_dir(p):
            out.append(p)
            continue
        found = keep_inside(p, sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in _NOTE_FILES
                                      and not any(part.startswith(".") for part in f.relative_to(p).parts)), skipped)
        chats = [(f, fmt) for f in found if f.suffix.lower() in (".jsonl", ".ndjson") and (fmt := chat_format(f))]
        if chats:
            f, fmt = chats[0]
            raise ValidationError(f"{str(p)!r} holds chat histories ({fmt}: {f.relative_to(p)}"
                                  f"{f' and {len(chats) - 1} more' if len(chats) > 1 else ''}), not notes; "
                                  f"use `plur ingest {p}` for them (one engram per turn)")
        if not found:
            raise ValidationError(f"{str(p)!r} holds no notes (files ending {', '.join(_NOTE_FILES)}) and no "
                                  "Claude memory folder (MEMORY.md); check the path")
        out += found
    return out


def chat_format(p: Path, lines: int = 50, max_bytes: int | None = None) -> str | None:
    """The conversation format (``plur ingest``'s) of a JSON or JSON Lines file whose records are no
    engrams (no ``statement``), from its first ``lines`` records; ``None`` when it is not one (or too large
    to tell within ``max_bytes``)."""
    from .chats import detect_format as conversation_format

    records: list[Any] = []
    budget = capped.Budget(str(p), max_bytes, "json")
    try:
        if p.suffix.lower() == ".json":
            records = [capped.parse_json(capped.read_file(p, budget), str(p))]
        else:
            with capped.open_file(p) as fh:
                for _, line in capped.lines(fh, budget):
                    records.append(json.loads(line.decode("utf-8-sig")))
                    if len(records) >= lines:
                        break
    except (OSError, ValueError, RecursionError):  # ValidationError (too large, unreadable) is a ValueError
        return None
    data = records[0] if p.suffix.lower() == ".json" else records
    if any(isinstance(r, Mapping) and "statement" in r for r in (records if data is records else [data])):
        return None
    try:
        return conversation_format(data, str(p))
    except ValidationError:
        return None


def is_claude_dir(p: Path) -> bool:
    """Whether folder ``p`` is a Claude memory folder: a ``MEMORY.md``, or markdown files opening with frontmatter."""
    if (p / "MEMORY.md").is_file():
        return True
    for f in p.glob("*.md"):
        if not f.is_file() or not is_inside(p, f):  # a FIFO would block the read; a link out is not looked into
            continue
        try:
            with f.open("rb") as fh:
                if fh.read(4) in (b"---\n", b"---\r"):
                    return True
        except OSError:
            continue
    return False


def _check_format(fmt: str, formats: tuple[str, ...] = FORMATS) -> str:
    if fmt not in formats:
        raise ValidationError(f"unknown format {fmt!r}; use one of {', '.join(formats)}")
    return fmt


# -- reading ---------------------------------------------------------------------------
def read_engrams(path: str | os.PathLike[str], fmt: str | None = None, *, scope: str | None = None,
                 max_bytes: int | None = None, skipped: list[str] | None = None) -> list[Engram]:
    """Parse a file or folder into engrams; nothing is written anywhere.

    All-or-nothing: the first invalid entry raises, naming the file and the line or entry. Each file is read
    within ``max_bytes`` (default the setting ``max_input_bytes``, :mod:`plur.formats.capped`); a file of a
    ``claude-dir`` folder that leads out of it is not read, and a line saying so is appended to ``skipped``.

    Args:
        path: file (``jsonl``, ``plur-yaml``) or folder (``claude-dir``).
        fmt: one of :data:`IMPORT_FORMATS`; default :func:`detect_import_format`.
        scope: scope for entries that carry none (in every format: a JSONL line or ``engrams.yaml``
            entry without ``scope``, a ``claude-dir`` memory without ``plur`` frontmatter); default ``global``.

    Raises:
        ValidationError: an invalid ``scope``, unknown format, unreadable, malformed or too large input.
    """
    if scope is not None:
        _check_scope(scope)
    p = Path(path).expanduser()
    limit = capped.default_limit() if max_bytes is None else max_bytes
    fmt = _check_format(fmt or detect_import_format(p, limit), IMPORT_FORMATS)
    if fmt in IMPORT_FORMATS[len(FORMATS):]:
        from .notes import read_text_notes, to_engrams

        if p.is_dir():
            raise ValidationError(f"{str(p)!r} is a folder; --format {fmt} reads a text file")
        return to_engrams(read_text_notes(capped.read_text(p, limit, "utf-8-sig"), fmt), scope or "global", p, fmt)
    if fmt == "claude-dir":
        if not p.is_dir():
            raise ValidationError(f"{str(p)!r} is not a folder; a claude-dir import reads a memory folder")
        return _read_claude_dir(p, scope or "global", limit, skipped)
    if fmt == "jsonl":
        return _read_jsonl(p, capped.read_text(p, limit, form="json"), scope or "global")
    return _read_plur_yaml(p, capped.read_text(p, limit, form="yaml"), scope or "global")


def _read_jsonl(p: Path, text: str, default_scope: str = "global") -> list[Engram]:
    out = []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): \x85 and \u2028 are data
        if not line.strip():
            continue
        try:
            data = capped.check_depth(json.loads(line), "JSON")
            out.append(engram_from_json(data, default_scope))
        except RecursionError:
            raise ValidationError(f"{p}:{n}: JSON nested too deeply (over about 1,000 levels; an engram is a few "
                                  "levels deep); refused") from None
        except json.JSONDecodeError as exc:
            from .notes import claude_ai

            hint = "; it is claude.ai's memory: drop --format" if claude_ai.shape(text) else ""
            raise ValidationError(f"{p}:{n}: not a JSON object ({exc.msg}); one engram per line{hint}") from None
        except ValidationError as exc:
            if "statement" in str(exc) and (fmt := chat_format(p)):
                raise ValidationError(f"{p} is a chat history ({fmt}), not engrams (one JSON object with a "
                                      f"'statement' per line); use `plur ingest {p}` for it") from None
            raise ValidationError(f"{p}:{n}: {exc}") from None
    return out


def engram_from_json(data: Any, default_scope: str = "global") -> Engram:
    """An engram from one JSONL object; only ``statement`` is required.

    Defaults, for absent fields only: ``scope`` ``default_scope``, ``created`` now, ``id`` fresh (``ENG-<created date>-<6 hex>``),
    ``type`` ``fact``, ``status`` ``active``. Every other :data:`~plur.store.engram.FIELD_ORDER` field is
    optional; unknown keys are kept (``Engram.extra``).

    Raises:
        ValidationError: not an object, no ``statement``, or an invalid field (naming it).
    """
    if not isinstance(data, Mapping):
        raise ValidationError(f"expected a JSON object with a 'statement', got {type(data).__name__}")
    if "statement" not in data:
        raise ValidationError("engram is missing required field statement (the text to remember)")
    d = dict(data)
    # Defaults fill fields that are absent; a field present but empty (``"created": null``) is a damaged
    # record and is refused by Engram.from_dict, exactly as on read.
    d.setdefault("scope", default_scope)
    d.setdefault("created", utcnow())
    if "id" not in d:
        d["id"] = new_id(parse_time(d["created"], "created"))
    return Engram.from_dict(d)


# -- writing ---------------------------------------------------------------------------
def _write_file(path: Path, data: bytes) -> None:
    """Atomic: temp file beside ``path``, fsync, rename."""
    try:
        private_dirs(path.parent)  # an export holds the memory: owner-only like the home
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)  # mkstemp: 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise StoreError(f"cannot write {path} ({exc}); check free space and permissions") from None


def export_text(engrams: Iterable[Engram], fmt: str = "jsonl") -> str:
    """The text of a ``jsonl`` or ``plur-yaml`` export (what :func:`write_engrams` writes; ``plur export -``
    prints it on stdout).

    Raises:
        ValidationError: ``fmt`` is not a one-file format (``claude-dir`` is a folder).
    """
    if _check_format(fmt) == "claude-dir":
        raise ValidationError("a claude-dir export is a folder and cannot go to stdout; use --format jsonl or "
                              "plur-yaml, or give a folder path")
    items = list(engrams)
    if fmt == "jsonl":
        return "".join(json.dumps(e.to_dict(), ensure_ascii=False, default=str) + "\n" for e in items)
    return dump_plur_yaml(items)


def write_engrams(engrams: Iterable[Engram], path: str | os.PathLike[str], fmt: str | None = None,
                  *, force: bool = False, home: str | os.PathLike[str] | None = None, parents: bool = False) -> int:
    """Write engrams to a file or folder in one of :data:`FORMATS`, safely (see :mod:`plur.store.export_target`).

    Never inside ``home``; never over (or deleting) a file a plur export did not write; a previous
    export is replaced whole and atomically, so files of engrams forgotten since do not linger.

    Args:
        engrams: what to write (in this order).
        path: target file (``jsonl``, ``plur-yaml``) or folder (``claude-dir``).
        fmt: one of :data:`FORMATS`; default :func:`detect_format`.
        force: replace a previous plur export at ``path``.
        home: the plur home the engrams come from; the target may not be inside it.
        parents: create the folder the target goes in when it is missing (else that is an error: a
            mistyped folder no longer becomes a tree of new folders beside a hidden manifest).

    Returns:
        Number of engrams written.

    Raises:
        ValidationError: unknown format, a target inside ``home``, a missing folder without ``parents``,
            a file or folder plur did not write, or a previous export without ``force``.
        StoreError: the disk write failed (the previous export is unchanged).
    """
    from ..store.export_target import check_file_target, check_outside_home, record_file, replace_folder, sha256_file

    p = Path(path).expanduser()
    fmt = _check_format(fmt or detect_format(p))
    check_outside_home(p, Path(home) if home is not None else None)
    if not parents and not p.parent.is_dir():
        raise ValidationError(f"folder {str(p.parent)!r} does not exist (the export {str(p)!r} would go in it); "
                              "create it first, or pass --parents to create it")
    items = list(engrams)
    if fmt == "claude-dir":
        def build(folder: Path) -> dict[str, str]:
            lines = ["# Memory index", ""]
            used: set[str] = set()
            for e in items:
                name, title, hook, text = _claude_file(e)
                while name in used:
                    name = name[:-3] + "_.md"
                used.add(name)
                _write_file(folder / name, text.encode("utf-8"))
                lines.append(f"- [{title.replace(']', ')')}]({name}) — {hook}")
            _write_file(folder / "MEMORY.md", ("\n".join(lines) + "\n").encode("utf-8"))
            return {n: sha256_file(folder / n) for n in [*used, "MEMORY.md"]}

        replace_folder(p, force, build)
        return len(items)
    check_file_target(p, force)
    _write_file(p, export_text(items, fmt).encode("utf-8"))
    record_file(p)
    return len(items)


__all__ = ["FORMATS", "IMPORT_FORMATS", "detect_format", "detect_import_format", "export_text", "from_plur",
           "import_sources",
           "read_engrams", "to_plur", "write_engrams"]
