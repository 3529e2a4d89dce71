"""LangChain / LangGraph host: the memory block as a dynamic system prompt.

* :func:`memory_middleware` for ``langchain.agents.create_agent``: a ``dynamic_prompt`` middleware
  that, on every model call, replaces the request's system message with the agent's
  ``system_prompt`` + the block (the state's messages never hold it).
* :func:`react_prompt` for langgraph-prebuilt's ``create_react_agent(prompt=...)`` (deprecated
  upstream in favour of ``create_agent``, still shipped): ``[SystemMessage(base + block)] + messages``.

The newest ``HumanMessage`` is submitted to the worker once (keyed by its message id), so a
tool-call loop within one turn reads the block without resubmitting.

Example (``pip install -e '.[langchain]'`` in the plur checkout)::

    from langchain.agents import create_agent
    from plur.hosts.langchain import memory_middleware

    agent = create_agent(model, system_prompt="You are helpful.", middleware=[
        memory_middleware(MemorySection(worker), agent_id="assistant-1", scope="project:web")])
    agent.invoke({"messages": [{"role": "user", "content": "Where do we deploy?"}]})
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..errors import require
from ..prompt.section import MemorySection
from .binding import AgentIdSource, BaseSource, Binding, ScopeSource

EXTRA = "langchain"


def latest_human(messages: Any) -> tuple[str, Hashable]:
    """``(text, turn key)`` of the last human message in a LangChain message list (``('', None)`` if none)."""
    for m in reversed(list(messages or ())):
        if getattr(m, "type", None) == "human":
            content = m.content
            if not isinstance(content, str):
                content = "\n".join(p if isinstance(p, str) else p.get("text", "") for p in content
                                    if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text"))
            return content, (("message", m.id) if getattr(m, "id", None) else None)
    return "", None


def _text(message: Any) -> str | None:
    if message is None:
        return None
    content = message.content
    return content if isinstance(content, str) else str(message.text)


def memory_middleware(section: MemorySection, *, agent_id: AgentIdSource, scope: ScopeSource = None,
                      base: BaseSource = None, submit: bool = True,
                      wait_s: float | None = None) -> Any:
    """A ``create_agent`` middleware that sets each model call's system prompt to base + the block.

    Args:
        section: the host's :class:`~plur.prompt.section.MemorySection`.
        agent_id: the plur agent id, or a function of the ``ModelRequest`` (e.g.
            ``lambda req: req.runtime.context["user"]``); ``None`` = no agent.
        scope: the agent's scope, a function of the ``ModelRequest``, or ``None`` (every scope).
        base: base instructions (or a function of the ``ModelRequest``); default: the agent's own
            ``system_prompt`` as the request carries it.
        submit: submit each turn's newest human message to the worker.
        wait_s: longest wait of a turn's first request for its recall, seconds (``None``: setting
            ``turn_wait_s``; 0: never wait).

    Returns:
        An ``AgentMiddleware`` (put it in ``create_agent(middleware=[...])``).

    Raises:
        MissingDependencyError: langchain is not installed (extra ``langchain``).
    """
    require("langchain.agents", EXTRA)
    from langchain.agents.middleware import dynamic_prompt

    binding = Binding(section, agent_id=agent_id, scope=scope, base=base, submit=submit, wait_s=wait_s)

    def plur_memory(request: Any) -> str:
        text, key = latest_human(request.messages)
        own = None if base is not None else _text(request.system_message)
        return binding.instructions(request, text, key, base=own)

    middleware = dynamic_prompt(plur_memory)
    middleware.binding = binding
    return middleware


def react_prompt(section: MemorySection, *, agent_id: AgentIdSource, scope: ScopeSource = None,
                 base: BaseSource = None, submit: bool = True,
                 wait_s: float | None = None) -> Callable[..., list[Any]]:
    """A ``prompt`` callable for ``langgraph.prebuilt.create_react_agent``: system message + messages.

    ``agent_id`` / ``scope`` / ``base`` functions receive the run's ``RunnableConfig`` (e.g.
    ``lambda config: config["configurable"]["user"]``).

    Raises:
        MissingDependencyError: langgraph is not installed (extra ``langchain``).
    """
    require("langgraph.prebuilt", EXTRA)
    from langchain_core.messages import SystemMessage
    from langchain_core.runnables import RunnableConfig

    binding = Binding(section, agent_id=agent_id, scope=scope, base=base, submit=submit, wait_s=wait_s)

    def plur_prompt(state: Any, config: RunnableConfig) -> list[Any]:
        messages = state["messages"] if isinstance(state, dict) else state.messages
        text, key = latest_human(messages)
        system = binding.instructions(config, text, key)
        return ([SystemMessage(content=system)] if system else []) + list(messages)

    # langgraph injects ``config`` only for a parameter annotated with the RunnableConfig class itself
    plur_prompt.__annotations__ = {"state": Any, "config": RunnableConfig, "return": list}
    plur_prompt.binding = binding  # type: ignore[attr-defined]
    return plur_prompt
