"""`wb.context_cost`: what a model reads before it can call one tool, flat and through serve's two modes.

Against server-everything and our test servers (the test server twice, and the MCP Apps server,
whose app-only tool no model is offered): the flat row is what the servers list on the wire
(`tools/list`, traced through the workbench), named and described as `wb.toolset` hands them to a
model; the proxy and dynamic rows are what `workbench-magic serve` answers a real MCP client over
stdio in each mode. Tokens: the estimate (no key, no network); the choice of the counting method
is tested on the environment alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import npm_server, python_command, python_server, stdio_server, toolbox, write_config
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

import workbench_magic.api.models.context_cost as context_cost
from workbench_magic import ContextCost, UsageError, Workbench
from workbench_magic.api.models.context_cost import TokenCounter, choose_counter
from workbench_magic.vocabulary.context_cost import ESTIMATE, ContextCostRow, ContextPart
from workbench_magic.vocabulary.served import META_TOOLS

TOOLBOXES = ("everything", "mine")
KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "workbench-config.json",
        {
            "toolboxes": {
                "everything": toolbox({"everything": npm_server("everything")}, "the reference server"),
                "mine": toolbox(
                    {
                        "s": stdio_server(),
                        "t": stdio_server("--name", "second"),
                        "apps": python_server("apps_server.py"),
                    },
                    "our test servers",
                ),
            }
        },
    )


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench], config: Path) -> Workbench:
    return make_workbench(str(config))


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def utf8(text: str) -> int:
    return len(text.encode())


def for_a_model(tool: dict[str, Any]) -> bool:
    """A listed tool a model may see: not one only its MCP App may call (`_meta.ui.visibility`)."""
    ui = (tool.get("_meta") or {}).get("ui") or {}
    return "model" in ui.get("visibility", ["model"])


def toolset_name(toolbox: str, server: str, name: str) -> str:
    """The name `wb.toolset` gives a tool: `toolbox__server__tool`, or (past 64 characters, or with one
    outside `[A-Za-z0-9_-]`) those replaced by `_`, cut to 55, `_` and 8 hex digits of the path's SHA-256."""
    full = f"{toolbox}__{server}__{name}"
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", full)
    if clean == full and len(clean) <= 64:
        return clean
    return f"{clean[:55]}_{hashlib.sha256(f'{toolbox}/{server}/{name}'.encode()).hexdigest()[:8]}"


def described(tool: dict[str, Any]) -> str:
    """What a model reads as a listed tool's description: its description dedented, else its title."""
    return inspect.cleandoc(tool["description"]) if tool.get("description") else tool.get("title") or ""


def listed_on_the_wire(trace: Any, toolbox: str) -> dict[str, list[dict[str, Any]]]:
    """Each server's last whole `tools/list` answer in the trace (its pages joined), by server name."""
    asked: set[tuple[str, Any]] = set()
    listing: dict[str, list[dict[str, Any]]] = {}
    whole: dict[str, list[dict[str, Any]]] = {}
    for item in trace.messages:
        message = item.message
        if item.direction == "sent" and message.get("method") == "tools/list":
            asked.add((item.server, message["id"]))
            if not (message.get("params") or {}).get("cursor"):  # a listing begins
                listing[item.server] = []
        elif item.direction == "received" and (item.server, message.get("id")) in asked:
            listing[item.server] += message["result"]["tools"]
            if not message["result"].get("nextCursor"):
                whole[item.server] = listing[item.server]
    return {server.removeprefix(f"{toolbox}/"): tools for server, tools in whole.items()}


def test_flat_is_what_the_servers_list_as_wb_toolset_names_it(wb: Workbench) -> None:
    for name in TOOLBOXES:
        with wb.trace(name) as trace:
            cost = wb.context_cost(name, tokens="estimate")
        servers = listed_on_the_wire(trace, name)
        order = list(wb.settings.toolboxes[name].mcp_servers)
        assert sorted(servers) == sorted(order)
        expected = compact(
            [
                {
                    "name": toolset_name(name, server, tool["name"]),
                    "description": f"[{name}/{server}] {described(tool)}".rstrip(),
                    "inputSchema": tool["inputSchema"],
                }
                for server in order
                for tool in servers[server]
                if for_a_model(tool)
            ]
        )
        (part,) = cost["flat"].parts
        assert part.text == expected
        assert cost["flat"].bytes == utf8(expected)
        if name == "mine":  # the app-only tool is not offered
            assert "mine__apps__bump" not in part.text and "mine__apps__show_counter" in part.text


def test_flat_is_what_the_pydantic_ai_toolset_hands_a_model(wb: Workbench) -> None:
    cost = wb.context_cost("mine", tokens="estimate")
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    definitions = asyncio.run(wb.toolset("mine").get_tools(ctx))
    handed = [
        {
            "name": t.tool_def.name,
            "description": t.tool_def.description,
            "inputSchema": t.tool_def.parameters_json_schema,
        }
        for t in definitions.values()
    ]
    assert json.loads(cost["flat"].parts[0].text) == handed


def serve_reads(config: Path, mode: str, toolbox: str) -> tuple[str, str, str]:
    """What `workbench-magic serve --mode MODE` hands a real MCP client over stdio: its tool listing
    before the open, the `open_toolbox` answer's text, and the tools it lists after the open that
    it did not list before (the JSON a model reads of each listing)."""

    def listing(tools: list[Any]) -> str:
        return compact([{"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools])

    async def main() -> tuple[str, str, str]:
        command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--mode", mode]
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        with open(config.parent / "serve.stderr", "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                before = (await client.list_tools()).tools
                opened = await client.call_tool("open_toolbox", {"toolbox": toolbox})
                assert not opened.is_error
                (block,) = opened.content
                after = (await client.list_tools(cache_mode="bypass")).tools
        known = {t.name for t in before}
        return listing(before), block.text, listing([t for t in after if t.name not in known])

    return asyncio.run(main())


@pytest.mark.parametrize("name", TOOLBOXES)
def test_proxy_and_dynamic_are_what_serve_hands_a_client(wb: Workbench, config: Path, name: str) -> None:
    cost = wb.context_cost(name, tokens="estimate")
    meta, answer, added = serve_reads(config, "proxy", name)
    assert [p.text for p in cost["proxy"].parts] == [meta, answer]
    assert added == "[]"  # proxy mode registers nothing
    assert cost["proxy"].bytes == utf8(meta) + utf8(answer)
    assert [t["name"] for t in json.loads(meta)] == list(META_TOOLS)

    meta, answer, added = serve_reads(config, "dynamic", name)
    assert [p.text for p in cost["dynamic"].parts] == [meta, answer, added]
    assert cost["dynamic"].bytes == utf8(meta) + utf8(answer) + utf8(added)
    registered = json.loads(added)
    assert len(registered) == len(json.loads(cost["flat"].parts[0].text)) > 0
    assert all(t["name"].startswith(f"{name}__") for t in registered)


def test_server_everything_in_the_three_modes(wb: Workbench) -> None:
    cost = wb.context_cost("everything", tokens="estimate")
    flat, proxy, dynamic = (cost[m] for m in ("flat", "proxy", "dynamic"))
    print(f"\n{cost!r}")
    assert [r.mode for r in cost.rows] == ["flat", "proxy", "dynamic"]
    # Reaching a tool of this one toolbox, proxy mode reads more than the flat listing: its open_toolbox
    # answer lists each tool with its toolbox, server, title, output schema and annotations, indented...
    assert flat.bytes < proxy.bytes < dynamic.bytes
    assert cost.ratio("proxy") > 1 > cost.saving
    # ...and what it saves is what a model reads before it opens the toolbox: the meta-tools alone.
    assert cost.meta_tools.label == "5 meta-tools" and cost.meta_tools.bytes < flat.bytes / 2
    shown = repr(cost)
    assert f"{flat.bytes:,}" in shown and f"proxy/flat = {cost.ratio('proxy'):.2f}" in shown
    assert f"a model reads the 5 meta-tools alone: {cost.meta_tools.bytes:,} bytes" in shown


def test_the_estimate_is_named_and_is_bytes_over_four(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(context_cost, "importable", lambda module: False)
    cost = wb.context_cost("mine")  # chosen: no key, no tokenizer installed
    assert cost.tokens_by == ESTIMATE == "estimate: bytes / 4" and cost.estimated
    for row in cost.rows:
        assert row.tokens == sum(-(-p.bytes // 4) for p in row.parts)
    assert "tokens: estimate: bytes / 4" in repr(cost)
    assert "tokens (estimate: bytes / 4)" in cost._repr_html_()
    frame = cost.to_pandas()
    assert list(frame.index) == ["flat", "proxy", "dynamic"]
    assert list(frame["bytes"]) == [r.bytes for r in cost.rows] and list(frame["tokens"]) == [
        r.tokens for r in cost.rows
    ]
    assert frame.attrs["tokens_by"] == ESTIMATE


def test_a_function_counts_and_names_the_count(wb: Workbench) -> None:
    def characters(text: str) -> int:
        return len(text)

    cost = wb.context_cost("mine", tokens=characters)
    assert cost.tokens_by == "counted by characters" and not cost.estimated
    assert cost["proxy"].tokens == sum(len(p.text) for p in cost["proxy"].parts)
    with pytest.raises(UsageError, match="tokens must be None"):
        wb.context_cost("mine", tokens="words")


def test_a_chosen_count_that_fails_gives_way_to_the_estimate(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(text: str) -> int:
        raise ConnectionError("network unreachable")

    monkeypatch.setattr(
        context_cost, "choose_counter", lambda **_: TokenCounter("anthropic messages.count_tokens (m)", unreachable)
    )
    cost = wb.context_cost("mine")
    assert cost.estimated
    assert cost.tokens_by == "estimate: bytes / 4 (anthropic messages.count_tokens (m) failed: network unreachable)"
    assert cost["flat"].tokens == -(-cost["flat"].bytes // 4)


@pytest.mark.parametrize(
    ("environ", "installed", "model", "expected"),
    [
        (
            {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"},
            {"anthropic", "openai", "tiktoken"},
            None,
            "anthropic messages.count_tokens (claude-sonnet-4-5)",
        ),
        (
            {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"},
            {"anthropic", "openai"},
            "openai:gpt-4o",
            "openai responses.input_tokens.count (gpt-4o)",
        ),
        (
            {"OPENAI_API_KEY": "k"},
            {"anthropic", "openai"},
            "anthropic:claude-opus-4-1",
            "openai responses.input_tokens.count (gpt-5)",
        ),
        ({"ANTHROPIC_API_KEY": "k"}, {"openai", "tiktoken"}, None, "tiktoken o200k_base (OpenAI's tokenizer)"),
        ({"ANTHROPIC_API_KEY": ""}, {"anthropic"}, None, ESTIMATE),
        ({}, set(), "anthropic:claude-opus-4-1", ESTIMATE),
    ],
)
def test_the_count_is_chosen_by_the_environment(
    environ: dict[str, str], installed: set[str], model: str | None, expected: str
) -> None:
    counter = choose_counter(environ, model=model, installed=installed.__contains__)  # nothing is called
    assert counter.label == expected
    assert counter.estimated is (expected == ESTIMATE)


def table(flat: int, meta: int, answer: int, toolbox: str = "box") -> ContextCost:
    listed, metas, answered = (
        ContextPart("1 tools", "x" * flat),
        ContextPart("<meta>", "y" * meta),
        ContextPart("a", "z" * answer),
    )
    rows = (
        ContextCostRow("flat", (listed,), 1),
        ContextCostRow("proxy", (metas, answered), 2),
        ContextCostRow("dynamic", (metas, answered, listed), 3),
    )
    return ContextCost(toolbox, rows)


def test_the_table_renders_escaped_and_says_what_proxy_mode_saves() -> None:
    cost = table(1000, 50, 150, toolbox="<box>")
    html = cost._repr_html_()
    assert "&lt;box&gt;" in html and "&lt;meta&gt;" in html and "<box>" not in html
    assert cost.ratio("proxy") == 0.2 and cost.saving == 0.8 and cost["dynamic"].bytes == 1200
    assert cost["proxy"].what == "<meta> + a"
    shown = repr(cost)
    assert "proxy/flat = 0.20: serve's proxy mode (the original MCP Workbench) saves 80% of the flat listing" in shown
    assert "a model reads the <meta> alone: 50 bytes (5% of flat)" in shown
    assert "saves 80% of the flat listing" in html and "&lt;meta&gt; alone" in html

    costly = table(100, 50, 100)
    assert costly.ratio("proxy") == 1.5 and costly.saving == -0.5
    assert "proxy/flat = 1.50" in repr(costly) and "reads 50% more than the flat listing" in repr(costly)
    with pytest.raises(UsageError, match="No context cost row 'nope'"):
        _ = costly["nope"]


def test_a_server_or_tool_target_says_it_takes_a_toolbox(wb: Workbench) -> None:
    for target in ("mine/s", "mine__s", "mine/s/echo"):
        with pytest.raises(UsageError) as caught:
            wb.context_cost(target)
        assert str(caught.value) == f"wb.context_cost takes a toolbox, not {target!r}: try wb.context_cost('mine')"
        assert caught.value.__context__ is None
    with pytest.raises(UsageError, match=r"^wb\.context_cost takes a toolbox \(its name\), not 42$"):
        wb.context_cost(42)  # type: ignore[arg-type]
    assert not wb.is_open("mine")  # nothing opened for a wrong target
