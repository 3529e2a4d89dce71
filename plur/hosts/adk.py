"""Google ADK host: the memory block from an ``LlmAgent``'s ``InstructionProvider``.

ADK resolves a callable ``instruction`` (an ``InstructionProvider``: ``ReadonlyContext -> str``)
on every model call (``LlmAgent.canonical_instruction``) and puts it in that request's system
instruction, so the block is replaced each call, never added to the session's events.
:func:`instruction_provider` builds one: base instructions + the block; the invocation's user
message (``ctx.user_content``) is submitted to the worker once per invocation.

ADK does not inject ``{state}`` placeholders into a provider's text (``bypass_state_injection``):
pass the base instructions already filled in, or a function of the context.

Example (``pip install -e '.[adk]'`` in the plur checkout)::

    from google.adk.agents import LlmAgent
    from plur.hosts.adk import instruction_provider

    agent = LlmAgent(name="assistant", model="gemini-2.5-flash", instruction=instruction_provider(
        MemorySection(worker), agent_id=lambda ctx: ctx.user_id, base="You are helpful."))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import require
from ..prompt.section import MemorySection
from .binding import AgentIdSource, BaseSource, Binding, ScopeSource

EXTRA = "adk"


def content_text(content: Any) -> str:
    """The text parts of a ``google.genai.types.Content`` joined by newlines ('' for ``None``)."""
    parts = getattr(content, "parts", None) or ()
    return "\n".join(p.text for p in parts if isinstance(getattr(p, "text", None), str) and p.text)


def instruction_provider(section: MemorySection, *, agent_id: AgentIdSource, scope: ScopeSource = None,
                         base: BaseSource = None, submit: bool = True,
                         wait_s: float | None = None) -> Callable[[Any], str]:
    """An ``InstructionProvider`` for ``LlmAgent(instruction=...)``: base instructions + memory block.

    Args:
        section: the host's :class:`~plur.prompt.section.MemorySection`.
        agent_id: the plur agent id, or a function of ADK's ``ReadonlyContext`` (e.g.
            ``lambda ctx: ctx.user_id``, or ``ctx.state["agent"]``); ``None`` = no agent.
        scope: the agent's scope, a function of the ``ReadonlyContext``, or ``None`` (every scope).
        base: base instructions (or a function of the ``ReadonlyContext``), placed before the block.
        submit: submit each invocation's user message to the worker.
        wait_s: longest wait of a turn's first request for its recall, seconds (``None``: setting
            ``turn_wait_s``; 0: never wait).

    Returns:
        A synchronous provider; ADK calls it before each model call. Waits for a turn's recall on its first call only,
        at most ``wait_s`` (setting ``turn_wait_s``).

    Raises:
        MissingDependencyError: google-adk is not installed (extra ``adk``).
    """
    require("google.adk", EXTRA)
    binding = Binding(section, agent_id=agent_id, scope=scope, base=base, submit=submit, wait_s=wait_s)

    def plur_instruction(ctx: Any) -> str:
        return binding.instructions(ctx, content_text(getattr(ctx, "user_content", None)),
                                    turn_key=("invocation", getattr(ctx, "invocation_id", None)))

    plur_instruction.binding = binding  # type: ignore[attr-defined]
    return plur_instruction
