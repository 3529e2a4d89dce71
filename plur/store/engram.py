"""The :class:`Engram` data model: validation, YAML (de)serialisation, content hash, id format.

No I/O lives here: :mod:`plur.store.store` reads and writes the text this module produces.

On-disk form: one YAML mapping per engram, known fields in a fixed order
(:data:`FIELD_ORDER`), then any unknown keys in the order they were read, so a
load/save round trip keeps keys a person or another tool added.
Serialisation is deterministic: ``to_yaml(from_yaml(to_yaml(e))) == to_yaml(e)``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InvalidIdError, ValidationError
from .frozen import NO_EXTRA
from .scope import SCOPE_RE, _check_scope, check_scope  # noqa: F401 - re-exported
from .times import check_window, format_time, parse_duration, parse_time, utcnow  # noqa: F401 - re-exported

#: ``ENG-YYYY-MM-DD-<6 lower-case hex>``. Anchored with ``\A``/``\Z`` so no
#: newline, separator, dot or NUL can pass: an id can never be a path.
ID_RE = re.compile(r"\AENG-\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])-[0-9a-f]{6}\Z")
TYPES: tuple[str, ...] = ("user", "project", "feedback", "reference", "fact", "procedure")
STATUSES: tuple[str, ...] = ("active", "retired")
TAG_RE = re.compile(r"\A[^\s,][^,\n]{0,63}\Z")
#: Most tags one engram may carry (one engram accepted 100,000: issue 38).
MAX_TAGS = 64
#: Longest tag, characters (:data:`TAG_RE`).
MAX_TAG_CHARS = 64


def tag_tuple(tags: Any, what: str = "tags") -> tuple[str, ...]:
    """``tags`` as a tuple, refusing a bare string (``tags="pets"`` would be the tags p, e, t, s).

    Raises:
        ValidationError: a string, or not a list/tuple of tags.
    """
    if tags is None:
        return ()
    if isinstance(tags, (str, bytes)):
        raise ValidationError(f"{what} must be a list of strings, got the string {tags!r}; "
                              f"write {what}=[{tags!r}] for one tag")
    if not isinstance(tags, Iterable) or isinstance(tags, Mapping):
        raise ValidationError(f"{what} must be a list of strings, got {tags!r}")
    return tuple(tags)

FIELD_ORDER: tuple[str, ...] = (
    "id", "statement", "type", "scope", "tags", "domain", "rationale", "source",
    "created", "updated", "valid_from", "valid_until", "pinned", "status",
    "supersedes", "content_hash",
)
_TIME_FIELDS = ("created", "updated", "valid_from", "valid_until")
#: Fields every stored engram must carry, non-empty (checked on read exactly as on write).
REQUIRED_FIELDS: tuple[str, ...] = ("id", "statement", "scope", "created")


def normalize_statement(statement: str) -> str:
    """Normal form used for duplicate detection: NFKC, case-folded, whitespace runs -> one space."""
    return " ".join(unicodedata.normalize("NFKC", statement).casefold().split())


def content_hash(statement: str) -> str:
    """``sha256:<first 16 hex>`` of :func:`normalize_statement` (UTF-8)."""
    digest = hashlib.sha256(normalize_statement(statement).encode("utf-8")).hexdigest()
    return "sha256:" + digest[:16]


def engram_version(engram: "Engram") -> str:
    """The version token of an engram as stored: ``v:<first 16 hex of sha256(to_yaml())>``.

    Every field counts (statement, tags, pinned, status...), so an update that carries the
    version it started from (``Memory.update(..., expected=...)``) is refused when anything changed
    since, by anyone. Same engram, same token, in every process.
    """
    return "v:" + hashlib.sha256(engram.to_yaml().encode("utf-8")).hexdigest()[:16]


def validate_id(engram_id: Any) -> str:
    """Return ``engram_id`` if it matches :data:`ID_RE`.

    Raises:
        InvalidIdError: for anything else (``../../x``, ``/etc/passwd``, ``x\\0y``, ``''``...).
    """
    if not isinstance(engram_id, str) or not ID_RE.match(engram_id):
        raise InvalidIdError(
            f"invalid engram id {engram_id!r}: an id is ENG-, a date and 6 hex digits (0-9, a-f), e.g. "
            "'ENG-2025-07-25-a1b2c3' (see `plur list` for the ids in your store)"
        )
    return engram_id


def new_id(created: datetime | None = None) -> str:
    """A fresh random id ``ENG-<created date>-<6 hex>`` (``secrets``; the store retries on collision)."""
    day = (created or utcnow()).astimezone(timezone.utc).date().isoformat()
    return f"ENG-{day}-{secrets.token_hex(3)}"


def _as_text_hint(value: Any) -> str:
    """How to make a YAML or JSON value that was read as a number, flag, list or mapping into text."""
    if isinstance(value, bool):
        return ('put it in quotes so it is read as text (YAML reads yes/no, true/false, on/off as a flag), '
                'e.g. statement: "yes"')
    if isinstance(value, (int, float)):
        return f'put it in quotes so it is read as text, e.g. statement: "{value!r:.60}"'
    return 'write it as one text in quotes, e.g. statement: "..." (a list or mapping is not a statement)'


def _check_statement(statement: Any, max_bytes: int | None) -> str:
    if not isinstance(statement, str):
        raise ValidationError(f"statement must be text, got {type(statement).__name__} {statement!r:.60}; "
                              f"{_as_text_hint(statement)}")
    if not statement.strip():
        raise ValidationError(f"statement {statement!r:.60} is empty or whitespace only; give the fact to remember")
    try:
        statement.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"statement is not valid Unicode text ({exc.reason} at position {exc.start}: "
            f"{statement[exc.start:exc.start + 1]!r}); check the terminal's or file's encoding (UTF-8 expected)"
        ) from None
    if "\x00" in statement:
        raise ValidationError("statement contains a NUL character (\\x00); remove it")
    if max_bytes is not None:
        size = len(statement.encode("utf-8"))
        if size > max_bytes:
            raise ValidationError(
                f"statement is {size} bytes, over the limit of {max_bytes} bytes, too large "
                "(setting max_statement_bytes); split it or raise the limit"
            )
    return statement


@dataclass(frozen=True, slots=True)
class Engram:
    """One memory. Immutable; use :meth:`replace` for an edited copy.

    Slotted (no per-instance ``__dict__``: ~170 bytes an engram instead of ~280; issue 30).

    Attributes:
        id: ``ENG-YYYY-MM-DD-<6 hex>``.
        statement: the remembered text (any Unicode, multi-line allowed).
        scope: ``global`` | ``project:<name>`` | ``agent:<name>``; an authorisation boundary for recall.
        created: aware UTC datetime.
        type: one of :data:`TYPES`.
        tags: tuple of short labels.
        source: provenance mapping (kind, session, turn, url...), or ``None``.
        pinned: pinned engrams go first in the memory block.
        status: ``active`` or ``retired`` (retired engrams are not recalled unless asked for,
            see :meth:`is_current`).
        valid_from / valid_until: optional validity window, aware UTC; outside it the engram is
            not current (``valid_until`` is set by ``supersede`` and ``learn --ttl``).
        supersedes: id of the engram this one replaced, or ``None``.
        content_hash: :func:`content_hash` of the statement.
        extra: unknown YAML keys, kept for the round trip (when there are none: the shared, immutable
            :data:`plur.store.frozen.NO_EXTRA`, equal to ``{}``).
    """

    id: str
    statement: str
    scope: str = "global"
    created: datetime = field(default_factory=utcnow)
    type: str = "fact"
    tags: tuple[str, ...] = ()
    domain: str | None = None
    rationale: str | None = None
    source: Mapping[str, Any] | None = field(default=None, hash=False)
    updated: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    pinned: bool = False
    status: str = "active"
    supersedes: str | None = None
    content_hash: str = ""
    extra: Mapping[str, Any] = field(default=NO_EXTRA, hash=False)

    def __post_init__(self) -> None:
        validate_id(self.id)
        _check_statement(self.statement, None)
        _check_scope(self.scope)
        if self.type not in TYPES:
            raise ValidationError(f"invalid type {self.type!r}; use one of {', '.join(TYPES)}")
        if self.status not in STATUSES:
            raise ValidationError(f"invalid status {self.status!r}; use one of {', '.join(STATUSES)}")
        tags = tag_tuple(self.tags)
        if len(tags) > MAX_TAGS:
            raise ValidationError(f"{len(tags)} tags is over the limit of {MAX_TAGS} per engram; keep the "
                                  "few that say what it is about")
        for t in tags:
            if not isinstance(t, str) or not TAG_RE.match(t):
                raise ValidationError(f"invalid tag {t!r}: 1-64 characters, no comma or newline, not blank")
        object.__setattr__(self, "tags", tags)
        if self.created is None:
            raise ValidationError("created is empty; give the engram's creation time, e.g. '2025-07-25T02:00:00Z'")
        for name in _TIME_FIELDS:
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, parse_time(v, name))
        if not isinstance(self.pinned, bool):
            raise ValidationError(f"pinned must be true or false, got {self.pinned!r}")
        if self.supersedes is not None:
            validate_id(self.supersedes)
        for name in ("domain", "rationale"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise ValidationError(f"{name} must be text, got {v!r}")
        if self.source is not None and not isinstance(self.source, Mapping):
            raise ValidationError(f"source must be a mapping (kind, session, turn, url), got {self.source!r}")
        object.__setattr__(self, "content_hash", content_hash(self.statement))
        for name in ("id", "scope", "type", "status"):
            object.__setattr__(self, name, _shared(getattr(self, name)))
        if type(self.source) is dict:
            object.__setattr__(self, "source", _shared_source(self.source))

    # -- validity -----------------------------------------------------------------------
    def is_current(self, now: datetime | None = None) -> bool:
        """Whether this engram may be shown as current knowledge at ``now`` (default: now, UTC).

        The one validity rule every reader uses (recall, the memory block, pinned engrams, the web
        page): the engram is ``active`` (not retired, e.g. by ``supersede``) and ``now`` lies in
        ``[valid_from, valid_until)`` (an unset bound is open).
        """
        if self.status != "active":
            return False
        when = now or datetime.now(timezone.utc)
        if self.valid_from is not None and self.valid_from > when:
            return False
        return self.valid_until is None or self.valid_until > when

    def is_expired(self, now: datetime | None = None) -> bool:
        """``valid_until`` is set and has passed at ``now`` (status not considered)."""
        return self.valid_until is not None and self.valid_until <= (now or datetime.now(timezone.utc))

    # -- construction -------------------------------------------------------------------
    @classmethod
    def create(cls, statement: str, *, max_statement_bytes: int | None = None,
               created: Any = None, **fields: Any) -> "Engram":
        """Build a new engram with a fresh id.

        Args:
            statement: the text to remember (non-blank).
            max_statement_bytes: refuse statements larger than this many UTF-8 bytes.
            created: timestamp (any form :func:`parse_time` accepts); default now.
            **fields: any other :class:`Engram` field.

        Raises:
            ValidationError: a field is invalid, or ``valid_until`` is not after a given ``created``
                (or ``valid_from``); the message names it and the fix.
        """
        _check_statement(statement, max_statement_bytes)
        when = parse_time(created, "created") if created is not None else utcnow()
        engram = cls(id=fields.pop("id", None) or new_id(when), statement=statement, created=when, **fields)
        check_window(engram.created if created is not None else None, engram.valid_from, engram.valid_until)
        return engram

    def replace(self, **changes: Any) -> "Engram":
        """A copy with ``changes`` applied and ``updated`` set to now (unless given)."""
        changes.setdefault("updated", utcnow())
        return dataclasses.replace(self, **changes)

    # -- dict / YAML --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-safe dict in :data:`FIELD_ORDER`; ``None``/empty optional fields omitted."""
        out: dict[str, Any] = {}
        for name in FIELD_ORDER:
            v = getattr(self, name)
            if name in _TIME_FIELDS:
                if v is None:
                    continue
                v = format_time(v)
            elif name == "tags":
                if not v:
                    continue
                v = list(v)
            elif name == "source":
                if v is None:
                    continue
                v = dict(v)
            elif name in ("domain", "rationale", "supersedes") and v is None:
                continue
            out[name] = v
        for k, v in self.extra.items():
            if k not in out:
                out[k] = v
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Engram":
        """Validate a mapping (from YAML or JSON) into an :class:`Engram`.

        Unknown keys go to ``extra``; ``content_hash`` is recomputed, never trusted.

        Raises:
            ValidationError: missing required field or invalid value.
        """
        if data is None:
            raise ValidationError("the engram is empty (no fields); write one 'field: value' per line "
                                  "(id, statement, scope, created, as in any engram file)")
        if not isinstance(data, Mapping):
            raise ValidationError(f"an engram must be a mapping of fields ('field: value' lines), got "
                                  f"{type(data).__name__} {data!r:.60}; write one 'field: value' per line")
        missing = [k for k in REQUIRED_FIELDS if k not in data]
        if missing:
            raise ValidationError(f"engram is missing required field(s) {', '.join(missing)}")
        # the same rule as on write: a required field present but empty (``created:``) is no value
        empty = [k for k in REQUIRED_FIELDS if data[k] is None or (isinstance(data[k], str) and not data[k].strip())]
        if empty:
            raise ValidationError(f"engram has empty required field(s) {', '.join(empty)} "
                                  "(truncated file?); give each a value or restore the file")
        for k in ("type", "status"):  # optional, but when written they must hold a value
            if k in data and data[k] is None:
                raise ValidationError(f"engram field {k!r} is empty; give it a value or remove the line")
        known = {f.name for f in dataclasses.fields(cls)} - {"extra", "content_hash"}
        kwargs = {k: v for k, v in data.items() if k in known}
        extra = {k: v for k, v in data.items() if k not in known and k != "content_hash"}
        if kwargs.get("tags") is None:
            kwargs.pop("tags", None)
        if kwargs.get("pinned") is None:
            kwargs.pop("pinned", None)
        return cls(**kwargs, extra=extra or NO_EXTRA)

    @classmethod
    def from_manifest(cls, data: Mapping[str, Any], chash: str) -> "Engram | None":
        """Rebuild an engram from the store manifest's row, without re-validating it; ``None`` if unsure.

        The manifest (:mod:`plur.store.manifest`) holds ``to_dict()`` of an engram that passed
        :meth:`from_dict` when its file was read, keyed to that file's ``(mtime, size, inode)``;
        a fresh process uses it to skip parsing 10k YAML files. Re-running every check there cost
        ~36 us an engram (0.36 s of a cold 10k-engram ``plur recall --mode bm25``); this takes
        ~5 us. Anything not of the exact shape ``to_dict`` writes (an unknown key, a value of
        another type, a time not in :func:`format_time` form) returns ``None``, and the caller
        then validates in full with :meth:`from_dict`.

        Args:
            data: the row's engram dict. chash: the row's ``content_hash``.
        """
        try:
            if not _MANIFEST_KEYS.issuperset(data) or data.get("content_hash") != chash or not chash:
                return None
            d: dict[str, Any] = {}
            for name in _STR_FIELDS:
                v = data[name] if name in _REQUIRED_STR else data.get(name, _DEFAULTS[name])
                if not (type(v) is str or (v is None and name in _OPTIONAL_STR)):
                    return None
                d[name] = v
            if not d["statement"] or d["type"] not in TYPES or d["status"] not in STATUSES:
                return None
            for name in ("scope", "type", "status"):
                d[name] = _shared(d[name])
            d["id"] = sys.intern(d["id"])  # the indexes' ids are the same string (issue 49)
            for name in _TIME_FIELDS:
                v = data.get(name)
                if v is None:
                    if name == "created":
                        return None
                    d[name] = None
                elif type(v) is str and len(v) >= 20 and v[-1] == "Z" and v[10] == "T":
                    d[name] = datetime.fromisoformat(v[:-1]).replace(tzinfo=timezone.utc)
                else:
                    return None
            tags = data.get("tags", ())
            if type(tags) is not list and tags != ():
                return None
            if not all(type(t) is str for t in tags):
                return None
            d["tags"] = tuple(tags)
            source = data.get("source")
            if source is not None and type(source) is not dict:
                return None
            d["source"] = _shared_source(source) if source is not None else None
            pinned = data.get("pinned", False)
            if type(pinned) is not bool:
                return None
            d["pinned"] = pinned
            d["content_hash"] = chash
            d["extra"] = NO_EXTRA
            e = object.__new__(cls)
            for name, v in d.items():
                _set(e, name, v)
            return e
        except (KeyError, TypeError, ValueError, IndexError):
            return None

    def to_yaml(self) -> str:
        """Deterministic YAML text (UTF-8 safe, block style, multi-line statements as literal blocks).

        See :func:`plur.store.engram_yaml.dump_yaml` (libyaml's emitter where it writes the same bytes).
        """
        from .engram_yaml import dump_yaml

        return dump_yaml(self.to_dict())

    @classmethod
    def from_yaml(cls, text: str) -> "Engram":
        """Parse :meth:`to_yaml` output (or a hand-edited file).

        Raises:
            ValidationError: the text is not YAML, not a mapping, or an engram field is invalid.
        """
        from .safe_yaml import load_yaml

        data = load_yaml(text, what="engram", timestamps=False)
        return cls.from_dict(data)


_set = object.__setattr__  # Engram is frozen: from_manifest fills its slots directly
#: Longest text :func:`_shared` makes one object of.
_SHARED_CHARS = 64


def _shared(value: Any) -> Any:
    """One object for each short text many engrams repeat (scope, type, status, a source's kind, format, session,
    role, speaker), via :func:`sys.intern`: each engram read from a file or the manifest had copies of its own,
    ~390 bytes an engram of a captured turn (issue 49: 1.47 KB of a store's memory per engram before)."""
    return sys.intern(value) if type(value) is str and len(value) <= _SHARED_CHARS else value


def _shared_source(source: dict[Any, Any]) -> dict[Any, Any]:
    """``source`` with its keys and short text values :func:`_shared` (a new dict; nested values kept as they are)."""
    return {_shared(k): _shared(v) for k, v in source.items()}
_MANIFEST_KEYS = frozenset(FIELD_ORDER)
_STR_FIELDS = ("id", "statement", "type", "scope", "domain", "rationale", "status", "supersedes")
_REQUIRED_STR = frozenset(("id", "statement", "scope"))
_OPTIONAL_STR = frozenset(("domain", "rationale", "supersedes"))
_DEFAULTS: dict[str, Any] = {"type": "fact", "status": "active", "domain": None, "rationale": None,
                             "supersedes": None}
