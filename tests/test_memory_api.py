"""Static tools see Memory's API: every method is defined in a class body (STYLE.md rule 15), not a module
function bound as a class attribute, which the Python reference, IDEs and type checkers list as no method."""

from __future__ import annotations

import inspect
from types import FunctionType

from plur.memory import Memory

#: Memory and the mixins it inherits its methods from.
CLASSES = [c for c in Memory.__mro__ if c is not object]


def _functions() -> list[tuple[type, str, FunctionType]]:
    """(class, name, function) of every method and property getter in the class bodies of :data:`CLASSES`."""
    out: list[tuple[type, str, FunctionType]] = []
    for owner in CLASSES:
        for name, attr in vars(owner).items():
            func = attr.fget if isinstance(attr, property) else attr
            if isinstance(func, FunctionType):
                out.append((owner, name, func))
    return out


def test_every_method_is_defined_in_the_class_body_that_holds_it() -> None:
    bad = [f"{owner.__name__}.{name} is {func.__module__}.{func.__qualname__}"
           for owner, name, func in _functions()
           if func.__qualname__ != f"{owner.__name__}.{name}" or func.__module__ != owner.__module__]
    assert not bad, "define these as methods that delegate in one line:\n" + "\n".join(bad)


def test_every_public_method_takes_self_and_has_a_docstring() -> None:
    bad = []
    for owner, name, func in _functions():
        if name.startswith("_"):
            continue
        if next(iter(inspect.signature(func).parameters), None) != "self":
            bad.append(f"{owner.__name__}.{name}: the first parameter is not self")
        if not (inspect.getdoc(func) or "").strip():
            bad.append(f"{owner.__name__}.{name}: no docstring")
    assert not bad, "\n".join(bad)


def test_the_checks_walk_the_whole_api() -> None:
    """The checks above are not vacuous: every public method the reference documents is among those they walk."""
    walked = {name for _, name, _ in _functions()}
    assert {"learn", "learn_outcome", "learn_many", "update", "supersede", "feedback", "ingest", "import_engrams",
            "forget", "capture", "sessions", "forget_session", "get", "list", "pinned", "recall", "recall_legs",
            "relevance_floor", "index_state", "catch_up", "embed_queued", "reindex", "save", "model_resolution",
            "prepare_serving", "reranker", "refresh_ahead", "cache_dir", "graph_cache_dir", "doctor", "close",
            "keep_home_unwritten", "on_close", "_scan", "_index", "_legs"} <= walked
