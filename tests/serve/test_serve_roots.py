"""Roots through `workbench-magic serve` over stdio: where a downstream server's roots come from.

A handshake-era (2025-11-25) client that declared roots owns them: every downstream `roots/list` is
forwarded to it, inside a call or not, and its `notifications/roots/list_changed` goes on to each
server that follows roots. A 2026-07-28 client cannot be asked outside a request, so one that
declared roots is asked for them in the request that starts servers, before they start. The working
directory is never a root. A server's own `"roots"` config wins (forwarding.py `ClientRoots`).

The downstream is npm server-everything: it asks its client for roots once, about 350 ms after
`initialized` (no call in flight), keeps the answer and asks again on `roots/list_changed`; its
`get-roots-list` tool reports what it kept.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import SERVERS, npm_server, python_command, python_server, toolbox, write_config
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client

pytestmark = [
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
    pytest.mark.timeout(240),
]


LIMIT = 200
"""Seconds per test."""
WAIT = 60.0
"""Seconds to wait for something the downstream does on its own (its roots ask, a changed list): two
suites side by side on 2 cores starved server-filesystem past 20 s. A wait returns once it holds."""
CLIENTSERVER = str(SERVERS / "clientserver.py")


class UpstreamRoots:
    """The upstream client's roots: changeable, and every `roots/list` it is asked counted."""

    def __init__(self, *uris: str) -> None:
        self.uris = list(uris)
        self.asked = 0
        self.calling = False
        """Whether the test has a call in flight (set around it)."""
        self.asked_in_calls = 0
        self._asked = anyio.Event()

    async def answer(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.asked += 1
        self.asked_in_calls += self.calling
        self._asked.set()
        self._asked = anyio.Event()
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in self.uris])

    async def asked_at_least(self, times: int, why: str) -> None:
        try:
            with anyio.fail_after(WAIT):
                while self.asked < times:
                    await self._asked.wait()
        except TimeoutError:
            pytest.fail(f"the upstream client was asked for its roots {self.asked} times, not {times}: {why}")


@asynccontextmanager
async def served(
    tmp_path: Path, mode: str, roots: UpstreamRoots | None, *, opened: bool = True, **servers: Any
) -> AsyncIterator[Client]:
    """`serve` over stdio with toolbox `r` (server-everything as `ev`, plus `servers`) opened (unless
    not `opened`) by an SDK client of `mode` ("legacy": 2025-11-25, "auto": 2026-07-28) that
    declares `roots` if given."""
    config = write_config(
        tmp_path / "workbench-config.json", {"toolboxes": {"r": toolbox({"ev": npm_server("everything"), **servers})}}
    )
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    callbacks: dict[str, Any] = {"list_roots_callback": roots.answer} if roots is not None else {}
    with open(tmp_path / "serve.stderr", "a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, **callbacks) as client:  # type: ignore[arg-type]
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            if opened:
                answer = await client.call_tool("open_toolbox", {"toolbox": "r"})
                assert answer.structured_content and answer.structured_content["servers_connected"] == 1 + len(servers)
            yield client


async def use(client: Client, name: str, arguments: dict[str, Any] | None = None, server: str = "ev") -> str:
    """`use_tool` on a server of toolbox `r`: the result's text."""
    ident = {"toolbox": "r", "server": server, "name": name}
    result = await client.call_tool("use_tool", {"tool": ident, "arguments": arguments or {}})
    assert not result.is_error, result.content
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def test_a_handshake_era_client_is_asked_for_roots_outside_any_call(tmp_path: Path) -> None:
    roots = UpstreamRoots("file:///upstream-root")

    async def main() -> None:
        async with asyncio.timeout(LIMIT), served(tmp_path, "legacy", roots) as client:
            await roots.asked_at_least(1, "server-everything asks ~350 ms after initialized, with no call in flight")
            assert roots.asked == 1
            roots.calling = True
            listed = await use(client, "get-roots-list")
            roots.calling = False
            assert "file:///upstream-root" in listed
            # What it reports is what it kept from that ask. The call may overtake that answer on its
            # way down (serve's fast lane is quicker than the SDK's server): the server then asks
            # again, inside the call. Outside any call it was asked once.
            assert roots.asked - roots.asked_in_calls == 1

    asyncio.run(main())


def test_b_the_clients_changed_roots_reach_the_servers_that_follow_roots(tmp_path: Path) -> None:
    roots = UpstreamRoots("file:///upstream-root")
    servers = {
        "old": python_server(CLIENTSERVER, "--legacy"),  # follows roots (handshake era)
        "fixed": python_server(CLIENTSERVER, "--legacy", roots=["file:///fixed-root"]),
    }

    async def changed_to(client: Client, uri: str, times: int) -> None:
        """The client changes its roots and says so; the servers that follow roots hear of it and
        server-everything's kept list becomes the new one."""
        roots.uris = [uri]
        await client.send_roots_list_changed()
        assert await use(client, "roots_changed_count", {"at_least": times}, server="old") == str(times)
        deadline = time.monotonic() + WAIT
        while uri not in (listed := await use(client, "get-roots-list")):
            assert time.monotonic() < deadline, f"{uri} never reached server-everything: {listed}"
            await asyncio.sleep(0.05)  # it keeps the answer after replying to the notification: poll
        assert listed.count("file://") == 1

    async def main() -> None:
        async with asyncio.timeout(LIMIT), served(tmp_path, "legacy", roots, **servers) as client:
            assert await use(client, "roots_changed_count", server="old") == "0"
            await changed_to(client, "file:///changed-root", 1)
            asked = roots.asked
            await changed_to(client, "file:///changed-again", 2)  # now surely asked outside any call
            assert roots.asked == asked + 1
            # a server with roots of its own is not told, and keeps them, even inside a call
            assert await use(client, "roots_changed_count", server="fixed") == "0"
            assert "file:///fixed-root" in await use(client, "my_roots", server="fixed")

    asyncio.run(main())


def test_c_a_2026_client_never_makes_the_working_directory_a_root(tmp_path: Path) -> None:
    """A 2026-07-28 client cannot be asked outside a request; this one declared no roots, so every
    ask (server-everything's own, or inside a call) is answered with the workbench's own: none."""

    async def main() -> None:
        async with asyncio.timeout(LIMIT), served(tmp_path, "auto", None) as client:
            listed = await use(client, "get-roots-list")
            assert Path.cwd().resolve().as_uri() not in listed and "file://" not in listed
            assert "no roots are currently configured" in listed

    asyncio.run(main())


def test_d_a_2026_clients_roots_are_the_ones_it_last_gave(tmp_path: Path) -> None:
    """Outside a call, a 2026-07-28 client's roots are the ones it last gave: first those it gave
    when the open asked (test_e), then, once it gives others during a call (here to another
    server's), those: server-filesystem is told, asks again, and serves them."""
    configured, first, given = ((tmp_path / name).resolve() for name in ("configured", "first", "given"))
    for folder in (configured, first, given):
        folder.mkdir()
    roots = UpstreamRoots(first.as_uri())
    servers = {
        "fs": npm_server("filesystem", str(configured)),
        "old": python_server(CLIENTSERVER, "--legacy"),
    }

    async def allowed_becomes(client: Client, folder: Path) -> str:
        deadline = time.monotonic() + WAIT
        while str(folder) not in (allowed := await use(client, "list_allowed_directories", server="fs")):
            assert time.monotonic() < deadline, f"server-filesystem never took {folder}: {allowed}"
            await asyncio.sleep(0.05)  # it takes them after replying to its ask: poll
        return allowed

    async def main() -> None:
        async with asyncio.timeout(LIMIT), served(tmp_path, "auto", roots, **servers) as client:
            assert str(configured) not in await allowed_becomes(client, first)
            roots.uris = [given.as_uri()]
            assert given.as_uri() in await use(client, "my_roots", server="old")  # the client gives others
            allowed = await allowed_becomes(client, given)
            assert str(first) not in allowed and str(Path.cwd().resolve()) not in allowed

    asyncio.run(main())


@pytest.mark.parametrize("first", ["open_toolbox", "use_tool"])
def test_e_a_2026_client_is_asked_for_its_roots_before_the_servers_start(tmp_path: Path, first: str) -> None:
    """A 2026-07-28 client cannot be asked outside a request, and server-filesystem asks for roots
    right after `initialized`, outside any, and never again unless told: so serve asks the client
    (an `InputRequiredResult`) in the request that starts the servers (an open, or a call that
    opens its toolbox), before they start. The server that asks at once and server-everything
    (350 ms later) both get the client's roots."""
    configured, given = (tmp_path / "configured").resolve(), (tmp_path / "given").resolve()
    configured.mkdir()
    given.mkdir()
    roots = UpstreamRoots(given.as_uri())
    filesystem = npm_server("filesystem", str(configured))

    async def main() -> None:
        opened = first == "open_toolbox"
        async with asyncio.timeout(LIMIT), served(tmp_path, "auto", roots, opened=opened, fs=filesystem) as client:
            allowed = await use(client, "list_allowed_directories", server="fs")
            assert roots.asked == 1, f"the {first} that started the servers did not ask the client for its roots"
            deadline = time.monotonic() + WAIT
            while str(given) not in allowed:
                assert time.monotonic() < deadline, f"server-filesystem never took the client's roots: {allowed}"
                await asyncio.sleep(0.05)  # it takes them after replying to its ask: poll
                allowed = await use(client, "list_allowed_directories", server="fs")
            assert str(configured) not in allowed and str(Path.cwd().resolve()) not in allowed
            listed = await use(client, "get-roots-list")
            assert given.as_uri() in listed and listed.count("file://") == 1

    asyncio.run(main())


def test_f_in_flat_mode_a_2026_clients_roots_reach_the_servers_at_its_first_call(tmp_path: Path) -> None:
    """Flat mode opens its toolboxes at the host's first `tools/list`, which cannot ask the host
    anything (SEP-2322): server-filesystem starts with none of its roots. The host's first call asks
    for them; the servers that follow roots are told, ask again, and serve them."""
    configured, given = (tmp_path / "configured").resolve(), (tmp_path / "given").resolve()
    configured.mkdir()
    given.mkdir()
    roots = UpstreamRoots(given.as_uri())
    config = write_config(
        tmp_path / "workbench-config.json",
        {"toolboxes": {"r": toolbox({"fs": npm_server("filesystem", str(configured))})}},
    )
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--mode", "flat"]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))

    async def allowed(client: Client) -> str:
        result = await client.call_tool("list_allowed_directories", {})
        return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))

    async def main() -> None:
        with open(tmp_path / "serve.stderr", "a") as errlog:
            async with (
                asyncio.timeout(LIMIT),
                Client(stdio_client(params, errlog=errlog), mode="auto", list_roots_callback=roots.answer) as client,
            ):
                assert "list_allowed_directories" in [t.name for t in (await client.list_tools()).tools]
                assert roots.asked == 0  # a list asks nothing
                seen = await allowed(client)
                # asked before the call; server-filesystem, told, may ask again during it (forwarded)
                assert roots.asked >= 1, "the first call did not ask the client for its roots"
                deadline = time.monotonic() + WAIT
                while str(given) not in seen:
                    assert time.monotonic() < deadline, f"server-filesystem never took the client's roots: {seen}"
                    await asyncio.sleep(0.05)  # it takes them after replying to its ask: poll
                    seen = await allowed(client)
                assert str(configured) not in seen

    asyncio.run(main())
