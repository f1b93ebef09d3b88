"""Shared by the test servers: serving stdio in the handshake era only (2025-11-25)."""

from __future__ import annotations

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
