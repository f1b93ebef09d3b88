"""`workbench-magic serve`: the MCP server, forwarding, the fast lane, the stdio and HTTP wires."""
