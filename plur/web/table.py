"""The engrams table: filter, sort and paginate engrams joined with their usage counts.

Pure functions over an in-memory list (the store keeps every engram cached), so a
10,000-engram page costs one pass to filter, one sort and one slice; the usage
counts come from one aggregate query (:meth:`plur.stats.db.StatsDB.engram_counts`),
never one query per row.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
import threading
from operator import attrgetter, is_
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from ..store.engram import STATUSES, TYPES, Engram, _check_scope, format_time
from ..errors import ValidationError

#: Columns a person can sort by (the ``sort`` parameter).
SORT_KEYS: tuple[str, ...] = ("created", "statement", "type", "scope", "status", "recalls", "injections",
                              "last_recalled")
#: Rows per page: default and the largest accepted value.
PER_PAGE_DEFAULT = 50
PER_PAGE_MAX = 500


@dataclass(frozen=True)
class TableQuery:
    """A validated engrams-table request (all filters combine with AND).

    Attributes:
        q: case-insensitive substring searched in the statement, tags and id ('' = none).
        scope: exact scope, e.g. ``project:a`` ('' = any).
        type: one of :data:`plur.store.engram.TYPES` ('' = any).
        tag: exact tag ('' = any).
        status: ``active``, ``retired`` or '' (any).
        session: a conversation's id (``source.session`` of captured or ingested turns; '' = any).
        sort: one of :data:`SORT_KEYS`.
        order: ``asc`` or ``desc``.
        page: 1-based page number.
        per_page: rows per page, 1..:data:`PER_PAGE_MAX`.
    """

    q: str = ""
    scope: str = ""
    type: str = ""
    tag: str = ""
    status: str = ""
    session: str = ""
    sort: str = "created"
    order: str = "desc"
    page: int = 1
    per_page: int = PER_PAGE_DEFAULT

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> "TableQuery":
        """Build from URL query parameters.

        Raises:
            ValidationError: an unknown sort key, order, type or status, or a page/per_page that is not a
                positive integer; the message names the value and the accepted ones.
        """
        def text(name: str) -> str:
            return (params.get(name) or "").strip()

        def positive(name: str, default: int) -> int:
            raw = text(name)
            if not raw:
                return default
            if not raw.isdigit() or int(raw) < 1:
                raise ValidationError(f"{name}={raw!r} is not a positive whole number; use e.g. {name}={default}")
            return int(raw)

        query = cls(q=text("q"), scope=text("scope"), type=text("type"), tag=text("tag"), status=text("status"),
                    session=text("session"), sort=text("sort") or "created", order=text("order") or "", page=positive("page", 1),
                    per_page=min(positive("per_page", PER_PAGE_DEFAULT), PER_PAGE_MAX))
        if query.sort not in SORT_KEYS:
            raise ValidationError(f"sort={query.sort!r} is not a column; use one of {', '.join(SORT_KEYS)}")
        if not query.order:
            query = replace(query, order=default_order(query.sort))
        if query.order not in ("asc", "desc"):
            raise ValidationError(f"order={query.order!r}; use asc or desc")
        if query.type and query.type not in TYPES:
            raise ValidationError(f"type={query.type!r}; use one of {', '.join(TYPES)}")
        if query.status and query.status not in STATUSES:
            raise ValidationError(f"status={query.status!r}; use one of {', '.join(STATUSES)}")
        if query.scope:  # as every --scope of the CLI: a malformed one is refused, not an empty table
            _check_scope(query.scope)
        return query

    def params(self, **changes: Any) -> dict[str, str]:
        """Non-default parameters (after ``changes``) for building links; page 1 and defaults omitted."""
        merged = replace(self, **changes)
        out: dict[str, str] = {}
        for name in ("q", "scope", "type", "tag", "status", "session"):
            if getattr(merged, name):
                out[name] = getattr(merged, name)
        if merged.sort != "created" or merged.order != "desc":
            out["sort"], out["order"] = merged.sort, merged.order
        if merged.page != 1:
            out["page"] = str(merged.page)
        if merged.per_page != PER_PAGE_DEFAULT:
            out["per_page"] = str(merged.per_page)
        return out


def default_order(sort: str) -> str:
    """Text columns sort A->Z first; dates and counts biggest/newest first."""
    return "asc" if sort in ("statement", "type", "scope", "status") else "desc"


def iso(epoch_s: float | None) -> str | None:
    """Unix seconds -> ``'2025-07-25T02:00:00Z'`` (``None`` stays ``None``)."""
    if epoch_s is None:
        return None
    return format_time(datetime.fromtimestamp(float(epoch_s), tz=timezone.utc).replace(microsecond=0))


def matches(e: Engram, query: TableQuery, needle: str) -> bool:
    """True if ``e`` passes every filter of ``query`` (``needle`` is ``query.q`` case-folded)."""
    if query.scope and e.scope != query.scope:
        return False
    if query.type and e.type != query.type:
        return False
    if query.status and e.status != query.status:
        return False
    if query.tag and query.tag not in e.tags:
        return False
    if query.session and session_of(e) != query.session:
        return False
    if needle and needle not in e.statement.casefold() and needle not in e.id.casefold() \
            and not any(needle in t.casefold() for t in e.tags):
        return False
    return True


_ZERO: Mapping[str, Any] = {"recalls": 0, "injections": 0, "last_recalled": None}


def _sort_key(sort: str, counts: Mapping[str, Mapping[str, Any]]):
    if sort == "created":
        return lambda e: (e.created, e.id)
    if sort == "statement":
        return lambda e: (e.statement.casefold(), e.id)
    if sort in ("type", "scope", "status"):
        return lambda e: (getattr(e, sort), e.created, e.id)
    if sort == "last_recalled":
        return lambda e: ((counts.get(e.id) or _ZERO)["last_recalled"] or 0.0, e.created, e.id)
    return lambda e: ((counts.get(e.id) or _ZERO)[sort] or 0, e.created, e.id)


#: Characters of a statement a listing's JSON carries (a 1 MiB statement made a page's JSON twin ~1 MB); the
#: pages show 160-240, the engram's own page and ``GET /api/v1/engrams/{id}`` the whole text.
LIST_STATEMENT_CHARS = 1000


def listed_statement(text: str | None) -> dict[str, Any]:
    """``{"statement": the first LIST_STATEMENT_CHARS characters, "statement_chars": its whole length}``
    (``None`` for a forgotten engram: ``{"statement": None, "statement_chars": 0}``)."""
    if text is None:
        return {"statement": None, "statement_chars": 0}
    return {"statement": text[:LIST_STATEMENT_CHARS], "statement_chars": len(text)}


def row(e: Engram, counts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One table row, JSON-safe: engram fields (the statement clipped: :func:`listed_statement`) plus recalls, injections, last_recalled (ISO or None),
    ``valid_until`` (ISO or None) and ``current`` (:meth:`Engram.is_current`: recall and the memory block
    show it)."""
    c = counts.get(e.id) or _ZERO
    return {"id": e.id, **listed_statement(e.statement), "type": e.type, "scope": e.scope, "tags": list(e.tags),
            "status": e.status, "pinned": e.pinned, "created": format_time(e.created),
            "valid_until": format_time(e.valid_until) if e.valid_until else None, "current": e.is_current(),
            "recalls": int(c["recalls"] or 0), "injections": int(c["injections"] or 0),
            "last_recalled": iso(c["last_recalled"])}


def session_of(e: Engram) -> str:
    """The conversation an engram came from (``source.session`` of a conversation turn), else ''."""
    src = e.source or {}
    return src["session"] if src.get("kind") == "conversation" and isinstance(src.get("session"), str) else ""


def facets(engrams: Sequence[Engram]) -> dict[str, list[list[Any]]]:
    """Values for the filter menus with their counts: ``{scopes, types, tags, statuses, sessions: [[value, n]...]}``.

    Scopes, types and statuses sort by value; tags by count (most used first), top 200; sessions (the
    conversations captured or ingested) newest first, top 200.
    """
    newest: dict[str, Any] = {}
    for e in engrams:
        if (sid := session_of(e)) and (sid not in newest or e.created > newest[sid]):
            newest[sid] = e.created
    per_session = Counter(filter(None, map(session_of, engrams)))
    scopes = Counter(map(attrgetter("scope"), engrams))
    types = Counter(map(attrgetter("type"), engrams))
    statuses = Counter(map(attrgetter("status"), engrams))
    tags = Counter(chain.from_iterable(map(attrgetter("tags"), engrams)))
    return {"scopes": [[k, v] for k, v in sorted(scopes.items())],
            "types": [[k, v] for k, v in sorted(types.items())],
            "statuses": [[k, v] for k, v in sorted(statuses.items())],
            "tags": [[k, v] for k, v in sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))[:200]],
            "sessions": [[k, per_session[k]] for k in sorted(newest, key=lambda k: (newest[k], k), reverse=True)[:200]]}


class FacetCache:
    """Remembers :func:`facets` for the last engram list seen.

    The store hands out the same (immutable) :class:`Engram` objects until a file changes, so
    "same objects in the same order" (an identity check, ~1 ms at 10,000 engrams) means "same
    facets". The cache keeps references to those objects, so their ids cannot be reused.
    """

    def __init__(self) -> None:
        self._key: tuple[Engram, ...] = ()
        self._value: dict[str, list[list[Any]]] | None = None
        self._lock = threading.Lock()

    def get(self, engrams: Sequence[Engram]) -> dict[str, list[list[Any]]]:
        """:func:`facets` of ``engrams``, recomputed only when the list changed. Do not mutate the result."""
        with self._lock:
            key, value = self._key, self._value
        if value is not None and len(key) == len(engrams) and all(map(is_, key, engrams)):
            return value
        value = facets(engrams)
        with self._lock:
            self._key, self._value = tuple(engrams), value
        return value


def table_page(engrams: Sequence[Engram], counts: Mapping[str, Mapping[str, Any]],
               query: TableQuery, *, newest_first: bool = False,
               facet_values: dict[str, list[list[Any]]] | None = None) -> dict[str, Any]:
    """Filter, sort and slice ``engrams`` into one page.

    Args:
        engrams: every engram in the store (any order).
        counts: ``engram id -> {recalls, injections, last_recalled (epoch s | None)}``.
        query: filters, sort and page.
        newest_first: ``engrams`` is already sorted by (created, id), newest first (as
            ``Memory.list`` returns it), so the default order needs no sort.
        facet_values: :func:`facets` of ``engrams`` if already known (see :class:`FacetCache`).

    Returns:
        JSON-safe ``{total, matched, page, pages, per_page, sort, order, filters, rows, facets}``; ``page``
        is clamped to the last page.
    """
    needle = query.q.casefold()
    filtered = bool(needle or query.scope or query.type or query.tag or query.status or query.session)
    hits = [e for e in engrams if matches(e, query, needle)] if filtered else list(engrams)
    if not (newest_first and query.sort == "created" and query.order == "desc"):
        hits.sort(key=_sort_key(query.sort, counts), reverse=query.order == "desc")
    pages = max(1, -(-len(hits) // query.per_page))
    page = min(query.page, pages)
    start = (page - 1) * query.per_page
    return {
        "total": len(engrams), "matched": len(hits), "page": page, "pages": pages, "per_page": query.per_page,
        "sort": query.sort, "order": query.order,
        "filters": {"q": query.q, "scope": query.scope, "type": query.type, "tag": query.tag,
                    "status": query.status, "session": query.session},
        "rows": [row(e, counts) for e in hits[start:start + query.per_page]],
        "facets": facet_values if facet_values is not None else facets(engrams),
    }
