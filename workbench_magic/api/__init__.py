"""The Python API: `Workbench`, the toolbox proxies, the MCP Apps bridge (protocol logic, no widget)."""
