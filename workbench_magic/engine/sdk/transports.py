"""The SDK's transports where we reach past its public names: its in-memory transport (a private
module), and the defaults of its HTTP client (copied: our client keeps them, with shorter-lived
idle connections).

The SDK's stdio client, as modified here, is stdio.py.
"""

from __future__ import annotations

from typing import Any

HTTP_TIMEOUT = 30.0
"""Seconds for connect, write and pool: the SDK's `MCP_DEFAULT_TIMEOUT` (mcp.shared._httpx_utils)."""
HTTP_READ_TIMEOUT = 300.0
"""Seconds to read a held response stream: the SDK's `MCP_DEFAULT_SSE_READ_TIMEOUT`."""
KEEPALIVE_EXPIRY = 1.0
"""Seconds an idle pooled HTTP connection is reused for. httpx's default, 5 s, is the idle
timeout of Node's and uvicorn's servers too: a request sent on a connection idle about that long
can cross the server's close and fail (`ReadError`, "connection closed"), which a loaded machine
made common. Under a second, the server's side is always still open."""


def http_client(headers: dict[str, str] | None = None, auth: Any = None) -> Any:
    """The httpx2 client of a streamable HTTP connection, as the SDK's
    `mcp.shared._httpx_utils.create_mcp_http_client` builds it (its timeouts: 30 s, 300 s to read
    a held stream), with idle connections dropped before a server would close them."""
    import httpx2

    return httpx2.AsyncClient(
        headers=headers,
        auth=auth,
        timeout=httpx2.Timeout(HTTP_TIMEOUT, read=HTTP_READ_TIMEOUT),
        limits=httpx2.Limits(keepalive_expiry=KEEPALIVE_EXPIRY),
    )


def in_memory_transport(server: Any) -> Any:
    """The SDK's in-memory transport to `server` (an `MCPServer` or a low-level `Server`), run as a
    task of the caller's loop: an async context manager of the client's (read, write) streams.
    It lives in the SDK's private `mcp.client._memory` (mcp 2.3)."""
    from mcp.client._memory import InMemoryTransport

    return InMemoryTransport(server)


__all__ = ["HTTP_READ_TIMEOUT", "HTTP_TIMEOUT", "KEEPALIVE_EXPIRY", "http_client", "in_memory_transport"]
