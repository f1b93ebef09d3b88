"""The embedded default config, used when no config file is found: toolbox ``demo`` with the
bundled demo servers (`workbench_magic.demo`), in-process, offline.

Plain data: naming the demo servers does not import them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEMO_SERVERS", "EMBEDDED_SOURCE", "default_config_dict"]

#: `WorkbenchConfig.source` of the embedded default config.
EMBEDDED_SOURCE = "<embedded default>"
#: The bundled demo servers: ``workbench_magic.demo.<name>``, started by ``workbench_magic.demo:<name>_server``.
DEMO_SERVERS = ("datasets", "notes")


def default_config_dict() -> dict[str, Any]:
    """The embedded default config: one toolbox ``demo`` with every bundled demo server."""
    return {
        "toolboxes": {
            "demo": {
                "description": "Bundled demo servers: small datasets to query, and a notes store",
                "mcpServers": {name: {"python": f"workbench_magic.demo:{name}_server"} for name in DEMO_SERVERS},
            }
        }
    }
