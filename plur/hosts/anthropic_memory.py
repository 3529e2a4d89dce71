"""plur as the backend of Anthropic's memory tool (``memory_20250818``): files under ``/memories`` are engrams.

Claude models are trained to keep notes with the memory tool's verbs (view, create, str_replace, insert,
delete, rename on ``/memories``). The Anthropic Python SDK runs the tool on the client through an
abstract class, ``anthropic.lib.tools.BetaAbstractMemoryTool``; :class:`PlurMemoryTool` is that class
over plur (:mod:`plur.hosts.memory_files` does the work), so what the model writes is recalled by
``plur recall``, every host and the memory block, and what plur holds for the scope is there to view.

Example (``pip install -e '.[anthropic]'``)::

    import anthropic
    from plur import Memory
    from plur.hosts.anthropic_memory import PlurMemoryTool

    memory = Memory()
    client = anthropic.Anthropic()
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=1024, tools=[PlurMemoryTool(memory, scope="project:web")],
        messages=[{"role": "user", "content": "Remember that staging deploys go through Argo."}])
    print(runner.until_done().content[-1].text)

Every refusal (a path outside ``/memories``, ``..``, create on an existing path, ``str_replace`` with zero
or several matches, deleting or renaming ``/memories`` itself, renaming onto an existing path) reaches
the model as the tool's error result (``ToolError``), never as an exception in the host.
"""

from __future__ import annotations

from typing import Any

from ..errors import MissingDependencyError, PlurError, require
from .memory_files import MemoryFiles, MemoryToolError

_tools = require("anthropic.lib.tools", "anthropic")


class PlurMemoryTool(_tools.BetaAbstractMemoryTool):  # type: ignore[misc, name-defined]
    """The memory tool with plur behind it.

    Args:
        memory: an open :class:`plur.memory.Memory`.
        scope: whose engrams are the files (default ``global``).
        type: the type of the engrams the model creates (default ``fact``).
        cache_control: passed to the SDK (prompt caching of the tool definition).
    """

    def __init__(self, memory: Any, scope: str = "global", type: str = "fact", *,
                 cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self.files = MemoryFiles(memory, scope, type)

    def _run(self, verb: Any, *args: Any) -> str:
        try:
            return verb(*args)
        except MemoryToolError as exc:
            raise _tools.ToolError(str(exc)) from None
        except MissingDependencyError:
            raise
        except PlurError as exc:  # a duplicate, an over-long text...: the model is told, the host goes on
            raise _tools.ToolError(f"Error: {exc}") from None

    def view(self, command: Any) -> str:
        return self._run(self.files.view, command.path, getattr(command, "view_range", None))

    def create(self, command: Any) -> str:
        return self._run(self.files.create, command.path, command.file_text)

    def str_replace(self, command: Any) -> str:
        return self._run(self.files.str_replace, command.path, command.old_str, command.new_str)

    def insert(self, command: Any) -> str:
        return self._run(self.files.insert, command.path, command.insert_line, command.insert_text)

    def delete(self, command: Any) -> str:
        return self._run(self.files.delete, command.path)

    def rename(self, command: Any) -> str:
        return self._run(self.files.rename, command.old_path, command.new_path)

    def clear_all_memory(self) -> str:
        """Forget every file of the tree (the scope's engrams written through the tool or shown in it)."""
        for engram in self.files.files().values():
            self.files.memory.forget(engram.id)
        return "All memory cleared"


__all__ = ["MemoryFiles", "MemoryToolError", "PlurMemoryTool"]
