"""``plur doctor``'s report of a :class:`~plur.memory.Memory`: store health and the model in use."""

from __future__ import annotations

from typing import Any


def doctor(mem: Any, *, load_model: bool = True) -> dict[str, Any]:
    """Store health and the model in use: :meth:`plur.memory.Memory.doctor`, which documents it."""
    mem._scan(force=True)
    engrams = mem.store.all()

    def count(attr: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in engrams:
            out[getattr(e, attr)] = out.get(getattr(e, attr), 0) + 1
        return dict(sorted(out.items()))

    model: dict[str, Any] = {"requested": mem.settings.model}
    if load_model:
        model = mem.model_resolution().as_dict()
    try:
        mode: int | None = mem.home.stat().st_mode & 0o777
    except OSError:
        mode = None
    from ..store.modes import too_open
    from ..store.quarantine import shown

    exposed = [f"{shown(str(p))} {m:04o}" for p, m in too_open(mem.home)]  # any file name, as UTF-8 text
    return {"home": shown(str(mem.home)), "home_mode": None if mode is None else f"{mode:04o}",
            "home_private": not exposed, "too_open": exposed,
            "engrams": {"total": len(engrams), "by_scope": count("scope"),
                                                "by_type": count("type"), "by_status": count("status")},
            "layout": _layout(mem.store),
            "quarantined": mem.store.quarantined(), "lock": mem.store.lock_state(), "model": model,
            "settings": {k: _shown(k, v) for k, v in vars(mem.settings).items()},
            "secrets_redacted": _screened(mem, "screened_counts"),
            "secrets_redacted_by_door": _screened(mem, "screened_by_door")}


def _layout(store: Any) -> dict[str, int] | None:
    """``{"month": files in month folders, "flat": files in engrams/ itself}`` of a folder store (None for
    PostgreSQL): flat ones are an older plur's (:mod:`plur.store.layout`); names only, nothing stat'ed."""
    if getattr(store, "remote", False):
        return None
    from ..store.folder_scan import list_names
    from ..store.layout import is_engram_name

    names = [n for n in list_names(store.root) if is_engram_name(n)]
    flat = sum(1 for n in names if "/" not in n)
    return {"month": len(names) - flat, "flat": flat}


def _screened(mem: Any, how: str) -> dict[str, int]:
    """Secrets redacted so far, by kind or door (``{}`` when there is no stats database).

    A report changes nothing: an absent stats.db is not created, and one other users can read (an older
    home) is read as it is, keeping the mode ``too_open`` names until ``plur doctor --fix``.
    """
    try:
        if mem._stats is None:
            path = mem.home / "stats.db"
            if not path.exists():
                return {}
            if path.stat().st_mode & 0o077:
                from ..stats.db import StatsDB

                db = StatsDB(path, read_only=True)
                try:
                    return getattr(db, how)()
                finally:
                    db.close()
        return getattr(mem.stats, how)()
    except Exception:  # noqa: BLE001 - a report must not fail on its statistics
        return {}


def _shown(name: str, value: Any) -> Any:
    """A setting as ``plur doctor`` shows it: its JSON value (numbers and flags stay numbers and flags; the home a
    string), the store URI without its password."""
    if name == "store" and value:
        from ..store.pg.connect import redact

        return redact(str(value))
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)
