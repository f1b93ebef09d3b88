"""`workbench-magic serve --mode flat` as a host nobody here wrote sees it: the official TypeScript
SDK v2 client (`@modelcontextprotocol/client`, pinned in tests/servers/package.json, driven by
tests/servers/ts_host.mjs) lists the tools, prompts and resources of a downstream server, gets its
prompt, reads its resource and calls its tool through serve, over stdio and over streamable HTTP,
in the handshake era (2025-11-25, the SDK's `legacy` mode) and pinned to 2026-07-28.

Our own tests drive serve with the Python SDK, which serve is built on: a second, independent
client implementation is what finds where serve answers only what its own SDK expects."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    NODE_MODULES,
    SERVERS,
    free_port,
    python_command,
    running,
    stdio_server,
    stop_process,
    toolbox,
    wait_listening,
    wait_until,
    write_config,
)

pytestmark = pytest.mark.timeout(300)

NODE = shutil.which("node")
CLIENT = NODE_MODULES / "client"
HOST = SERVERS / "ts_host.mjs"
if NODE is None:
    pytest.skip("node is not installed", allow_module_level=True)
if not (CLIENT / "package.json").exists():
    pytest.skip("@modelcontextprotocol/client is not installed (cd tests/servers && npm ci)", allow_module_level=True)

PROTOCOL = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
"""The protocol version each era of the host negotiates with serve."""
LIMIT = 180.0
"""Seconds the host may take (a loaded 2-core machine starts serve, its downstream and node)."""
NAME = "Ada Lovelace"
TEXT = "through a TypeScript host"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "workbench-config.json", {"toolboxes": {"dev": toolbox({"s": stdio_server()})}})


def serve_command(config: Path, *extra: str) -> list[str]:
    return [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--mode", "flat", *extra]


def host(era: str, *connection: str) -> subprocess.CompletedProcess[str]:
    """Run ts_host.mjs in `era` over `connection` (`--http URL --token T`, or `--stdio -- COMMAND...`)."""
    assert NODE is not None
    requests = [
        *("--prompt", "greet", "--prompt-args", json.dumps({"name": NAME})),
        *("--read", "test://hello"),
        *("--call", "echo", "--call-args", json.dumps({"text": TEXT})),
    ]
    command = [NODE, str(HOST), "--era", era, "--trace", *requests, *connection]
    return subprocess.run(command, capture_output=True, text=True, timeout=LIMIT, env=dict(os.environ))


def served_over_stdio(config: Path, era: str) -> subprocess.CompletedProcess[str]:
    """The host starts serve itself (its child over stdio) and ends it as it closes."""
    out = host(era, "--stdio", "--", *serve_command(config))
    # what the host started has ended with it (serve, and through it the downstream server)
    assert wait_until(lambda: not running(str(config)), 30), f"serve outlived the host: {running(str(config))}"
    return out


def served_over_http(config: Path, era: str) -> subprocess.CompletedProcess[str]:
    """serve over streamable HTTP with a token, started here and ended with SIGTERM."""
    port, token = free_port(), secrets.token_hex(8)
    url = f"http://127.0.0.1:{port}/mcp"
    with open(config.parent / "serve.stderr", "ab") as errlog:
        proc = subprocess.Popen(
            serve_command(config, "--transport", "http", "--port", str(port), "--token", token),
            stdout=errlog,
            stderr=errlog,
        )
        try:
            wait_listening(proc, url, config.parent / "serve.stderr")
            return host(era, "--http", url, "--token", token)
        finally:
            stop_process(proc)


def told(out: subprocess.CompletedProcess[str], serve_log: Path) -> str:
    """What a failed assertion shows: the host's stderr (its JSON-RPC trace; over stdio, serve's
    stderr too) and, over HTTP, serve's log."""
    logged = serve_log.read_text()[-3000:] if serve_log.exists() else ""
    return f"host stderr:\n{out.stderr[-8000:]}\nserve stderr:\n{logged}"


def text_of(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for b in blocks if b.get("type") == "text"]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_typescript_sdk_host_gets_prompts_reads_resources_and_calls_tools_through_flat_serve(
    config: Path, transport: str, era: str
) -> None:
    out = served_over_stdio(config, era) if transport == "stdio" else served_over_http(config, era)
    said = told(out, config.parent / "serve.stderr")
    assert out.returncode == 0, said
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["protocolVersion"] == PROTOCOL[era], said
    assert "echo" in got["tools"], said
    assert "greet" in got["prompts"], said
    assert any(NAME in text for text in text_of([m["content"] for m in got["prompt"]])), said
    assert "test://hello" in got["resources"], said
    assert [(c["uri"], c.get("text")) for c in got["read"]] == [("test://hello", "hello")], said
    assert text_of(got["call"]) == [TEXT], said
