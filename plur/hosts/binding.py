"""What every framework adapter shares: turn a host's context into base instructions + the memory block.

An adapter (``plur.hosts.pydantic_ai``, ``openai_agents``, ``langchain``, ``adk``) only knows its
framework: where the per-request instructions hook is, how to find the latest user message and a
key for the current turn. Everything else lives here, once:

* resolve the plur agent id and scope (a constant, or a function of the framework's context);
* read the agent's cached block from the :class:`~plur.prompt.section.MemorySection` (never waits);
* submit the latest user message to the :class:`~plur.prompt.worker.RecallWorker` once per turn,
  so the block for it is ready on the next request (a tool-call loop does not resubmit);
* join base instructions and the block; a failing submit is logged, never breaks a turn.

Example (any host)::

    binding = Binding(MemorySection(worker), agent_id="a1", scope="project:web", base="You are terse.")
    system_prompt = binding.instructions(ctx, latest_user_message, turn_key=run_id)   # every request
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from ..errors import PlurError, ValidationError
from ..prompt.section import MemorySection

log = logging.getLogger("plur.hosts")

AgentIdSource = str | None | Callable[[Any], str | None]
ScopeSource = str | None | Callable[[Any], str | None]
BaseSource = str | None | Callable[[Any], str | None]

#: Agents whose last submitted turn is remembered (oldest forgotten first); bounds the map's memory.
MAX_TRACKED_AGENTS = 4096
#: Between base instructions and the memory block.
SEPARATOR = "\n\n"


def _resolve(source: Any, ctx: Any) -> Any:
    return source(ctx) if callable(source) else source


class Binding:
    """One host agent's link to plur: which agent id and scope, which base instructions.

    Args:
        section: the host's :class:`MemorySection` (one per host; many bindings may share it).
        agent_id: the plur agent id, or a function ``ctx -> id | None`` of the framework's context.
            ``None`` (or a function returning it) means no agent: no block, nothing submitted.
        scope: the agent's scope (``'project:a'`` sees ``project:a`` and ``global``), a function of
            the context, or ``None`` for every scope.
        base: base instructions placed before the block (a string or a function of the context).
        submit: submit each turn's user message to the worker (off if the host submits itself).
        capture: also learn each submitted message as an engram after its recall (``None``: the
            worker's setting; see :class:`~plur.prompt.worker.RecallWorker` and the README's privacy note).
        session: the conversation id recorded in captured engrams' provenance, or a function of the
            context; ``None``: the worker's per-run session.

    Raises:
        ValidationError: ``section`` is not a :class:`MemorySection`, or ``agent_id`` is an empty string.
    """

    def __init__(self, section: MemorySection, *, agent_id: AgentIdSource, scope: ScopeSource = None,
                 base: BaseSource = None, submit: bool = True, capture: bool | None = None,
                 session: ScopeSource = None) -> None:
        if not isinstance(section, MemorySection):
            raise ValidationError(f"section must be a plur MemorySection, got {type(section).__name__}; "
                                  "build one with MemorySection(RecallWorker(memory))")
        if agent_id == "":
            raise ValidationError("agent_id must not be empty: pass an id, a function of the context, or None")
        self.section = section
        self.agent_id = agent_id
        self.scope = scope
        self.base = base
        self.submit = submit
        self.capture = capture
        self.session = session
        self._last_turn: OrderedDict[str, Hashable] = OrderedDict()

    def agent_of(self, ctx: Any) -> str | None:
        """The plur agent id for this context, or ``None`` when there is none."""
        aid = _resolve(self.agent_id, ctx)
        return str(aid) if aid not in (None, "") else None

    def memory(self, ctx: Any, message: str | None, turn_key: Hashable = None) -> str:
        """The agent's current block ('' if none), then submit ``message`` if this turn was not yet.

        Args:
            ctx: the framework's context (passed to the id/scope functions).
            message: the latest user message ('' / ``None``: nothing to submit).
            turn_key: identifies the current turn (a run id, a message id); ``None`` = the message
                text, so an unchanged message in a tool-call loop is not submitted again.
        """
        aid = self.agent_of(ctx)
        if aid is None:
            return ""
        text = self.section.text(aid)
        if self.submit and message and message.strip():
            key = message if turn_key is None else turn_key
            if self._last_turn.get(aid, _NONE) != key:
                self._last_turn[aid] = key
                self._last_turn.move_to_end(aid)
                while len(self._last_turn) > MAX_TRACKED_AGENTS:
                    self._last_turn.popitem(last=False)
                try:
                    self.section.worker.submit(aid, message, _resolve(self.scope, ctx), capture=self.capture,
                                              session=_resolve(self.session, ctx))
                except PlurError as exc:  # memory must never break a turn: log, keep the block
                    log.warning("plur: could not submit a recall for agent %r: %s", aid, exc)
        return text

    def instructions(self, ctx: Any, message: str | None, turn_key: Hashable = None,
                     base: str | None = None) -> str:
        """Base instructions + :data:`SEPARATOR` + the block (either part may be absent; '' if both are).

        Args:
            ctx, message, turn_key: as for :meth:`memory`.
            base: base instructions overriding the binding's own (e.g. the framework's system prompt).
        """
        head = base if base is not None else _resolve(self.base, ctx)
        block = self.memory(ctx, message, turn_key)
        return SEPARATOR.join(part for part in (head or "", block) if part)


_NONE = object()
