"""factbook for AI assistants: the knowledge base as an MCP server (`factbook mcp`).

search.py    ranked search over facts, and pitfalls matched to an error or a log (stdlib)
tools.py     what each tool does, over one knowledge base; hostile arguments refused
settings.py  what the knowledge base allows (factbook.yaml `mcp:`): direct writes, timeouts
server.py    the MCP wiring (the official `mcp` SDK, the `mcp` extra): tools, resources, stdio

Only server.py imports the SDK, so search and tools work (and are tested) without it.
"""
