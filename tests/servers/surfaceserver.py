"""A server whose answers and surface change with its environment, for the tests of exported
regression tests, snapshots and diffs (tests/api/records/test_regression.py).

Run it as ``python tests/servers/surfaceserver.py`` (stdio). Environment:

* ``SURFACE_GREETING`` (default ``Hello``): the word ``greet`` answers with;
* ``SURFACE_REQUIRE=1``: ``greet`` takes a new required argument ``language``;
* ``SURFACE_NARROW=1``: ``scale(factor)`` takes an integer, not a number, and ``unit`` loses
  ``kelvin``;
* ``SURFACE_DROP=1``: the tool ``shout`` and the prompt ``review`` are gone, and ``stats`` no
  longer returns ``mean``.

Tools: ``greet(name)`` -> ``{"greeting": "Hello, NAME!"}``; ``scale(factor, unit)``;
``stats(values)`` -> ``{"count", "total", "mean"}``; ``stamp()`` -> ``{"value": 42, "at": TIME}``
(``at`` differs on every call); ``ticket()`` -> ``{"id": NEW_ID, "status": "open"}`` as JSON text, no
structured content (``id`` differs on every call); ``receipt()``: such JSON text from a tool
annotated ``-> str``, so the SDK sends it as structured content ``{"result": TEXT}`` too;
``shout(text)``: text only, no structured content; ``fail()``: a tool error. Resource
``surface://readme``; prompt ``review(code)``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

GREETING = os.environ.get("SURFACE_GREETING", "Hello")
REQUIRE = os.environ.get("SURFACE_REQUIRE") == "1"
NARROW = os.environ.get("SURFACE_NARROW") == "1"
DROP = os.environ.get("SURFACE_DROP") == "1"

mcp = MCPServer("surface")


class Greeting(BaseModel):
    greeting: str


if REQUIRE:

    @mcp.tool()
    def greet(name: str, language: str) -> Greeting:
        """Greet someone in a language."""
        return Greeting(greeting=f"{GREETING}, {name}! ({language})")

else:

    @mcp.tool()
    def greet(name: str) -> Greeting:
        """Greet someone."""
        return Greeting(greeting=f"{GREETING}, {name}!")


if NARROW:

    @mcp.tool()
    def scale(factor: int, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
        """Scale by a factor."""
        return {"factor": factor, "unit": unit}

else:

    @mcp.tool()
    def scale(factor: float, unit: Literal["celsius", "fahrenheit", "kelvin"] = "celsius") -> dict[str, Any]:
        """Scale by a factor."""
        return {"factor": factor, "unit": unit}


if DROP:

    class Stats(BaseModel):
        count: int
        total: float

    @mcp.tool()
    def stats(values: list[float]) -> Stats:
        """Count and sum numbers."""
        return Stats(count=len(values), total=sum(values))

else:

    class FullStats(BaseModel):
        count: int
        total: float
        mean: float

    @mcp.tool()
    def stats(values: list[float]) -> FullStats:
        """Count, sum and average numbers."""
        total = sum(values)
        return FullStats(count=len(values), total=total, mean=total / len(values) if values else 0.0)

    @mcp.prompt()
    def review(code: str) -> str:
        """Ask for a code review."""
        return f"Please review:\n{code}"

    @mcp.tool(structured_output=False)
    def shout(text: str) -> str:
        """Say it loudly (text only)."""
        return text.upper() + "!"


@mcp.tool()
def stamp() -> dict[str, Any]:
    """A value and the time of the call (which differs on every call)."""
    return {"value": 42, "at": time.time()}


@mcp.tool(structured_output=False)
def ticket() -> str:
    """Open a ticket: its new id and status, as JSON text (the id differs on every call)."""
    return json.dumps({"id": uuid.uuid4().hex, "status": "open"})


@mcp.tool()
def receipt() -> str:
    """A receipt: its new id and status, as JSON text (the id differs on every call)."""
    return json.dumps({"id": uuid.uuid4().hex, "status": "paid"})


@mcp.tool()
def fail() -> str:
    """Always a tool error."""
    raise ToolError("no luck today")


@mcp.resource("surface://readme", mime_type="text/plain")
def readme() -> str:
    """What this server is."""
    return "a server whose surface changes"


if __name__ == "__main__":
    mcp.run()
