"""Bundled demo servers and the embedded default config (toolbox ``demo``).

The servers are small Python MCP servers written with ``mcp.server.MCPServer``; they run
offline with nothing but this package installed, as ``python -m workbench_magic.demo.<name>``.
"""

from __future__ import annotations

import sys
from typing import Any

DEMO_SERVERS = ("datasets", "notes")


def default_config_dict() -> dict[str, Any]:
    """The embedded default config: one toolbox ``demo`` with every bundled demo server."""
    return {
        "toolboxes": {
            "demo": {
                "description": "Bundled demo servers: small datasets to query, and a notes store",
                "mcpServers": {
                    name: {"command": sys.executable, "args": ["-m", f"workbench_magic.demo.{name}"]}
                    for name in DEMO_SERVERS
                },
            }
        }
    }
