"""The package's version, as servers and MCP Apps hosts are told it (`client_info`, `hostInfo`)."""

__version__ = "0.1.0"
"""The package's version (`workbench_magic.__version__`), as servers and MCP Apps hosts are told it."""
