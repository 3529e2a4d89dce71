"""View functions: one per page, each returning a :class:`Page` (template name + JSON-safe data).

A page and its JSON twin come from the same call: :mod:`plur.web.server` renders
``Page.data`` with ``Page.template`` for a browser, or serialises ``Page.data``
for ``?format=json``. Views take the :class:`plur.memory.Memory` facade and plain
parameters (no Starlette objects), so they can be called from tests or a script.
Actions change the store only through ``Memory.update`` / ``Memory.forget``, the
same code path as the CLI (atomic, locked, validated writes).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..store.engram import ID_RE, STATUSES, TYPES, Engram, engram_version, format_time, utcnow, validate_id
from ..errors import ValidationError
from . import table

if TYPE_CHECKING:  # pragma: no cover
    from ..memory import Memory
    from ..index.recall import Hit
    from .queries import UsageCounts

#: Recall modes offered in the playground (see :data:`plur.index.recall.MODES`).
MODES: tuple[str, ...] = ("hybrid", "bm25", "dense")
#: Largest k the playground accepts.
PLAYGROUND_K_MAX = 100


@dataclass(frozen=True)
class Page:
    """What a view returns.

    Attributes:
        template: Jinja2 template file under ``plur/web/templates``.
        data: JSON-safe mapping; the whole JSON twin, and the template's context.
        status: HTTP status code.
    """

    template: str
    data: dict[str, Any] = field(default_factory=dict)
    status: int = 200


@dataclass
class Caches:
    """Optional caches a long-running server passes to the views (a script can omit them).

    Attributes:
        usage: usage counts cached per stats.db version (:class:`plur.web.queries.UsageCounts`);
            ``None`` asks ``Memory.stats`` every time.
        facets: filter-menu values cached per engram list (:class:`plur.web.table.FacetCache`).
    """

    usage: "UsageCounts | None" = None
    facets: table.FacetCache = field(default_factory=table.FacetCache)

    def counts(self, memory: "Memory") -> Mapping[str, Mapping[str, Any]]:
        """Every engram's ``{recalls, below_floor, injections, useful, not_useful, last_recalled}``."""
        return self.usage.all() if self.usage is not None else memory.stats.engram_counts()

    def count(self, memory: "Memory", engram_id: str) -> Mapping[str, Any]:
        """One engram's ``{recalls, below_floor, injections, useful, not_useful, last_recalled}``."""
        if self.usage is not None:
            return self.usage.one(engram_id)
        return memory.stats.engram_counts().get(engram_id) or {"recalls": 0, "below_floor": 0, "injections": 0,
                                                              "useful": 0, "not_useful": 0, "last_recalled": None}


_NO_CACHE = Caches()


def _engrams(memory: "Memory") -> list[Engram]:
    """Every engram, newest first (``Memory.list`` also picks up files edited by hand)."""
    return memory.list()


def engrams_page(memory: "Memory", params: Mapping[str, str], caches: Caches = _NO_CACHE) -> Page:
    """The engrams table (newest first by default) with filters, sorting and pagination.

    Args:
        memory: the facade.
        params: URL query parameters (see :class:`plur.web.table.TableQuery`).
        caches: usage counts and facets to reuse between requests.

    Raises:
        ValidationError: a bad filter, sort or page parameter.
    """
    query = table.TableQuery.from_params(params)
    engrams = _engrams(memory)
    data = table.table_page(engrams, caches.counts(memory), query, newest_first=True,
                            facet_values=caches.facets.get(engrams))
    data["sort_keys"] = list(table.SORT_KEYS)
    data["types_all"] = list(TYPES)
    data["statuses_all"] = list(STATUSES)
    forgotten = params.get("forgotten") or ""
    data["notice"] = f"Forgot {forgotten}." if ID_RE.match(forgotten) else None
    # a damaged store never reads as empty: say how many files could not be loaded (as the CLI does)
    data["quarantined"] = memory.store.quarantined_count()
    return Page("engrams.html", data)


#: The engram page's notice after the add-a-note form (``?added=``).
ADDED = {"new": "Added.",
         "known": "Already known: memory held this exact note in this scope (tags it lacked were added to it)."}


def _time_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "time": table.iso(r.get("time"))} for r in rows]


def engram_page(memory: "Memory", engram_id: str, *, error: str | None = None,
                caches: Caches = _NO_CACHE, status: int = 400, draft: str | None = None,
                added: str | None = None) -> Page:
    """One engram: fields, its YAML file text, usage counts, recall history and injections.

    Args:
        memory: the facade.
        engram_id: ``ENG-YYYY-MM-DD-<6 hex>``.
        error: a message to show above the edit form (a failed edit), returned with ``status``.
        caches: where to read usage counts from.
        status: the HTTP status with an ``error`` (400 invalid, 409 changed meanwhile or duplicate).
        draft: the text the person submitted, shown in the edit form again so it is not lost.
        added: ``new`` or ``known`` after the add-a-note form (a notice says which), else ``None``.

    Raises:
        InvalidIdError: ``engram_id`` is malformed.
        NotFoundError: no such engram.
    """
    e = memory.get(validate_id(engram_id))
    counts = caches.count(memory, e.id)
    data = {
        "engram": e.to_dict(),
        "current": e.is_current(), "expired": e.is_expired(),
        "yaml": e.to_yaml(),
        "path": str(memory.store.file_of(e.id)),
        "counts": {"recalls": int(counts["recalls"] or 0), "below_floor": int(counts.get("below_floor") or 0),
                   "injections": int(counts["injections"] or 0), "useful": int(counts.get("useful") or 0),
                   "not_useful": int(counts.get("not_useful") or 0),
                   "last_recalled": table.iso(counts["last_recalled"])},
        "recalls": _time_rows(memory.stats.recall_history(e.id)),
        "injections": _time_rows(memory.stats.injection_history(e.id)),
        "error": error,
        "version": engram_version(e),
        "draft": draft,
        "conflict": bool(error) and status == 409,
        "notice": ADDED.get(added or ""),
        "types_all": list(TYPES),
        "scopes": [s for s, _ in caches.facets.get(_engrams(memory))["scopes"]],
    }
    return Page("engram.html", data, status=status if error else 200)


def stats_page(memory: "Memory", caches: Caches = _NO_CACHE) -> Page:
    """Statistics: totals, recalled vs never recalled, most recalled, latency per day, recalls per day,
    engrams by scope and type, recalls by agent.

    "Recalled" means returned above the relevance floor (only those can enter a memory block); the
    page and its JSON also give how often hits were returned below it and how often engrams were
    marked useful or not (``Memory.feedback``), per engram in ``most_recalled``.

    Latencies are recall wall times in ms as recorded by ``Memory.recall``; percentiles are nearest-rank
    (see :meth:`plur.stats.db.StatsDB.summary`).
    """
    engrams = _engrams(memory)
    by_id = {e.id: e for e in engrams}
    counts = caches.counts(memory)
    summary = memory.stats.summary()
    active = [e for e in engrams if e.status == "active"]
    recalled = sum(1 for e in active if (counts.get(e.id) or {}).get("recalls"))
    injected = sum(1 for e in active if (counts.get(e.id) or {}).get("injections"))
    below_only = sum(1 for e in active if not (counts.get(e.id) or {}).get("recalls")
                     and (counts.get(e.id) or {}).get("below_floor"))
    useful = sum(1 for e in active if (counts.get(e.id) or {}).get("useful"))
    most = []
    for r in summary.get("most_recalled", [])[:10]:
        e = by_id.get(r["engram_id"])
        c = counts.get(r["engram_id"]) or {}
        most.append({"id": r["engram_id"], "recalls": r["n"],
                     **table.listed_statement(e.statement if e else None), "scope": e.scope if e else None,
                     "injections": int(c.get("injections") or 0), "below_floor": int(c.get("below_floor") or 0),
                     "useful": int(c.get("useful") or 0), "not_useful": int(c.get("not_useful") or 0)})
    facets = caches.facets.get(engrams)
    data = {
        "totals": {
            "engrams": len(engrams), "active": len(active), "retired": len(engrams) - len(active),
            "pinned": sum(1 for e in engrams if e.pinned), "recalls": summary.get("recalls", 0),
            "injections": summary.get("injections", 0), "distinct_recalled": summary.get("distinct_recalled", 0),
            "hits_above_floor": summary.get("hits_above_floor", 0),
            "hits_below_floor": summary.get("hits_below_floor", 0),
            "feedback_useful": summary.get("feedback_useful", 0),
            "feedback_not_useful": summary.get("feedback_not_useful", 0),
            "secrets_redacted": summary.get("secrets_redacted", 0),
        },
        "recalled_active": recalled, "never_recalled_active": len(active) - recalled,
        "below_floor_only_active": below_only, "useful_active": useful,
        "injected_active": injected,
        "latency_ms": summary.get("latency_ms", {}),
        "per_day": summary.get("per_day", []),
        "most_recalled": most,
        "by_scope": facets["scopes"], "by_type": facets["types"],
        "by_agent": summary.get("by_agent", []),
        "generated": format_time(utcnow()),
    }
    return Page("stats.html", data)


def _hit(h: "Hit") -> dict[str, Any]:
    e = h.engram
    return {"rank": h.rank, "id": e.id, **table.listed_statement(e.statement), "scope": e.scope, "type": e.type,
            "pinned": e.pinned, "score": h.score, "bm25_rank": h.bm25_rank, "bm25_score": h.bm25_score,
            "dense_rank": h.dense_rank, "dense_score": h.dense_score, "below_floor": h.below_floor}


def memory_block(memory: "Memory", hits: list["Hit"], pinned: list[Engram]) -> dict[str, Any]:
    """The block the prompt section would inject for ``hits``: :func:`plur.prompt.selection.select_block`, called as
    the recall worker calls it (``settings.budget_tokens``, pinned engrams of the scope).

    Args:
        memory: the facade (for the ``budget_tokens`` setting).
        hits: the ranking the block is built from.
        pinned: always-on pinned engrams (``Memory.pinned(scope)``, as the recall worker passes them).

    Returns:
        ``{text, tokens, budget_tokens, engram_ids, kept_out: [{id, reason}], available, note}``
        (``kept_out``: hits the relevance floor keeps out of the block); ``available`` is False
        (with a note) when :mod:`plur.prompt.block` cannot be imported.
    """
    budget = int(memory.settings.budget_tokens)
    try:
        from ..prompt.selection import select_block  # lazy: keeps the page importable without it
    except ImportError as exc:
        return {"text": "", "tokens": None, "budget_tokens": budget, "engram_ids": [], "available": False,
                "kept_out": [], "note": f"plur.prompt.selection is unavailable ({exc})"}
    sel = select_block(hits, budget, pinned=pinned)
    block = sel.block
    return {"text": block.text, "tokens": block.tokens, "budget_tokens": budget,
            "engram_ids": list(block.engram_ids), "available": True,
            "kept_out": [{"id": h.engram.id, "reason": h.below_floor} for h in sel.kept_out],
            "note": None if block.text else "Nothing to inject: no recalled engram clears the relevance floor."}


def playground_page(memory: "Memory", params: Mapping[str, str], caches: Caches = _NO_CACHE) -> Page:
    """Recall playground: the hybrid ranking beside the BM25 and dense legs, and the memory block.

    Args:
        memory: the facade.
        params: ``q`` (query text; empty shows only the form), ``scope`` ('' = all scopes), ``mode``
            (the ranking the block is built from: hybrid, bm25 or dense), ``k`` (1..100, default the
            ``recall_k`` setting).

    Raises:
        ValidationError: a bad mode, scope or k.

    Playground recalls are not recorded in ``stats.db`` (``Memory.recall_legs`` does not record).
    """
    q = (params.get("q") or "").strip()
    scope = (params.get("scope") or "").strip() or None
    mode = (params.get("mode") or "hybrid").strip()
    if mode not in MODES:
        raise ValidationError(f"mode={mode!r}; use one of {', '.join(MODES)}")
    raw_k = (params.get("k") or "").strip()
    default_k = int(getattr(memory.settings, "recall_k", 10))
    if raw_k and (not raw_k.isdigit() or not 1 <= int(raw_k) <= PLAYGROUND_K_MAX):
        raise ValidationError(f"k={raw_k!r}; use a whole number from 1 to {PLAYGROUND_K_MAX}")
    k = int(raw_k) if raw_k else default_k
    engrams = _engrams(memory)
    scopes = [s for s, _ in caches.facets.get(engrams)["scopes"]]
    data: dict[str, Any] = {"q": q, "scope": scope or "", "mode": mode, "k": k, "modes": list(MODES),
                            "scopes": scopes, "legs": {m: [] for m in MODES}, "block": None, "latency_ms": None}
    if q:
        t0 = time.perf_counter()
        legs = memory.recall_legs(q, k, scope=scope, record=False)
        data["latency_ms"] = round((time.perf_counter() - t0) * 1000.0, 2)
        data["legs"] = {m: [_hit(h) for h in legs.get(m, [])] for m in MODES}
        data["block"] = memory_block(memory, list(legs.get(mode, [])), memory.pinned(scope))
    return Page("playground.html", data)


# -- actions (POST) ---------------------------------------------------------------------------

#: Actions accepted at ``POST /engrams/<id>/<action>`` and the form fields each reads.
ACTIONS: tuple[str, ...] = ("pin", "unpin", "retire", "restore", "edit", "forget")
#: Fields the edit form may change (each optional: a field not sent is left as it is).
EDITABLE: tuple[str, ...] = ("statement", "type", "scope", "tags")


def tags_field(raw: str) -> tuple[str, ...]:
    """The tags of a form's comma-separated text field: ``"a, b,,c "`` -> ``("a", "b", "c")`` (tags hold no comma)."""
    return tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))


def _changes(current: Engram, form: Mapping[str, str]) -> dict[str, Any]:
    """The fields of ``form`` (:data:`EDITABLE`) whose value differs from ``current``'s."""
    changes: dict[str, Any] = {}
    if form.get("statement") is not None:
        statement = form["statement"].replace("\r\n", "\n")
        if statement != current.statement:
            changes["statement"] = statement
    for name in ("type", "scope"):
        value = (form.get(name) or "").strip()
        if form.get(name) is not None and value != getattr(current, name):
            if not value:
                raise ValidationError(f"edit: the {name} must not be empty; keep {getattr(current, name)!r} "
                                      f"or give another")
            changes[name] = value
    if form.get("tags") is not None and tags_field(form["tags"]) != tuple(current.tags):
        changes["tags"] = tags_field(form["tags"])
    return changes


def add(memory: "Memory", form: Mapping[str, str]) -> tuple[Engram, bool]:
    """The add-a-note form (``POST /engrams``): :meth:`plur.memory.Memory.learn_outcome` of its fields.

    Args:
        memory: the facade.
        form: ``statement`` (required), ``type`` (default ``fact``), ``scope`` (default ``global``),
            ``tags`` (comma-separated).

    Returns:
        ``(engram, created)``: ``created`` is False when memory held the exact note in that scope already.

    Raises:
        ValidationError: no statement, or a bad type, scope or tag (the message names the value).
    """
    statement = (form.get("statement") or "").replace("\r\n", "\n")
    if not statement.strip():
        raise ValidationError("add a note: the statement is empty; write the note's text")
    return memory.learn_outcome(statement, type=(form.get("type") or "").strip() or "fact",
                                scope=(form.get("scope") or "").strip() or "global",
                                tags=tags_field(form.get("tags") or ""))


def act(memory: "Memory", engram_id: str, action: str, form: Mapping[str, str]) -> Engram:
    """Apply one action to an engram through the facade.

    Args:
        memory: the facade.
        engram_id: the engram to change.
        action: ``pin`` / ``unpin`` (pinned flag), ``retire`` / ``restore`` (status), ``edit`` (form fields
            ``statement``, ``type``, ``scope``, ``tags``: comma-separated; each optional, a field not sent or
            unchanged is left as it is; ``version``: the version the form was rendered from), ``forget``
            (deletes the file; returns the removed engram).
        form: submitted fields.

    Returns:
        The engram after the change (or, for ``forget``, as it was).

    Raises:
        ValidationError: unknown action, an edit that sends no field, or an invalid new value.
        ConflictError: the engram changed since the form was rendered (nothing written), or the edit gives it
            another active engram's exact text in its scope.
        InvalidIdError, NotFoundError: bad or unknown id.
    """
    validate_id(engram_id)
    if action == "pin":
        return memory.update(engram_id, pinned=True)
    if action == "unpin":
        return memory.update(engram_id, pinned=False)
    if action == "retire":
        return memory.update(engram_id, status="retired")
    if action == "restore":
        return memory.update(engram_id, status="active")
    if action == "edit":
        if not any(form.get(name) is not None for name in EDITABLE):
            raise ValidationError(f"edit needs at least one of the form fields {', '.join(EDITABLE)}")
        current = memory.get(engram_id)
        changes = _changes(current, form)
        if not changes:
            return current
        # the version the form was rendered from: an edit made meanwhile elsewhere is not overwritten
        return memory.update(engram_id, expected=form.get("version") or None, **changes)
    if action == "forget":
        return memory.forget(engram_id)
    raise ValidationError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
