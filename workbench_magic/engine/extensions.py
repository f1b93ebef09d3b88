"""The MCP extensions the client offers servers at connect (the `extensions` of its capabilities).

- MCP Apps (`io.modelcontextprotocol/ui`), offered while `render_apps` is on. What the workbench
  does with a tool's app is the API layer's (api/apps/views.py); here is only what servers are told, so
  that they list their UI tools and send app pages.
- Skills (`io.modelcontextprotocol/skills`, SEP-2640), always: `skills/list`, `skills/get` and
  `skill://` resources (skills.py).
- Tasks (`io.modelcontextprotocol/tasks`, SEP-2663), always on 2026-07-28 connections: a
  `tools/call` the server answers with a task is followed to its end (extension_tasks.py).

`declared_extensions` reads what a server declares: the ids on its status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench_magic.engine.sdk.session import raw_sender

if TYPE_CHECKING:
    from mcp.client.extension import ClientExtension

APPS_EXTENSION_ID = "io.modelcontextprotocol/ui"
SKILLS_EXTENSION_ID = "io.modelcontextprotocol/skills"
TASKS_EXTENSION_ID = "io.modelcontextprotocol/tasks"
APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of an MCP App page (the only kind of page the workbench renders)."""


def apps_extension_offer() -> ClientExtension:
    """The MCP Apps extension as the client offers it to a server: its id and the page MIME type
    the workbench renders."""
    from mcp.client.extension import advertise

    return advertise(APPS_EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


def skills_extension_offer() -> ClientExtension:
    """The Skills extension as the client offers it: the id alone (it has no settings)."""
    from mcp.client.extension import advertise

    return advertise(SKILLS_EXTENSION_ID)


async def raw_request(
    session: Any, method: str, params: dict[str, Any] | None, *, name: str | None = None
) -> dict[str, Any]:
    """Send a request the SDK has no method for (an extension's: `skills/list`, `tasks/get`) the
    way the session sends its own: stamped with the era's per-request fields (protocol version,
    capabilities, log level on 2026-07-28), `name` as its `Mcp-Name` header. Returns the raw
    result; an error answer raises the SDK's `MCPError`, as for any request (boundary.py maps it).

    The session's stamp and dispatcher are private members (sdk/session.py)."""
    send = raw_sender(session)
    return await send({"method": method, "params": dict(params or {})}, name=name)


def declared_extensions(capabilities: Any) -> tuple[str, ...]:
    """The ids of the extensions a server's capabilities declare, sorted."""
    return tuple(sorted(getattr(capabilities, "extensions", None) or ()))


__all__ = [
    "APPS_EXTENSION_ID",
    "APP_MIME_TYPE",
    "SKILLS_EXTENSION_ID",
    "TASKS_EXTENSION_ID",
    "apps_extension_offer",
    "declared_extensions",
    "raw_request",
    "skills_extension_offer",
]
