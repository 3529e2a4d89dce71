"""What every framework adapter shares: turn a host's context into base instructions + the memory block.

An adapter (``plur.hosts.pydantic_ai``, ``openai_agents``, ``langchain``, ``adk``) only knows its
framework: where the per-request instructions hook is, how to find the latest user message and a
key for the current turn. Everything else lives here, once:

* resolve the plur agent id and scope (a constant, or a function of the framework's context);
* submit the latest user message to the :class:`~plur.prompt.worker.RecallWorker` once per turn (a
  tool-call loop does not resubmit) and, on that first request of the turn only, wait for its recall at
  most ``wait_s`` (setting ``turn_wait_s``, as the DSH plugin's ``waitMs``), so the first request of a
  turn carries the memory for the message it answers, and never waits longer;
* read the agent's cached block from the :class:`~plur.prompt.section.MemorySection` (never waits);
* join base instructions and the block; a failing submit is logged, never breaks a turn.

Example (any host)::

    binding = Binding(MemorySection(worker), agent_id="a1", scope="project:web", base="You are terse.")
    system_prompt = binding.instructions(ctx, latest_user_message, turn_key=run_id)   # every request
"""

from __future__ import annotations

import logging
import threading
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
#: ``wait_s`` when the worker's memory has no ``turn_wait_s`` setting (seconds; the DSH plugin's ``waitMs``).
DEFAULT_WAIT_S = 1.5


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
        wait_s: longest wait, in seconds, of a turn's first request for that turn's recall (``0``: never
            wait; the block then reflects the previous turn). ``None``: the setting ``turn_wait_s``.

    Raises:
        ValidationError: ``section`` is not a :class:`MemorySection`, ``agent_id`` is an empty string, or
            ``wait_s`` is negative.
    """

    def __init__(self, section: MemorySection, *, agent_id: AgentIdSource, scope: ScopeSource = None,
                 base: BaseSource = None, submit: bool = True, capture: bool | None = None,
                 session: ScopeSource = None, wait_s: float | None = None) -> None:
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
        if wait_s is None:
            settings = getattr(getattr(section.worker, "memory", None), "settings", None)
            wait_s = float(getattr(settings, "turn_wait_s", DEFAULT_WAIT_S))
        if not isinstance(wait_s, (int, float)) or isinstance(wait_s, bool) or wait_s < 0:
            raise ValidationError(f"wait_s={wait_s!r} must be a number of seconds >= 0 (0 = never wait)")
        self.wait_s = float(wait_s)
        self._last_turn: OrderedDict[str, Hashable] = OrderedDict()
        self._turn_lock = threading.Lock()

    def agent_of(self, ctx: Any) -> str | None:
        """The plur agent id for this context, or ``None`` when there is none."""
        aid = _resolve(self.agent_id, ctx)
        return str(aid) if aid not in (None, "") else None

    def begin(self, ctx: Any, message: str | None, turn_key: Hashable = None) -> tuple[str | None, int]:
        """Submit ``message`` if it starts a new turn for the context's agent; never waits.

        Returns:
            ``(agent id or None, generation to wait for or 0)``: 0 when nothing was submitted (no agent,
            no message, the same turn as before, submitting off or failed).
        """
        aid = self.agent_of(ctx)
        if aid is None or not self.submit or not message or not message.strip():
            return aid, 0
        key = message if turn_key is None else turn_key
        with self._turn_lock:
            if self._last_turn.get(aid, _NONE) == key:
                return aid, 0
            self._last_turn[aid] = key
            self._last_turn.move_to_end(aid)
            while len(self._last_turn) > MAX_TRACKED_AGENTS:
                self._last_turn.popitem(last=False)
        try:
            return aid, self.section.worker.submit(aid, message, _resolve(self.scope, ctx), capture=self.capture,
                                                   session=_resolve(self.session, ctx), awaited=self.wait_s > 0)
        except PlurError as exc:  # memory must never break a turn: log, keep the block
            log.warning("plur: could not submit a recall for agent %r: %s", aid, exc)
            return aid, 0

    def wait(self, aid: str | None, gen: int) -> None:
        """Wait for the recall of ``gen`` (from :meth:`begin`) at most :attr:`wait_s`; at once when ``gen`` is 0."""
        if aid is not None and gen and self.wait_s > 0:
            self.section.worker.wait_for(aid, gen, self.wait_s)

    def memory(self, ctx: Any, message: str | None, turn_key: Hashable = None) -> str:
        """The agent's block for ``message``: submitted and waited for (at most :attr:`wait_s`) on the
        turn's first request, read from the cache on every later one ('' when there is none).

        Args:
            ctx: the framework's context (passed to the id/scope functions).
            message: the latest user message ('' / ``None``: nothing to submit).
            turn_key: identifies the current turn (a run id, a message id); ``None`` = the message
                text, so an unchanged message in a tool-call loop is not submitted again.
        """
        aid, gen = self.begin(ctx, message, turn_key)
        self.wait(aid, gen)
        return "" if aid is None else self.section.text(aid)

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
