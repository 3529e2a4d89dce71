"""OpenAI Agents SDK host: the memory block in an ``Agent``'s dynamic instructions.

The SDK calls a callable ``instructions(ctx, agent)`` before every model call of a run and sends
its result as that call's system instructions (``Agent.get_system_prompt``), so the block is
replaced each call and never enters the conversation items. :func:`instructions` builds such a
callable: base instructions + the block, and the newest user message of the turn
(``ctx.turn_input``) is submitted to the worker once.

Example (``pip install -e '.[openai-agents]'`` in the plur checkout)::

    from agents import Agent, Runner
    from plur.hosts.openai_agents import instructions

    agent = Agent(name="assistant", instructions=instructions(
        MemorySection(worker), agent_id="assistant-1", scope="project:web", base="You are helpful."))
    Runner.run_sync(agent, "Where do we deploy the web app?")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import require
from ..prompt.section import MemorySection
from .binding import AgentIdSource, BaseSource, Binding, ScopeSource

EXTRA = "openai-agents"


def latest_user_text(items: Any) -> str:
    """Text of the last ``role == "user"`` item of a Responses-style input list ('' if none).

    Args:
        items: a ``str`` (the whole input is the user's message) or a list of input items (dicts or
            SDK objects) whose ``content`` is a ``str`` or a list of ``{"type": "input_text", "text"}`` parts.
    """
    if isinstance(items, str):
        return items
    for item in reversed(list(items or ())):
        get = item.get if isinstance(item, dict) else (lambda k, d=None, o=item: getattr(o, k, d))
        if get("role") != "user":
            continue
        content = get("content")
        if isinstance(content, str):
            return content
        texts = []
        for part in content or ():
            pget = part.get if isinstance(part, dict) else (lambda k, d=None, o=part: getattr(o, k, d))
            if pget("type") in ("input_text", "text") and isinstance(pget("text"), str):
                texts.append(pget("text"))
        return "\n".join(texts)
    return ""


def instructions(section: MemorySection, *, agent_id: AgentIdSource, scope: ScopeSource = None,
                 base: BaseSource = None, submit: bool = True,
                 wait_s: float | None = None) -> Callable[[Any, Any], str]:
    """An ``instructions(ctx, agent)`` callable for ``agents.Agent``: base instructions + memory block.

    Args:
        section: the host's :class:`~plur.prompt.section.MemorySection`.
        agent_id: the plur agent id, or a function of the SDK's ``RunContextWrapper`` (e.g.
            ``lambda ctx: ctx.context["user"]``); ``None`` = no agent (base instructions only).
        scope: the agent's scope, a function of the ``RunContextWrapper``, or ``None`` (every scope).
        base: base instructions (or a function of the ``RunContextWrapper``), placed before the block.
        submit: submit each turn's newest user message to the worker.
        wait_s: longest wait of a turn's first request for its recall, seconds (``None``: setting
            ``turn_wait_s``; 0: never wait).

    Returns:
        A synchronous callable; the SDK calls it before each model call. Waits for a turn's recall on its first call only,
        at most ``wait_s`` (setting ``turn_wait_s``).

    Raises:
        MissingDependencyError: the Agents SDK is not installed (extra ``openai-agents``).
    """
    require("agents", EXTRA)
    binding = Binding(section, agent_id=agent_id, scope=scope, base=base, submit=submit, wait_s=wait_s)

    def plur_instructions(ctx: Any, agent: Any) -> str:
        return binding.instructions(ctx, latest_user_text(getattr(ctx, "turn_input", None)))

    plur_instructions.binding = binding  # type: ignore[attr-defined]
    return plur_instructions
