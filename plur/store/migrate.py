"""Copy every engram from one store to another, exactly: a folder to PostgreSQL and back (``plur migrate``).

An engram keeps its id and every field, unknown keys and provenance included (the same YAML comes out at
the other end, so the same :func:`~plur.store.engram.engram_version`). Engrams the target already holds
with the same content are skipped, so a migration can be re-run; one the target holds *differently* is a
conflict and nothing is written. Only engrams move: indexes, embedding caches and stats.db stay with each
home (each machine rebuilds its indexes from the store, embeddings come from the shared table when there).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConflictError

#: Engrams written per transaction / lock.
BATCH = 1000
#: Fewer engrams than this copy without a progress bar (a bar for two engrams is noise).
PROGRESS_MIN = 1000


@dataclass(frozen=True)
class MigrateResult:
    """What :func:`migrate` did: ``copied`` engrams written, ``skipped`` already there, ``quarantined`` source
    files that did not load (not copied; ``plur doctor`` lists them)."""

    copied: int
    skipped: int
    quarantined: int


def open_target(where: str, max_statement_bytes: int = 1 << 20) -> Any:
    """A store for a migration end: a ``postgresql://`` URI, or a plur home folder (its ``engrams/``).

    Raises:
        StoreError, DatabaseUnavailableError: it cannot be opened.
    """
    if where.startswith(("postgresql://", "postgres://")):
        from .pg.store import PgStore

        return PgStore(where, None, max_statement_bytes=max_statement_bytes, listen=False)
    from .store import EngramStore

    return EngramStore(Path(where).expanduser(), max_statement_bytes=max_statement_bytes)


def migrate(source: Any, target: Any, *, progress: bool = False) -> MigrateResult:
    """Copy every engram of ``source`` into ``target`` (both stores: folder or PostgreSQL).

    Args:
        source, target: stores (:func:`open_target`).
        progress: a tqdm bar on stderr (only for :data:`PROGRESS_MIN` engrams or more, to a terminal).

    Returns:
        A :class:`MigrateResult`.

    Raises:
        ConflictError: the target holds an engram with one of the ids but other content (nothing written).
        DatabaseUnavailableError, StoreError: a store cannot be read or written; batches already
            written stay (re-running skips them).
    """
    from tqdm import tqdm

    engrams = source.all()
    have = target.by_id()
    todo, skipped, differ = [], 0, []
    for e in engrams:
        old = have.get(e.id)
        if old is None:
            todo.append(e)
        elif old.to_yaml() == e.to_yaml():
            skipped += 1
        else:
            differ.append(e.id)
    if differ:
        raise ConflictError(f"{len(differ)} engram(s) are in the target with other content (first {differ[0]}); "
                            "nothing was copied: migrate into an empty store, or forget them there first")
    # a bar only where someone watches a copy that takes a while (not for a handful, not into a pipe or log)
    show = progress and len(todo) >= PROGRESS_MIN and sys.stderr.isatty()
    with tqdm(total=len(todo), desc="migrate", unit="engram", disable=not show) as bar:
        for start in range(0, len(todo), BATCH):
            part = todo[start:start + BATCH]
            out = target.add_many(part, dedupe=False)
            moved = [(a.id, b.id) for a, (b, _) in zip(part, out) if a.id != b.id]
            if moved:  # cannot happen: the ids were checked free above, and writes hold the target's lock
                raise ConflictError(f"engram {moved[0][0]} was written as {moved[0][1]} (taken meanwhile); "
                                    "run the migration again")
            bar.update(len(part))
    target.save_manifest()
    return MigrateResult(copied=len(todo), skipped=skipped, quarantined=source.quarantined_count())
