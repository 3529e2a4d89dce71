"""A generic host shape: named, ordered prompt sections whose text is re-rendered per request.

The pattern (from hosts that re-render their system prompt on every request): a section's text
may be a function of the assembly (who the prompt is for), so memory is *replaced* each turn and
never accumulates in the conversation. Any framework can adopt it in a few lines::

    registry = PromptRegistry()
    registry.add("persona", "You are a careful coding assistant.", order=10)
    registry.add(MemorySection(worker))             # name "plur:memory", order 50
    system_prompt = registry.render({"agent_id": "agent-1"})   # call on every request
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import ValidationError

SectionText = str | Callable[[Any], str]


class SectionLike(Protocol):
    """Anything with ``name``, ``order`` and ``text(assembly)``; :class:`plur.prompt.section.MemorySection` is one."""

    name: str
    order: int

    def text(self, assembly: Any) -> str: ...


@dataclass(frozen=True)
class Section:
    """One registered section.

    Attributes:
        name: unique within a registry.
        order: lower renders first; ties keep registration order.
        text: literal text, or a function ``assembly -> str`` called on every render ('' = absent).
    """

    name: str
    order: int
    text: SectionText

    def render(self, assembly: Any) -> str:
        """This section's text for ``assembly``."""
        return self.text(assembly) if callable(self.text) else self.text


class PromptRegistry:
    """Named, ordered prompt sections, rendered anew for each request. Thread-safe.

    Register once per host, not once per agent: a section's function receives the assembly and
    picks the agent's content itself (registering per agent under one name is refused, so one
    agent's memory can never be served to another by a swallowed duplicate).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sections: tuple[tuple[int, int, Section], ...] = ()
        self._serial = 0

    def add(self, section: str | SectionLike, text: SectionText | None = None, *, order: int = 100
            ) -> Callable[[], None]:
        """Register a section: ``add(name, text, order=...)`` or ``add(obj)`` with ``.name/.order/.text``.

        Returns:
            A function that removes the section again (idempotent).

        Raises:
            ValidationError: an empty or already registered name, or missing text.
        """
        if isinstance(section, str):
            if text is None:
                raise ValidationError(f"section {section!r} needs text: a string or a function(assembly) -> str")
            entry = Section(section, order, text)
        else:
            entry = Section(section.name, section.order, section.text)
        if not isinstance(entry.name, str) or not entry.name:
            raise ValidationError(f"a section needs a non-empty name, got {entry.name!r}")
        with self._lock:
            if any(s.name == entry.name for _, _, s in self._sections):
                raise ValidationError(f"a section named {entry.name!r} is already registered; "
                                      "register it once per host, or remove the old one first")
            self._serial += 1
            self._sections = tuple(sorted(self._sections + ((entry.order, self._serial, entry),),
                                          key=lambda t: (t[0], t[1])))

        def remove() -> None:
            with self._lock:
                self._sections = tuple(t for t in self._sections if t[2] is not entry)

        return remove

    def sections(self) -> list[Section]:
        """The registered sections in render order."""
        return [s for _, _, s in self._sections]

    def render_parts(self, assembly: Any = None) -> list[tuple[str, str]]:
        """``(name, text)`` of every section with non-empty text for ``assembly``, in order."""
        out = []
        for _, _, s in self._sections:  # a snapshot: sections added meanwhile wait for the next request
            text = s.render(assembly)
            if text:
                out.append((s.name, text))
        return out

    def render(self, assembly: Any = None, separator: str = "\n\n") -> str:
        """The whole prompt for ``assembly``: non-empty sections joined by ``separator``."""
        return separator.join(text for _, text in self.render_parts(assembly))
