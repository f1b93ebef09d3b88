"""A configurable MCP server for the workbench_magic test suite.

Usage::

    python tests/servers/testserver.py [--transport stdio|http|sse] [--port N]
                                       [--host 127.0.0.1] [--name NAME] [--many N] [--slow]
                                       [--slow-discover SECONDS]

Over stdio nothing but the protocol is written to stdout; diagnostics go to stderr. Over
``http`` the MCP endpoint is ``http://HOST:PORT/mcp``; over ``sse`` it is
``http://HOST:PORT/sse``. uvicorn logs (warning level and up) go to stderr.

Tools:

* ``echo(text)``, ``whoami()`` (the server name), ``add(a, b)`` -> ``{"sum": a + b}``
* ``env(name)`` (an environment variable, or ""), ``cwd()`` (the working directory)
* ``slow(steps, delay)``: one progress notification per step
* ``sleep(seconds)``: for timeouts and cancellation; when cancelled it writes the line
  ``cancelled`` to stderr and appends to `CANCELLED`
* ``fail(message)``: an ``is_error`` result whose text contains ``message``;
  ``crash(message)``: an unexpected exception, whose text the SDK withholds
* ``stderr(text)``: writes ``text`` to stderr and returns "ok"
* ``add_tool(name)`` / ``remove_tool(name)``: change the tool list at runtime and notify
* ``add_resource(uri, text)`` / ``add_prompt(name)``: add a text resource / a prompt (saying
  ``i am <name>``) at runtime and notify that the resource / prompt list changed
* ``image()``: a small PNG; ``table(n)``: ``n`` records, structured as ``{"result": [...]}``
* ``nested(config)``: echoes a nested pydantic model (``$defs``/``$ref`` in the input schema)
* ``exit_now(code)``: the process exits mid-call
* ``divide(a, b)``: ``a / b``; dividing by zero is an ``is_error`` result
* ``hold(key)`` waits until ``release([key, ...])`` (at once if released before); ``held()`` tells
  what waits now, the most that waited at once, and which keys finished or were cancelled, in
  order (for tests of concurrency and order without timing)
* ``ns/sub.tool`` and ``double__under``: echo, under awkward names
* with ``--many N``: ``tool_0000`` .. ``tool_{N-1}``, each ``(x: int = 0) -> x + i``

Resource ``test://hello`` (text "hello"); prompt ``greet(name)``. With ``--slow``, for timeouts:
the resource ``slow://wait`` and the prompt ``slow_prompt``, which take 30 s to answer. With
``--slow-discover SECONDS`` the server starts slowly: it answers no ``server/discover`` until
``SECONDS`` after it started (the handshake era's ``initialize`` is not held).
"""

from __future__ import annotations

import argparse
import logging
import os
import struct
import sys
import time
import zlib
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from legacy import serve  # tests/servers/legacy.py (the script's own folder)
from mcp.server import MCPServer, NotificationOptions
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.types import Image
from mcp.server.models import InitializationOptions
from mcp_types import DiscoverResult, RequestParams
from pydantic import BaseModel, Field

CANCELLED: list[float] = []
"""The ``seconds`` argument of every `sleep` call that was cancelled (in this process)."""


class AnticipatedError(ToolError, ValueError):
    """An anticipated tool failure: a ``ValueError`` whose message reaches the client.

    The SDK only passes the text of ``ToolError`` to the client; any other exception
    becomes the bare ``Error executing tool <name>``.
    """


class Sum(BaseModel):
    """Result of `add`."""

    sum: float


class Row(BaseModel):
    """One record of `table`."""

    id: int
    name: str
    value: float


class Color(StrEnum):
    """An enum, to get an ``enum`` schema under ``$defs``."""

    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Inner(BaseModel):
    """A nested model inside `Config`."""

    label: str = Field(description="A label")
    weight: float = Field(1.0, description="A weight, default 1.0")


class Config(BaseModel):
    """Input of `nested`: a nested model, an enum, a Literal, a list of ints and defaults."""

    name: str = Field(description="A name")
    inner: Inner
    color: Color = Color.RED
    mode: Literal["fast", "slow"] = "fast"
    values: list[int] = Field(default_factory=list, description="Some integers")
    retries: int = Field(3, ge=0, le=10)


def png_bytes(width: int = 16, height: int = 16) -> bytes:
    """A small RGB PNG: a red and blue checkerboard."""
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")
        for x in range(width):
            row += b"\xdc\x32\x32" if (x // 4 + y // 4) % 2 == 0 else b"\x32\x50\xdc"
        rows.append(bytes(row))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )


# --------------------------------------------------------------------------- tools


def echo(text: Annotated[str, Field(description="Text to return")]) -> str:
    """Return the text unchanged."""
    return text


def whoami(ctx: Context) -> str:
    """The server name (``--name``, default ``testserver``)."""
    return ctx.mcp_server.name


def add(a: float, b: float) -> Sum:
    """Add two numbers; structured result ``{"sum": a + b}``."""
    return Sum(sum=a + b)


def env(name: Annotated[str, Field(description="Environment variable name")]) -> str:
    """The value of an environment variable of the server process, or "" if unset."""
    return os.environ.get(name, "")


def cwd() -> str:
    """The working directory of the server process."""
    return os.getcwd()


async def slow(
    ctx: Context,
    steps: Annotated[int, Field(ge=0, le=10_000)] = 5,
    delay: Annotated[float, Field(ge=0)] = 0.1,
) -> str:
    """Take ``steps`` steps of ``delay`` seconds, reporting progress after each (``cancelled`` on stderr)."""
    try:
        for i in range(steps):
            await anyio.sleep(delay)
            await ctx.report_progress(i + 1, steps, f"step {i + 1}/{steps}")
    except anyio.get_cancelled_exc_class():
        print("cancelled", file=sys.stderr, flush=True)
        raise
    return f"done {steps} steps"


async def sleep(seconds: Annotated[float, Field(ge=0)]) -> str:
    """Sleep; if the call is cancelled, write ``cancelled`` to stderr."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        CANCELLED.append(seconds)
        print("cancelled", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


def fail(message: str) -> str:
    """Fail with ``message`` (an ``is_error`` result that contains it)."""
    raise AnticipatedError(message)


def crash(message: str) -> str:
    """Raise an unexpected ``RuntimeError``; the SDK withholds its text from the client."""
    raise RuntimeError(message)


def stderr(text: str) -> str:
    """Write ``text`` (plus a newline) to the server's stderr; returns "ok"."""
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()
    return "ok"


async def _notify_tools_changed(ctx: Context) -> None:
    """Tell the client the tool list changed, in the way its protocol era expects."""
    if (ctx.protocol_version or "").startswith("2026"):
        await ctx.notify_tools_changed()
    else:
        await ctx.request_context.session.send_tool_list_changed()


def _dynamic_tool(name: str) -> Callable[[], str]:
    """A tool function answering ``i am <name>``."""

    def dynamic() -> str:
        return f"i am {name}"

    dynamic.__doc__ = f"A tool added at runtime; returns 'i am {name}'."
    return dynamic


async def add_tool(name: Annotated[str, Field(description="Name of the new tool")], ctx: Context) -> str:
    """Register a new tool ``name`` (returning ``i am <name>``) and notify that the tool list changed."""
    server = ctx.mcp_server
    if any(tool.name == name for tool in await server.list_tools()):
        raise AnticipatedError(f"Tool {name!r} already exists")
    server.add_tool(_dynamic_tool(name), name=name)
    await _notify_tools_changed(ctx)
    return f"added {name}"


async def remove_tool(name: Annotated[str, Field(description="Name of the tool to remove")], ctx: Context) -> str:
    """Remove a tool and notify that the tool list changed."""
    ctx.mcp_server.remove_tool(name)  # raises ToolError("Unknown tool: ...")
    await _notify_tools_changed(ctx)
    return f"removed {name}"


# Resource and prompt lists changing while connected (list-changed notifications on both eras).


async def _notify_list_changed(ctx: Context, kind: Literal["resources", "prompts"]) -> None:
    """Tell the client the resource or prompt list changed, as its protocol era expects."""
    if (ctx.protocol_version or "").startswith("2026"):
        await (ctx.notify_resources_changed() if kind == "resources" else ctx.notify_prompts_changed())
    else:
        session = ctx.request_context.session
        await (session.send_resource_list_changed() if kind == "resources" else session.send_prompt_list_changed())


async def add_resource(
    uri: Annotated[str, Field(description="URI of the new resource")],
    text: Annotated[str, Field(description="Its text")],
    ctx: Context,
) -> str:
    """Register a text resource ``uri`` (named after its last segment) and notify that the resource list changed."""
    name = uri.rstrip("/").rsplit("/", 1)[-1] or uri
    ctx.mcp_server.resource(uri, name=name, mime_type="text/plain")(lambda: text)
    await _notify_list_changed(ctx, "resources")
    return f"added {uri}"


async def add_prompt(name: Annotated[str, Field(description="Name of the new prompt")], ctx: Context) -> str:
    """Register a prompt ``name`` (answering ``i am <name>``) and notify that the prompt list changed."""

    def prompt() -> str:
        return f"i am {name}"

    ctx.mcp_server.prompt(name=name, description=f"A prompt added at runtime; says 'i am {name}'.")(prompt)
    await _notify_list_changed(ctx, "prompts")
    return f"added {name}"


def image() -> Image:
    """A 16x16 PNG checkerboard."""
    return Image(data=png_bytes(), format="png")


def table(n: Annotated[int, Field(ge=0, le=100_000)] = 3) -> list[Row]:
    """``n`` records ``{id, name, value}``; structured as ``{"result": [...]}``."""
    return [Row(id=i, name=f"row{i}", value=i * 1.5) for i in range(n)]


def nested(config: Config) -> Config:
    """Echo a nested config (its defaults filled in)."""
    return config


def exit_now(code: int = 1) -> str:
    """Exit the server process immediately with ``code``, without answering."""
    sys.stderr.flush()
    os._exit(code)


def divide(a: float, b: float) -> float:
    """``a / b``; dividing by zero is an ``is_error`` result."""
    if b == 0:
        raise AnticipatedError("division by zero")
    return a / b


# Calls held until released (this process's state: one server process per connection).
_HOLDING: dict[str, anyio.Event] = {}
_RELEASED: set[str] = set()
_HOLDS: dict[str, Any] = {"peak": 0, "finished": [], "cancelled": []}


async def hold(key: str) -> str:
    """Wait until ``release`` names ``key`` (at once if it already did); returns ``key``."""
    event = _HOLDING[key] = anyio.Event()
    _HOLDS["peak"] = max(_HOLDS["peak"], len(_HOLDING))
    if key in _RELEASED:
        event.set()
    try:
        await event.wait()
    except anyio.get_cancelled_exc_class():
        _HOLDS["cancelled"].append(key)
        raise
    finally:
        del _HOLDING[key]
    _HOLDS["finished"].append(key)
    return key


def release(keys: list[str]) -> int:
    """Let the ``hold`` calls of ``keys`` return (now, or as soon as they come); how many waited."""
    _RELEASED.update(keys)
    waiting = [_HOLDING[k] for k in keys if k in _HOLDING]
    for event in waiting:
        event.set()
    return len(waiting)


def held() -> dict[str, Any]:
    """``{"held": keys waiting now (sorted), "peak": most waiting at once, "finished": [...],
    "cancelled": [...]}`` (both in the order it happened)."""
    return {"held": sorted(_HOLDING), **_HOLDS}


def _numbered_tool(i: int) -> Callable[[int], int]:
    """The ``--many`` tool number ``i``."""

    def numbered(x: int = 0) -> int:
        return x + i

    numbered.__doc__ = f"Scale-test tool {i}: returns x + {i}."
    return numbered


def greet(name: str) -> str:
    """A greeting prompt."""
    return f"Hello, {name}! Please greet me back."


def hello() -> str:
    """The text "hello"."""
    return "hello"


async def slow_read() -> str:
    """A resource that takes 30 s to read."""
    await anyio.sleep(30)
    return "finally"


async def slow_prompt() -> str:
    """A prompt that takes 30 s to render."""
    await anyio.sleep(30)
    return "finally"


# --------------------------------------------------------------------------- server


def build_server(name: str = "testserver", many: int = 0, *, slow_answers: bool = False) -> MCPServer:
    """Build the test server with every tool, the resource and the prompt."""
    functions: list[Callable[..., Any]] = [
        *(echo, whoami, add, env, cwd, slow, sleep, fail, crash, stderr, add_tool, remove_tool),
        *(image, table, nested, exit_now, divide, hold, release, held),
    ]
    tools = [Tool.from_function(fn) for fn in functions]
    tools += [Tool.from_function(fn) for fn in (add_resource, add_prompt)]
    # Names outside the SEP-986 character set are accepted with a logged warning; keep stderr quiet.
    name_logger = logging.getLogger("mcp.shared.tool_name_validation")
    previous = name_logger.level
    name_logger.setLevel(logging.ERROR)
    try:
        tools.append(
            Tool.from_function(echo, name="ns/sub.tool", description="Echo, under a name with a slash and a dot.")
        )
    finally:
        name_logger.setLevel(previous)
    tools.append(
        Tool.from_function(echo, name="double__under", description="Echo, under a name with a double underscore.")
    )
    if many > 0:
        # Deriving the schemas once and copying the Tool keeps --many 10000 fast to start.
        prototype = Tool.from_function(_numbered_tool(0), name="tool_0000")
        for i in range(many):
            numbered = _numbered_tool(i)
            update = {"fn": numbered, "name": f"tool_{i:04d}", "description": numbered.__doc__}
            tools.append(prototype.model_copy(update=update))
    server: MCPServer = MCPServer(
        name,
        instructions="A test server for the workbench_magic test suite.",
        log_level="WARNING",
        tools=tools,
    )
    server.resource("test://hello", name="hello", mime_type="text/plain")(hello)
    server.prompt()(greet)
    if slow_answers:
        server.resource("slow://wait", name="slow", mime_type="text/plain")(slow_read)
        server.prompt()(slow_prompt)
    _advertise_tools_list_changed(server)
    return server


def _advertise_tools_list_changed(server: MCPServer) -> None:
    """Advertise ``tools``/``resources``/``prompts.listChanged`` on handshake-era connections too.

    ``MCPServer`` builds its initialization options without ``NotificationOptions``, so
    pre-2026 clients would see ``listChanged: false`` although `add_tool`, `add_resource` and
    `add_prompt` send the notification. (On 2026-07-28 connections the flags derive from
    ``subscriptions/listen``.)
    """
    lowlevel = server._lowlevel_server
    original = lowlevel.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return original(
            notification_options
            or NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True),
            experimental_capabilities,
            extensions,
        )

    lowlevel.create_initialization_options = create_initialization_options  # type: ignore[method-assign]


def _slow_discover(server: MCPServer, ready_at: float) -> None:
    """Answer `server/discover` only from `ready_at` (a `time.monotonic()`) on: a slow start."""
    lowlevel = server._lowlevel_server
    answer = lowlevel._handle_discover

    async def discover(ctx: Any, params: RequestParams) -> DiscoverResult:
        await anyio.sleep(max(0.0, ready_at - time.monotonic()))  # past it already on a loaded machine
        return await answer(ctx, params)

    lowlevel.add_request_handler("server/discover", RequestParams, discover)


def wait_at_barrier(path: Path, count: int, limit: float = 20.0) -> None:
    """Block start-up until `count` servers have reached the barrier (proves they started together)."""
    with path.open("a") as f:
        f.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + limit
    while len(path.read_text().split()) < count:
        if time.monotonic() > deadline:
            print(f"barrier: only {len(path.read_text().split())} of {count} servers started", file=sys.stderr)
            sys.exit(4)
        time.sleep(0.02)


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run the server until its transport closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--name", default="testserver")
    parser.add_argument("--many", type=int, default=0, metavar="N", help="also register tool_0000 .. tool_{N-1}")
    parser.add_argument("--slow", action="store_true", help="also serve slow://wait and slow_prompt (30 s each)")
    parser.add_argument(
        "--legacy", action="store_true", help="stdio: serve the handshake era only (server/discover is refused)"
    )
    parser.add_argument(
        "--barrier",
        nargs=2,
        metavar=("FILE", "N"),
        help="before serving, append this pid to FILE and wait until FILE lists N pids (max 20 s)",
    )
    parser.add_argument(
        "--slow-discover", type=float, default=0.0, metavar="SECONDS", help="answer no server/discover until then"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.barrier:
        wait_at_barrier(Path(args.barrier[0]), int(args.barrier[1]))
    server = build_server(args.name, args.many, slow_answers=args.slow)
    if args.slow_discover:
        _slow_discover(server, started + args.slow_discover)
    serve(server, args.transport, host=args.host, port=args.port, legacy=args.legacy)


if __name__ == "__main__":
    main()
