"""`serve --transport http --token`: 401 without the bearer token, refusal to bind beyond loopback without one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from conftest import free_port, python_command, stdio_server, toolbox, write_config
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from workbench_magic import ConnectError, Workbench
from workbench_magic.serve.http import TOKEN_ENV
from workbench_magic.vocabulary.errors import leaf_exception

TOKEN = "s3cret-serve-token"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "workbench-config.json", {"toolboxes": {"prod": toolbox({"s": stdio_server("--name", "in-prod")})}}
    )


def serve(config: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--transport", "http"]
    return subprocess.Popen(
        [*command, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )


Served = subprocess.Popen[str]


@contextlib.contextmanager
def running(config: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[tuple[int, Served]]:
    """`serve` over HTTP on a free port, once it listens; stopped by SIGTERM at the end (exit 0)."""
    port = free_port()
    proc = serve(config, "--port", str(port), *extra, env=env)
    try:
        wait_listening(port, proc)
        yield port, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


@pytest.fixture
def served(config: Path) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    with running(config, "--token", TOKEN) as started:
        yield started


def wait_listening(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60  # a loaded machine starts serve slowly
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
            return
        except httpx.TransportError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("serve did not start listening") from None
            time.sleep(0.1)


def post(port: int, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json=INIT, headers={**MCP_HEADERS, **headers}, timeout=10)


async def use_tool(port: int, token: str) -> str:
    try:
        return await _use_tool(port, token)
    except BaseExceptionGroup as group:
        raise leaf_exception(group) from None


async def _use_tool(port: int, token: str) -> str:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as c:
            await c.call_tool("open_toolbox", {"toolbox": "prod"})
            result = await c.call_tool("use_tool", {"tool": {"toolbox": "prod", "server": "s", "name": "whoami"}})
            return str(result.content[0].text)  # type: ignore[union-attr]


def test_requests_without_the_right_token_get_401(served: tuple[int, subprocess.Popen[str]]) -> None:
    port, _ = served
    missing = post(port, {})
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert post(port, {"Authorization": "Bearer wrong-token"}).status_code == 401
    assert post(port, {"Authorization": TOKEN}).status_code == 401  # the scheme is required
    assert post(port, {"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_client_with_the_token_uses_tools(served: tuple[int, subprocess.Popen[str]]) -> None:
    port, _ = served
    assert asyncio.run(use_tool(port, TOKEN)) == "in-prod"
    with pytest.raises(MCPError, match="error response"):
        asyncio.run(use_tool(port, "not-the-token"))


def test_dns_rebinding_checks_stay_on_behind_the_token(served: tuple[int, subprocess.Popen[str]]) -> None:
    port, _ = served
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert post(port, {**auth, "Host": "evil.example:80"}).status_code in (400, 421)
    assert post(port, {**auth, "Origin": "http://evil.example"}).status_code == 403


def test_the_token_comes_from_the_environment(config: Path) -> None:
    with running(config, env={TOKEN_ENV: TOKEN}) as (port, _):
        assert post(port, {}).status_code == 401
        assert asyncio.run(use_tool(port, TOKEN)) == "in-prod"


def test_non_loopback_bind_without_a_token_refuses_in_one_line(config: Path) -> None:
    proc = serve(config, "--host", "0.0.0.0", "--port", str(free_port()), env={TOKEN_ENV: ""})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Refusing to serve on 0.0.0.0 without a token" in lines[0] and "--token" in lines[0]
    assert TOKEN_ENV in lines[0]


def test_non_loopback_bind_with_a_token_starts_and_warns(config: Path) -> None:
    with running(config, "--host", "0.0.0.0", "--token", TOKEN) as (port, proc):
        assert post(port, {}).status_code == 401
        assert asyncio.run(use_tool(port, TOKEN)) == "in-prod"
        assert proc.stderr is not None
        first_lines = [proc.stderr.readline() for _ in range(2)]
    assert any("reachable from other machines" in line for line in first_lines), first_lines


def test_a_workbench_with_the_wrong_token_is_told_the_401(
    served: tuple[int, subprocess.Popen[str]], make_workbench: Callable[..., Workbench]
) -> None:
    """Issue 53: a wrong token read `Server returned an error response` (the SDK's words for any
    HTTP error status but 404): the reason names the status and what to check."""
    port, _ = served
    url = f"http://127.0.0.1:{port}/mcp"
    wrong, right = (
        {"s": {"url": url, "headers": {"Authorization": f"Bearer {token}"}}} for token in ("not-the-token", TOKEN)
    )
    wb = make_workbench({"toolboxes": {"t": toolbox(wrong), "ok": toolbox(right)}})
    reason = "HTTP 401 Unauthorized (check the server's token/headers)"
    with pytest.raises(ConnectError) as info:
        wb.open("t")
    assert str(info.value) == f"Failed to open toolbox 't': no server connected (server 's': {reason})"
    assert wb.status()["t"]["s"].error == f"Failed to connect to server 's' in toolbox 't': {reason}"
    assert "not-the-token" not in str(info.value)
    wb.call("ok/s/open_toolbox", {"toolbox": "prod"})  # the right token
    assert wb.call("ok/s/use_tool", {"tool": {"toolbox": "prod", "server": "s", "name": "whoami"}}).text == "in-prod"
