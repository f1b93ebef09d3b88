"""serve's early answers (serve/early.py): a second `workbench-magic serve` of the same config
answers the handshake and the listings it learned before the SDK is imported, with the very
answers the SDK gave, and the requests after them are served as before (both eras; dynamic mode
and a failed open are not answered early). Our test server, lazy, behind serve over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, npm_server, python_command, stdio_server, toolbox, write_config

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

EARLY = "request(s) before the SDK was up"


async def session(config: Path, log: Path, *, mode: str = "auto", serve_mode: str = "proxy") -> dict[str, Any]:
    """One client over stdio: connect, list, open `t`, call echo through use_tool, list again."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command, *args = python_command("-m", "workbench_magic", "serve", "--config", str(config), "--mode", serve_mode)
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=str(ROOT))
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:  # type: ignore[arg-type]
            listed = [t.name for t in (await client.list_tools()).tools]
            opened = await client.call_tool("open_toolbox", {"toolbox": "t"})
            tool = {"toolbox": "t", "server": "s", "name": "echo"}
            used = await client.call_tool("use_tool", {"tool": tool, "arguments": {"text": "early"}})
            again = [t.name for t in (await client.list_tools()).tools]
            return {
                "protocol": client.protocol_version,
                "listed": listed,
                "opened": opened.content[0].text,
                "used": used.structured_content,
                "again": again,
            }


def early_count(log: Path) -> int:
    lines = [line for line in log.read_text().splitlines() if EARLY in line]
    return int(lines[0].split("answered ")[1].split(" ")[0]) if lines else 0


@pytest.mark.parametrize(("mode", "protocol"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_a_second_serve_answers_what_it_learned_at_once(tmp_path: Path, mode: str, protocol: str) -> None:
    config = write_config(tmp_path / "wb.json", {"toolboxes": {"t": toolbox({"s": stdio_server(start="lazy")})}})
    first = asyncio.run(session(config, tmp_path / "first.log", mode=mode))
    second = asyncio.run(session(config, tmp_path / "second.log", mode=mode))
    assert first["protocol"] == protocol and first["used"] == {"result": "early"}
    assert second == first  # the same answers, and the call right after the early open works
    assert early_count(tmp_path / "first.log") == 0
    assert early_count(tmp_path / "second.log") >= 1  # at least the handshake
    (saved,) = (Path(os.environ["WORKBENCH_CACHE_DIR"]) / "serve").glob("*.json")
    methods = [json.loads(key)[0] for key in json.loads(saved.read_text())["answers"]]
    assert {"tools/list", "tools/call"} <= set(methods)
    assert ("initialize" if mode == "legacy" else "server/discover") in methods


def test_dynamic_mode_and_a_failed_open_are_not_answered_early(tmp_path: Path) -> None:
    broken = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
    config = write_config(
        tmp_path / "wb.json", {"toolboxes": {"t": toolbox({"s": stdio_server(start="lazy"), "broken": broken})}}
    )
    first = asyncio.run(session(config, tmp_path / "first.log", serve_mode="dynamic"))
    second = asyncio.run(session(config, tmp_path / "second.log", serve_mode="dynamic"))
    assert "servers_failed" in first["opened"] and first["used"] == {"result": "early"}
    assert len(first["again"]) > len(first["listed"])  # the open added the toolbox's tools
    assert second["listed"] == first["listed"]  # not the longer list learned after the open
    (saved,) = (Path(os.environ["WORKBENCH_CACHE_DIR"]) / "serve").glob("*.json")
    methods = [json.loads(key)[0] for key in json.loads(saved.read_text())["answers"]]
    assert "tools/list" not in methods and "tools/call" not in methods


def test_the_open_of_a_toolbox_that_starts_servers_is_not_answered_early(tmp_path: Path) -> None:
    config = write_config(tmp_path / "wb.json", {"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    asyncio.run(session(config, tmp_path / "first.log"))
    second = asyncio.run(session(config, tmp_path / "second.log"))
    assert second["used"] == {"result": "early"} and early_count(tmp_path / "second.log") >= 1  # the handshake
    (saved,) = (Path(os.environ["WORKBENCH_CACHE_DIR"]) / "serve").glob("*.json")
    methods = [json.loads(key)[0] for key in json.loads(saved.read_text())["answers"]]
    assert "tools/list" in methods and "tools/call" not in methods  # its open starts the server: answered late


async def opens(config: Path, log: Path, *, mode: str, sampling: bool) -> tuple[list[str], list[str]]:
    """One host that opens `lz` and searches every tool: the tools of the open's answer, and the
    ones the workbench behind serve holds. `sampling`: whether the host offers sampling."""
    import mcp_types as types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def sample(context: Any, params: Any) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="hi"), model="m")

    callbacks: dict[str, Any] = {"sampling_callback": sample} if sampling else {}
    command, *args = python_command("-m", "workbench_magic", "serve", "--config", str(config))
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=str(ROOT))
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, **callbacks) as client:  # type: ignore[arg-type]
            opened = await client.call_tool("open_toolbox", {"toolbox": "lz"})
            searched = await client.call_tool("search_tools", {"query": ""})
    assert opened.structured_content is not None and searched.structured_content is not None
    return (
        [tool["name"] for tool in opened.structured_content["tools"]],
        [tool["name"] for tool in searched.structured_content["tools"]],
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_open_answered_early_holds_what_the_host_offers(tmp_path: Path, mode: str) -> None:
    # server-everything lists its sampling tools only to a client that offers sampling
    lazy = {**toolbox({"ev": npm_server("everything")}), "start": "lazy"}
    config = write_config(tmp_path / "wb.json", {"toolboxes": {"lz": lazy}})
    for run in ("first", "second"):
        sampled, held = asyncio.run(opens(config, tmp_path / f"{run}.log", mode=mode, sampling=True))
        assert "trigger-sampling-request" in sampled and sampled == held
    plain, held = asyncio.run(opens(config, tmp_path / "plain.log", mode=mode, sampling=False))
    assert "trigger-sampling-request" not in plain
    assert plain == held  # every tool the open lists is one the workbench can call
    again, held = asyncio.run(opens(config, tmp_path / "again.log", mode=mode, sampling=False))
    assert again == plain == held
    (saved,) = (Path(os.environ["WORKBENCH_CACHE_DIR"]) / "serve").glob("*.json")
    opens_learned = [json.loads(key) for key in json.loads(saved.read_text())["answers"] if "open_toolbox" in key]
    assert sorted(offer["sampling"] is not None for *_, offer in opens_learned) == [False, True]  # one per offer
