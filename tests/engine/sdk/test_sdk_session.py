"""Contract tests of engine/sdk/session.py: the private members of the SDK's `Client` and
`ClientSession` that the workbench relies on, on real SDK objects (an in-memory `MCPServer`).

A failure here means the MCP SDK changed one of them: re-check engine/sdk/session.py (and its
callers: engine/connection.py, engine/tasks.py, engine/extensions.py, engine/schema.py)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, TypedDict

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from workbench_magic.engine.sdk.session import (
    build_session_hook,
    capabilities_builder,
    output_validator_cache,
    raw_sender,
    request_handler,
    set_capabilities_builder,
    set_request_handler,
    set_request_log_level,
)

RECHECK = "the MCP SDK changed {}: re-check workbench_magic/engine/sdk/session.py and its callers"


class Total(TypedDict):
    total: int


def contract_server() -> MCPServer:
    server = MCPServer("contract")

    @server.tool()
    def declared(ctx: Context[Any, Any]) -> dict[str, Any]:
        """The capabilities the client declared (to this request)."""
        caps = ctx.request_context.session.client_capabilities
        return {"experimental": sorted((caps.experimental or {}) if caps is not None else {})}

    @server.tool()
    async def roots(ctx: Context[Any, Any]) -> int:
        """Asks the client for its roots (a server-to-client request)."""
        import mcp_types as types

        listed = await ctx.request_context.session.send_request(types.ListRootsRequest(), types.ListRootsResult)
        return len(listed.roots)

    @server.tool()
    def add(a: int, b: int) -> Total:
        return {"total": a + b}

    return server


def params(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_client_builds_its_session_through_build_session() -> None:
    assert params(Client._build_session) == ["self", "exit_stack"], RECHECK.format("Client._build_session")
    seen: list[Any] = []

    async def main() -> None:
        client = Client(contract_server())
        build_session_hook(client, seen.append)
        async with client:
            assert seen == [client.session], RECHECK.format("how Client.__aenter__ builds its session")
            assert isinstance(seen[0], ClientSession)

    anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_capability_builder_is_what_the_session_declares(mode: str) -> None:
    """Replaced on the un-entered session, the builder is what the handshake (legacy) and the
    per-request stamp (2026-07-28) declare."""
    assert params(ClientSession._build_capabilities) == ["self", "version"], RECHECK.format(
        "ClientSession._build_capabilities"
    )
    versions: list[str] = []

    def hook(session: Any) -> None:
        build = capabilities_builder(session)
        assert callable(build), RECHECK.format("ClientSession._build_capabilities")

        def declared(version: str) -> Any:
            versions.append(version)
            caps = build(version)
            caps.experimental = {"contract": {}}
            return caps

        set_capabilities_builder(session, declared)

    async def main() -> None:
        client = Client(contract_server(), mode=mode)  # type: ignore[arg-type]
        build_session_hook(client, hook)
        async with client:
            result = await client.call_tool("declared", {})
        assert result.structured_content == {"experimental": ["contract"]}, RECHECK.format(
            "what reads ClientSession._build_capabilities"
        )

    anyio.run(main)
    assert versions and all(isinstance(v, str) for v in versions)


def test_the_request_handler_answers_the_servers_requests() -> None:
    """Replaced before the session is entered, the handler is what answers a server's request."""
    assert params(ClientSession._on_request) == ["self", "dctx", "method", "params"], RECHECK.format(
        "ClientSession._on_request"
    )
    heard: list[str] = []

    def hook(session: Any) -> None:
        answer = request_handler(session)
        assert callable(answer), RECHECK.format("ClientSession._on_request")

        async def on_request(context: Any, method: str, given: Mapping[str, Any] | None) -> dict[str, Any]:
            heard.append(method)
            return await answer(context, method, given)

        set_request_handler(session, on_request)

    async def roots_callback(context: Any) -> Any:
        import mcp_types as types

        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp")])  # type: ignore[arg-type]

    async def main() -> None:
        client = Client(contract_server(), mode="legacy", list_roots_callback=roots_callback)
        build_session_hook(client, hook)
        async with client:
            result = await client.call_tool("roots", {})
        assert result.structured_content == {"result": 1}

    anyio.run(main)
    assert heard == ["roots/list"], RECHECK.format("how ClientSession dispatches a server's request")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_raw_request_is_stamped_and_sent_unchecked(mode: str) -> None:
    assert params(ClientSession.send_request)[:3] == ["self", "request", "result_type"]

    async def main() -> None:
        async with Client(contract_server(), mode=mode) as client:  # type: ignore[arg-type]
            session = client.session
            assert params(session._stamp) == ["data", "opts"], RECHECK.format("ClientSession._stamp")
            assert params(session._dispatcher.send_raw_request)[:3] == ["method", "params", "opts"], RECHECK.format(
                "the dispatcher's send_raw_request"
            )
            send = raw_sender(session)
            raw = await send(
                {"method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}, name="add"
            )
            assert raw["structuredContent"] == {"total": 3}, RECHECK.format("what send_raw_request returns")

    anyio.run(main)


def test_a_session_without_the_members_fails_before_sending() -> None:
    class Bare:
        pass

    with pytest.raises(AttributeError):
        raw_sender(Bare())
    assert capabilities_builder(Bare()) is None and request_handler(Bare()) is None
    assert output_validator_cache(Bare()) is None


def test_the_output_validator_cache_is_what_checks_results() -> None:
    """An entry put in the cache is the validator the SDK uses for the tool's results."""
    checked: list[Any] = []

    class Recording:
        def iter_errors(self, instance: Any) -> Any:
            checked.append(instance)
            return iter(())

    async def main() -> None:
        async with Client(contract_server()) as client:
            await client.list_tools()
            cache = output_validator_cache(client.session)
            assert cache is not None, RECHECK.format("ClientSession._tool_output_validators")
            cache["add"] = Recording()
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"total": 5}
            assert output_validator_cache(client.session) is cache

    anyio.run(main)
    assert checked == [{"total": 5}], RECHECK.format("how ClientSession checks a result against its output schema")


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_new_log_level_goes_with_the_next_2026_request() -> None:
    """The SDK fixes a 2026-07-28 session's log level (SEP-2577's per-request opt-in) when it
    connects; `set_request_log_level` changes it for the requests that follow: the server's log
    messages below the new level stop, those at it arrive."""
    server = MCPServer("contract")

    @server.tool()
    async def chatty(ctx: Context[Any, Any]) -> str:
        await ctx.debug("a debug line")
        await ctx.warning("a warning line")
        return "done"

    heard: list[str] = []
    warned = anyio.Event()

    async def log(params: Any) -> None:
        nonlocal warned
        heard.append(str(params.data))
        if params.data == "a warning line":
            warned.set()

    async def lines_of_a_call(client: Client) -> list[str]:
        """What one call logs: the warning comes last, after the debug line when that is sent."""
        nonlocal warned
        heard.clear()
        warned = anyio.Event()
        await client.call_tool("chatty", {})
        with anyio.fail_after(10):
            await warned.wait()
        return list(heard)

    async def main() -> None:
        async with Client(server, mode="2026-07-28", log_level="debug", logging_callback=log) as client:
            assert await lines_of_a_call(client) == ["a debug line", "a warning line"], RECHECK.format("the opt-in")
            set_request_log_level(client.session, "warning")
            assert await lines_of_a_call(client) == ["a warning line"], RECHECK.format("ClientSession._stamp")
            set_request_log_level(client.session, "debug")  # again: over the SDK's own stamp, not nested
            assert await lines_of_a_call(client) == ["a debug line", "a warning line"]

    anyio.run(main)
