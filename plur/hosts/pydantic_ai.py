"""pydantic-ai host: the memory block as an ``Agent``'s per-request instructions.

pydantic-ai (>= 1.0; checked against 2.68) evaluates instruction functions on every model
request and sends only the current request's instructions to the model, so the block is
replaced each request instead of accumulating in the message history. :func:`attach`
registers one such function with ``on_change='rewrite'``: the ``'append'`` policy would
write every changed block into the history (an ``InstructionDeltaPart`` per change), which
is exactly the accumulation this design avoids. As a dynamic part, it is placed after the
agent's literal instructions, so their prompt-cache prefix is unaffected.

Example (``pip install -e '.[host]'`` in the plur checkout)::

    from pydantic_ai import Agent
    from plur import Memory
    from plur.prompt.worker import RecallWorker
    from plur.prompt.section import MemorySection
    from plur.hosts.pydantic_ai import attach

    memory = Memory()
    worker = RecallWorker(memory)
    agent = Agent("openai:gpt-4o", instructions="You are a helpful assistant.")
    attach(agent, MemorySection(worker), agent_id="assistant-1", scope="project:web")
    agent.run_sync("Where do we deploy the web app?")   # its first request carries the block for it
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import require
from ..prompt.section import MemorySection
from .binding import AgentIdSource, Binding, ScopeSource

#: Name of the instruction part (pydantic-ai ids it ``agent:plur-memory``; a name may not contain ``:``).
INSTRUCTION_NAME = "plur-memory"


def prompt_text(prompt: Any) -> str:
    """The text of a pydantic-ai run prompt: a ``str``, or the ``str`` items of a content sequence."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    try:
        return "\n".join(p for p in prompt if isinstance(p, str))
    except TypeError:
        return ""


def attach(agent: Any, section: MemorySection, *, agent_id: AgentIdSource, scope: ScopeSource = None,
           submit: bool = True, name: str = INSTRUCTION_NAME, capture: bool | None = None,
           session: ScopeSource = None, wait_s: float | None = None) -> Callable[[Any], Awaitable[str | None]]:
    """Register ``section`` as ``agent``'s per-request memory instructions.

    On the first model request of a run the registered function submits the run's user prompt to the
    section's :class:`~plur.prompt.worker.RecallWorker` and waits for that recall at most ``wait_s``
    (setting ``turn_wait_s``; in a thread, so the event loop runs on), then returns the agent's block; later
    requests of the run (after tool calls) read the cached block without waiting.

    Args:
        agent: a ``pydantic_ai.Agent``.
        section: the :class:`~plur.prompt.section.MemorySection` (one per host; many agents may share it).
        agent_id: the plur agent id, or a function ``RunContext -> id | None`` (e.g. from ``ctx.deps``).
            ``None`` means no agent: no block, nothing submitted.
        scope: the agent's scope (``'project:a'`` sees ``project:a`` and ``global``), a function of
            ``RunContext``, or ``None`` for every scope.
        submit: submit each run's prompt to the worker (turn off if the host submits itself).
        name: the instruction part's name.
        capture: also learn each submitted prompt as an engram, after its recall (see
            :class:`~plur.prompt.worker.RecallWorker`, ``capture``; privacy note in the README).
            ``None`` follows the worker's setting; ``True``/``False`` override it for this agent.
        session: the conversation id recorded in captured engrams' provenance, or a function of
            ``RunContext`` (e.g. from ``ctx.deps``); ``None``: the worker's per-run session.
        wait_s: longest wait of a run's first request for its recall, seconds (``None``: setting ``turn_wait_s``).

    Returns:
        The registered async instructions function (call it with a ``RunContext`` to inspect).

    Raises:
        MissingDependencyError: pydantic-ai is not installed (extra ``host``).
    """
    require("pydantic_ai", "host")
    binding = Binding(section, agent_id=agent_id, scope=scope, submit=submit, capture=capture, session=session,
                      wait_s=wait_s)

    async def plur_memory(ctx: Any) -> str | None:
        run_id = getattr(ctx, "run_id", None)
        aid, gen = binding.begin(ctx, prompt_text(getattr(ctx, "prompt", None)),
                                 turn_key=("run", run_id) if run_id is not None else None)
        if gen and binding.wait_s > 0:  # the run's first request: wait for its recall, off the event loop
            await asyncio.to_thread(binding.wait, aid, gen)
        return (section.text(aid) if aid is not None else "") or None

    try:
        agent.instructions(name=name, on_change="rewrite")(plur_memory)
    except TypeError:  # pydantic-ai before named parts / on_change: every dynamic part is rewritten
        agent.instructions(plur_memory)
    return plur_memory
