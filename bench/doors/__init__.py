"""What a host or a user waits for at each door: the prompt section, the service and fast CLI, the web page, MCP
and hooks, a host's first block, linked folders, recall under writers, capture off the turn path."""
