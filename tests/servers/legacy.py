"""Shared by the test servers: running one on a transport, and stdio in the handshake era only (2025-11-25)."""

from __future__ import annotations

import anyio
from mcp.server import MCPServer


async def serve_legacy_stdio(server: MCPServer) -> None:
    """Serve stdio in the handshake era only, like a pre-2026 server (`server/discover` is refused)."""
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream), lowlevel.lifespan(lowlevel) as state:
        await serve_loop(
            lowlevel,
            read_stream,
            write_stream,
            lifespan_state=state,
            init_options=lowlevel.create_initialization_options(),
        )


def serve(server: MCPServer, transport: str, *, host: str, port: int, legacy: bool = False) -> None:
    """Run `server` until its transport closes (`legacy`: stdio, handshake era only)."""
    if transport == "stdio" and legacy:
        anyio.run(serve_legacy_stdio, server)
    elif transport == "stdio":
        server.run()
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("sse", host=host, port=port)
