"""plur as an MCP server (``plur mcp``), for Claude Desktop / Claude Code, Cursor, Windsurf, Zed...

* :mod:`plur.mcp.backend`: the seam between the MCP tools and memory. :class:`~plur.mcp.backend.Backend`
  is the small interface the tools call; :class:`~plur.mcp.backend.LocalBackend` serves it from an
  in-process :class:`~plur.memory.Memory`. A backend that forwards to a running plur service (so a
  server started per client holds no model) implements the same methods.
* :mod:`plur.mcp.scope`: the server's scope pin (authorisation: a tool call cannot widen it).
* :mod:`plur.mcp.server`: the tools, the ``plur://engram/{id}`` resource and the ``memory`` prompt,
  on the ``mcp`` package's ``MCPServer`` (extra ``mcp``: ``pip install -e '.[mcp]'`` in the plur checkout).
"""
