"""`workbench-magic serve` as a subprocess, driven by mcp.Client (stdio and HTTP) and the MCP Inspector CLI."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import NODE_MODULES, children, free_port, npm_server, python_command, stdio_server, toolbox, write_config
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

INSPECTOR = NODE_MODULES / "inspector-cli" / "build" / "cli.js"
RESEARCH_STAGES = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."]
"""The status messages of server-everything's `simulate-research-query` task, in order."""


def serve_command(config: Path, *extra: str) -> list[str]:
    return [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), *extra]


@asynccontextmanager
async def served(config: Path, *extra: str, mode: str = "auto", **client: Any) -> AsyncIterator[Client]:
    command = serve_command(config, *extra)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    with open(config.parent / "serve.stderr", "a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, **client) as c:
            yield c


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def text(result: Any) -> str:
    return "\n".join(b.text for b in result.content if getattr(b, "type", None) == "text")


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WB_SERVE_TOKEN", "from-the-environment")
    return write_config(
        tmp_path / "workbench-config.json",
        {
            "toolboxes": {
                "dev": toolbox(
                    {
                        "s": stdio_server("--name", "in-dev", env={"TOKEN": "${WB_SERVE_TOKEN}"}),
                        "memory": npm_server("memory", env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}),
                    },
                    "development tools",
                ),
                "prod": toolbox({"s": stdio_server("--name", "in-prod", toolFilters=["whoami", "echo"])}, "filtered"),
                "mixed": toolbox({"good": stdio_server(), "bad": {"command": "/nonexistent/server"}}),
            }
        },
    )


def test_meta_tools_instructions_and_a_valid_example(config: Path) -> None:
    async def main() -> None:
        async with served(config) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == {"list_toolboxes", "open_toolbox", "close_toolbox", "use_tool", "search_tools"}
            assert tools["list_toolboxes"].annotations.read_only_hint is True
            assert tools["use_tool"].annotations.open_world_hint is True
            assert tools["open_toolbox"].annotations.idempotent_hint is True
            info = c.instructions or ""
            assert "- dev (2 servers): development tools" in info
            assert "- prod (1 server): filtered" in info
            example = json.loads(info[info.index("{") :])
            jsonschema.validate(example, tools["use_tool"].input_schema)  # the original's example was invalid
            listed = (await c.call_tool("list_toolboxes", {})).structured_content
            assert [t["name"] for t in listed["toolboxes"]] == ["dev", "prod", "mixed"]

    run(main())


def test_open_toolbox_is_idempotent_and_lists_tools_with_schemas(config: Path) -> None:
    async def main() -> None:
        async with served(config) as c:
            first = await c.call_tool("open_toolbox", {"toolbox": "dev"})
            assert not first.is_error
            answer = first.structured_content
            assert set(answer) == {"toolbox", "description", "servers_connected", "tools"}
            assert answer["toolbox"] == "dev" and answer["servers_connected"] == 2
            assert json.loads(text(first)) == answer  # JSON text and structured content agree
            by_name = {(t["server"], t["name"]): t for t in answer["tools"]}
            assert by_name[("s", "echo")]["inputSchema"]["required"] == ["text"]
            assert by_name[("memory", "create_entities")]["toolbox"] == "dev"
            again = await c.call_tool("open_toolbox", {"toolbox": "dev"})
            assert again.structured_content == answer

    run(main())


def test_use_tool_against_server_memory_env_and_filters(config: Path) -> None:
    async def main() -> None:
        async with served(config) as c:
            await c.call_tool("open_toolbox", {"toolbox": "dev"})
            created = await c.call_tool(
                "use_tool",
                {
                    "tool": {"toolbox": "dev", "server": "memory", "name": "create_entities"},
                    "arguments": {"entities": [{"name": "Ada", "entityType": "person", "observations": ["math"]}]},
                },
            )
            assert not created.is_error
            found = await c.call_tool(
                "use_tool",
                {"tool": {"toolbox": "dev", "server": "memory", "name": "search_nodes"}, "arguments": {"query": "Ada"}},
            )
            assert "math" in text(found)
            env = await c.call_tool(
                "use_tool", {"tool": {"toolbox": "dev", "server": "s", "name": "env"}, "arguments": {"name": "TOKEN"}}
            )
            assert text(env) == "from-the-environment"
            # `arguments` defaults to {}
            who = await c.call_tool("use_tool", {"tool": {"toolbox": "dev", "server": "s", "name": "whoami"}})
            assert text(who) == "in-dev"
            # the same server name in another toolbox is another process; filters apply
            prod = (await c.call_tool("open_toolbox", {"toolbox": "prod"})).structured_content
            assert sorted(t["name"] for t in prod["tools"]) == ["echo", "whoami"]
            who = await c.call_tool("use_tool", {"tool": {"toolbox": "prod", "server": "s", "name": "whoami"}})
            assert text(who) == "in-prod"
            filtered = await c.call_tool(
                "use_tool", {"tool": {"toolbox": "prod", "server": "s", "name": "add"}, "arguments": {"a": 1, "b": 2}}
            )
            assert filtered.is_error and text(filtered) == "Tool 'add' not found in server 's' (toolbox 'prod')"
            closed = await c.call_tool("close_toolbox", {"toolbox": "prod"})
            assert closed.structured_content == {"toolbox": "prod", "closed": True}
            who = await c.call_tool("use_tool", {"tool": {"toolbox": "dev", "server": "s", "name": "whoami"}})
            assert text(who) == "in-dev"
            found = (await c.call_tool("search_tools", {"query": "entities"})).structured_content
            assert {t["name"] for t in found["tools"]} >= {"create_entities", "delete_entities"}

    run(main())


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"tool": {"toolbox": "nope", "server": "s", "name": "echo"}},
            "Toolbox 'nope' not found. Available toolboxes:",
        ),
        ({"tool": {"toolbox": "dev", "server": "x", "name": "echo"}}, "Server 'x' not found in toolbox 'dev'"),
        (
            {"tool": {"toolbox": "dev", "server": "s", "name": "zz"}},
            "Tool 'zz' not found in server 's' (toolbox 'dev')",
        ),
        ({"tool": {"toolbox": "", "server": "s", "name": "echo"}}, "Invalid tool identifier: toolbox cannot be empty"),
        ({"tool": {"toolbox": "dev", "server": "", "name": "echo"}}, "Invalid tool identifier: server cannot be empty"),
        ({"tool": {"toolbox": "dev", "server": "s", "name": ""}}, "Invalid tool identifier: name cannot be empty"),
        ({"tool": {"toolbox": "dev", "server": "s"}}, "Invalid tool identifier: missing field 'name'"),
        (
            {"tool": {"toolbox": "dev", "server": "s", "tool": "echo"}},
            "Invalid tool identifier: use 'name' instead of 'tool'",
        ),
        (
            {"tool": {"toolbox": "dev", "server": "s", "name": "echo", "x": 1}},
            "Invalid tool identifier: unknown field 'x'",
        ),
        ({}, "Invalid arguments for use_tool: 'tool' is a required property"),
        (
            {"tool": {"toolbox": "dev", "server": "s", "name": "echo"}, "arguments": {}},
            "Invalid arguments for tool 'echo' in server 's' (toolbox 'dev'): missing required argument 'text'",
        ),
        (
            {"tool": {"toolbox": "dev", "server": "s", "name": "echo"}, "arguments": {"text": "x"}, "extra": 1},
            "Invalid arguments for use_tool: Additional properties are not allowed ('extra' was unexpected)",
        ),
    ],
)
def test_use_tool_is_strict_with_the_design_texts(config: Path, arguments: dict[str, Any], expected: str) -> None:
    async def main() -> None:
        async with served(config) as c:
            result = await c.call_tool("use_tool", arguments)
            assert result.is_error
            assert text(result).startswith(expected), text(result)

    run(main())


def test_downstream_errors_and_failures_never_take_the_server_down(config: Path) -> None:
    async def main() -> None:
        async with served(config) as c:
            mixed = (await c.call_tool("open_toolbox", {"toolbox": "mixed"})).structured_content
            assert mixed["servers_connected"] == 1
            assert mixed["servers_failed"]["bad"].startswith("Failed to connect to server 'bad' in toolbox 'mixed'")
            failed = await c.call_tool(
                "use_tool",
                {"tool": {"toolbox": "mixed", "server": "good", "name": "fail"}, "arguments": {"message": "boom"}},
            )
            assert failed.is_error and "boom" in text(failed)  # the downstream result, unchanged
            crashed = await c.call_tool(
                "use_tool", {"tool": {"toolbox": "mixed", "server": "good", "name": "exit_now"}, "arguments": {}}
            )
            assert crashed.is_error
            assert (
                text(crashed) == "Error executing tool 'exit_now' in server 'good' (toolbox 'mixed'): connection closed"
            )
            again = await c.call_tool(
                "use_tool",
                {"tool": {"toolbox": "mixed", "server": "good", "name": "echo"}, "arguments": {"text": "up"}},
            )
            assert text(again) == "up"
            unknown = await c.call_tool("open_toolbox", {"toolbox": "nope"})
            assert unknown.is_error and text(unknown).startswith("Toolbox 'nope' not found. Available toolboxes:")

    run(main())


@pytest.mark.parametrize("client_mode", ["auto", "legacy"])
def test_dynamic_mode_registers_routes_and_notifies(config: Path, client_mode: str) -> None:
    changes: list[str] = []

    async def on_message(message: Any) -> None:
        if type(message).__name__ == "ToolListChangedNotification":
            changes.append("legacy")

    async def main() -> None:
        async with served(config, "--mode", "dynamic", mode=client_mode, message_handler=on_message) as c:
            modern = c.protocol_version >= "2026-07-28"
            async with asyncio.timeout(60):
                listener = None
                if modern:
                    got, listening = asyncio.Event(), asyncio.Event()

                    async def listen() -> None:
                        async with c.listen(tools_list_changed=True) as sub:  # entered once acknowledged
                            listening.set()
                            async for _ in sub:
                                changes.append("listen")
                                got.set()

                    listener = asyncio.create_task(listen())
                    await listening.wait()  # the server acknowledged the subscription: no change is missed
                await c.call_tool("open_toolbox", {"toolbox": "dev"})
                tools = {t.name: t for t in (await c.list_tools(cache_mode="bypass")).tools}
                echo = tools["dev__s__echo"]
                assert echo.description.startswith("[dev/s] ")
                assert echo.meta == {"toolbox": "dev", "server": "s", "original_name": "echo"}
                assert "dev__memory__create_entities" in tools
                assert text(await c.call_tool("dev__s__echo", {"text": "routed"})) == "routed"
                # a tool name containing "__" routes to the right tool
                assert text(await c.call_tool("dev__s__double__under", {"text": "deep"})) == "deep"
                await c.call_tool("close_toolbox", {"toolbox": "dev"})
                tools = {t.name for t in (await c.list_tools(cache_mode="bypass")).tools}
                assert not any(name.startswith("dev__") for name in tools)
                if modern:
                    await got.wait()
                    assert listener is not None
                    listener.cancel()
            if modern:  # the subscription delivered (the SDK client also tees it into message_handler)
                assert "listen" in changes
            else:  # handshake era: the notification, and only it
                assert changes and set(changes) == {"legacy"}

    run(main())


def test_http_transport_binds_loopback(config: Path, tmp_path: Path) -> None:
    port = free_port()
    log = open(tmp_path / "http.log", "w")
    proc = subprocess.Popen(serve_command(config, "--transport", "http", "--port", str(port)), stderr=log, stdout=log)
    try:

        async def main() -> None:
            deadline = time.monotonic() + 60  # a loaded machine starts serve slowly
            while True:
                try:
                    async with Client(f"http://127.0.0.1:{port}/mcp") as c:
                        opened = (await c.call_tool("open_toolbox", {"toolbox": "prod"})).structured_content
                        assert opened["servers_connected"] == 1
                        who = await c.call_tool(
                            "use_tool", {"tool": {"toolbox": "prod", "server": "s", "name": "whoami"}}
                        )
                        assert text(who) == "in-prod"
                        return
                except (OSError, Exception) as exc:  # the server may still be starting
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise AssertionError(f"HTTP server did not answer: {exc}") from exc
                    await asyncio.sleep(0.2)

        run(main())
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout if shutil.which("ss") else ""
        if listening:
            assert f"127.0.0.1:{port}" in listening and f"0.0.0.0:{port}" not in listening
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        log.close()


def test_invalid_config_fails_fast_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"toolboxes": {"dev": {"mcpServers": {"s": {"comand": "x"}}}}}')
    started = time.monotonic()
    out = subprocess.run(serve_command(bad), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert time.monotonic() - started < 30
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "toolboxes.dev.mcpServers.s.comand: unknown key" in lines[0]


def _serve_children_gone(stop: Callable[[subprocess.Popen[bytes]], None], config: Path) -> None:
    proc = subprocess.Popen(
        serve_command(config), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> dict[str, Any] | None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        if "id" not in message:
            return None
        while True:
            line = proc.stdout.readline()
            reply = json.loads(line)  # stdout carries only protocol messages
            if reply.get("id") == message["id"]:
                return reply

    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    reply = send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "open_toolbox", "arguments": {"toolbox": "dev"}},
        }
    )
    assert reply is not None and reply["result"]["structuredContent"]["servers_connected"] == 2
    downstream = children(proc.pid)
    assert len(downstream) == 2
    stop(proc)
    assert proc.wait(30) == 0
    alive = [p for p in downstream if Path(f"/proc/{p}").exists()]
    assert alive == [], f"downstream servers outlived serve: {alive}"


def test_stdin_eof_closes_every_downstream_server(config: Path) -> None:
    def close_stdin(proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None
        proc.stdin.close()

    _serve_children_gone(close_stdin, config)


def test_sigterm_closes_every_downstream_server(config: Path) -> None:
    _serve_children_gone(lambda proc: proc.send_signal(signal.SIGTERM), config)


def inspector(*args: str) -> Any:
    if not INSPECTOR.exists():
        if os.environ.get("CI"):
            raise RuntimeError("the MCP Inspector is missing: the test command runs npm ci in tests/servers")
        pytest.skip("MCP Inspector not installed (cd tests/servers && npm ci)")
    node = shutil.which("node")
    assert node
    out = subprocess.run([node, str(INSPECTOR), "--cli", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_mcp_inspector_cli_lists_and_calls(config: Path) -> None:
    # The Inspector reads `--config` as its own option: the config travels in WORKBENCH_CONFIG,
    # the route the original MCP Workbench used (the Inspector passes only `-e` variables on).
    command = [
        "-e", f"WORKBENCH_CONFIG={config}", "-e", "WB_SERVE_TOKEN=from-the-environment",
        *python_command("-m", "workbench_magic", "serve"),
    ]  # fmt: skip
    listed = inspector(*command, "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == {
        "list_toolboxes",
        "open_toolbox",
        "close_toolbox",
        "use_tool",
        "search_tools",
    }
    identifier = json.dumps({"toolbox": "dev", "server": "memory", "name": "create_entities"})
    entities = json.dumps({"entities": [{"name": "Grace", "entityType": "person", "observations": ["COBOL"]}]})
    created = inspector(
        *command, "--method", "tools/call", "--tool-name", "use_tool",
        "--tool-arg", f"tool={identifier}", "--tool-arg", f"arguments={entities}",
    )  # fmt: skip
    assert created["isError"] is False
    search = json.dumps({"toolbox": "dev", "server": "memory", "name": "search_nodes"})
    found = inspector(
        *command, "--method", "tools/call", "--tool-name", "use_tool",
        "--tool-arg", f"tool={search}", "--tool-arg", 'arguments={"query": "Grace"}',
    )  # fmt: skip
    assert "COBOL" in found["content"][0]["text"]
    missing = inspector(
        *command, "--method", "tools/call", "--tool-name", "use_tool",
        "--tool-arg", f"tool={search}", "--tool-arg", "arguments={}",
    )  # fmt: skip
    assert missing["isError"] is True
    assert "missing required argument 'query'" in missing["content"][0]["text"]


def test_open_toolbox_with_no_server_connected_is_an_error_result(tmp_path: Path) -> None:
    from workbench_magic import Workbench
    from workbench_magic.serve.server import WorkbenchServer

    wb = Workbench(
        {"toolboxes": {"dead": toolbox({"x": {"command": "/nonexistent/mcp-x"}, "y": {"command": "/nonexistent/y"}})}}
    )
    server = WorkbenchServer(wb)

    async def main() -> None:
        async with Client(server) as c:
            answer = await c.call_tool("open_toolbox", {"toolbox": "dead"})
            assert answer.is_error
            assert text(answer) == (
                "Failed to open toolbox 'dead': no server connected (server 'x': command not found: "
                "/nonexistent/mcp-x; server 'y': command not found: /nonexistent/y)"
            )

    try:
        wb.run_on_loop(main())
    finally:
        wb.close_all()


def test_dynamic_serve_forgets_client_connections_that_ended(tmp_path: Path) -> None:
    from workbench_magic import Workbench
    from workbench_magic.serve.server import SERVE_HISTORY_LIMIT, WorkbenchServer

    wb = Workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}}, history_limit=SERVE_HISTORY_LIMIT)
    server = WorkbenchServer(wb, "dynamic")

    async def main() -> None:
        for _ in range(5):
            async with Client(server, mode="legacy") as c:
                assert c.protocol_version < "2026-07-28"
                await c.call_tool("list_toolboxes", {})
                await c.call_tool("list_toolboxes", {})
                assert server.legacy_connections == 1  # one per connection, not one per request
        assert server.legacy_connections == 0

    try:
        wb.run_on_loop(main())
        assert wb.history_limit == 1_000
    finally:
        server.close()
        wb.close_all()


def test_a_server_served_off_its_workbench_loop_says_where_to_serve_it() -> None:
    from workbench_magic import Workbench
    from workbench_magic.serve.server import SERVED_ELSEWHERE, WorkbenchServer

    wb = Workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    server = WorkbenchServer(wb)

    async def main() -> Any:
        async with Client(server) as c:
            return await c.call_tool("list_toolboxes", {})

    try:
        answer = run(main())  # asyncio.run: another loop than the workbench's
        assert answer.is_error and text(answer) == SERVED_ELSEWHERE
        listed = wb.run_on_loop(main())
        assert not listed.is_error and json.loads(text(listed))["toolboxes"][0]["name"] == "t"
    finally:
        wb.close_all()


def test_use_tool_of_a_task_required_tool_waits_downstream_and_forwards_its_status_as_progress() -> None:
    from workbench_magic import Workbench
    from workbench_magic.serve.server import WorkbenchServer

    wb = Workbench({"toolboxes": {"t": toolbox({"ev": npm_server("everything")})}})
    server = WorkbenchServer(wb)
    heard: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    async def main() -> Any:
        async with Client(server, mode="legacy") as c:
            await c.call_tool("open_toolbox", {"toolbox": "t"})
            tool = {"toolbox": "t", "server": "ev", "name": "simulate-research-query"}
            return await c.call_tool(
                "use_tool", {"tool": tool, "arguments": {"topic": "eels"}}, progress_callback=progress
            )

    try:
        answer = wb.run_on_loop(main())
        assert not answer.is_error and text(answer).startswith("# Research Report: eels")
        # Each stage lasts 1,000 ms and serve polls every 1,000 ms: a loaded machine misses one now
        # and then. What holds is the order: stages heard once each, as they came.
        assert heard and set(heard) <= set(RESEARCH_STAGES), heard
        assert heard == sorted(heard, key=RESEARCH_STAGES.index) and len(set(heard)) == len(heard), heard
    finally:
        server.close()
        wb.close_all()


def test_http_serve_on_a_port_in_use_says_so_in_one_line_and_ends(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [*python_command("-m", "workbench_magic", "serve"), "--transport", "http", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            cwd=tmp_path,
        )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [f"error: port {port} on 127.0.0.1 is in use"]  # nothing started: no logs
