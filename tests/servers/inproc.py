"""An MCP server for in-process tests (`"python": "inproc:mcp"` with tests/servers on sys.path).

`hold` blocks its server's event loop (a plain blocking wait inside an async tool) until the test
sets `RELEASE`; `boom` raises; `warn` logs a warning; `make` is a factory; `crashing` is a server
whose lifespan fails.
"""

from __future__ import annotations

import gc
import logging
import threading
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server import MCPServer
from pydantic import BaseModel

RELEASE = threading.Event()
NOT_A_SERVER = 42

mcp = MCPServer("inproc", instructions="A server that lives in the test process.")


class Sum(BaseModel):
    total: int
    terms: list[int]


@mcp.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(total=a + b, terms=[a, b])


@mcp.tool()
async def hold() -> str:
    """Block this server's loop until the test releases it."""
    RELEASE.wait(30)  # deliberately blocking: the point of the test
    return "released"


@mcp.tool()
def boom() -> str:
    """Fail."""
    raise RuntimeError("kaboom from inside the tool")


@mcp.tool()
def warn(text: str) -> str:
    """Log a warning, then answer."""
    logging.getLogger("inproc.tools").warning("careful: %s", text)
    return text


@mcp.tool()
def caution() -> str:
    """Raise a warning, then answer."""
    warnings.warn("this tool is getting old", UserWarning, stacklevel=1)
    return "ok"


@mcp.tool()
def collect() -> int:
    """Collect garbage here, on the server's thread (what it finds may have been made anywhere)."""
    return gc.collect()


@mcp.resource("inproc://hello")
def hello() -> str:
    """A resource."""
    return "hello from the test process"


def make() -> MCPServer:
    """A fresh server with one tool."""
    server = MCPServer("made")

    @server.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    return server


def not_a_factory() -> int:
    return 3


@asynccontextmanager
async def _broken(server: MCPServer) -> AsyncIterator[None]:
    raise RuntimeError("lifespan failed on purpose")
    yield


crashing = MCPServer("crashing", lifespan=_broken)
