"""The MCP extensions the client offers servers at connect (the `extensions` of its capabilities).

One so far: MCP Apps (`io.modelcontextprotocol/ui`), offered while `render_apps` is on. What the
workbench does with a tool's app is the API layer's (api/apps.py); here is only what servers
are told, so that they list their UI tools and send app pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.client.extension import ClientExtension

APPS_EXTENSION_ID = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of an MCP App page (the only kind of page the workbench renders)."""


def apps_extension_offer() -> ClientExtension:
    """The MCP Apps extension as the client offers it to a server: its id and the page MIME type
    the workbench renders."""
    from mcp.client.extension import advertise

    return advertise(APPS_EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


__all__ = ["APPS_EXTENSION_ID", "APP_MIME_TYPE", "apps_extension_offer"]
