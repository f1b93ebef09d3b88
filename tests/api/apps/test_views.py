"""The MCP Apps host (apps.py): negotiation, discovery, the bridge through `AppView.handle`, serve's filtering.

Against tests/servers/apps_server.py (written with the SDK's `Apps`) over real stdio, in both
protocol generations, and the pinned npm app servers.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVERS, npm_server, python_command, python_server, toolbox, write_config
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from workbench_magic import Workbench
from workbench_magic.api.apps.views import APP_MIME_TYPE, DEFAULT_CSP, AppError, AppView, build_allow, build_csp
from workbench_magic.notebook.widgets.appframe import with_csp
from workbench_magic.vocabulary.errors import CallTimeoutError
from workbench_magic.vocabulary.listings import ToolInfo, ToolUI

APPS_SERVER = SERVERS / "apps_server.py"


def apps_server(*extra: str) -> dict[str, Any]:
    return python_server(APPS_SERVER, *extra)


@pytest.fixture(params=["modern", "legacy"])
def wb(request: pytest.FixtureRequest) -> Iterator[Workbench]:
    extra = ("--legacy",) if request.param == "legacy" else ()
    bench = Workbench({"toolboxes": {"a": {"mcpServers": {"apps": apps_server(*extra)}}}})
    yield bench
    bench.close_all()


def started(view: AppView) -> list[dict[str, Any]]:
    """The handshake as a view does it: ui/initialize, then initialized; what the host sent."""
    answer = view.handle({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {"appCapabilities": {}}})
    assert answer is not None and "result" in answer
    assert view.take() == []  # nothing before initialized
    assert view.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"}) is None
    return view.take()


def test_extension_is_advertised_in_both_generations_unless_switched_off(wb: Workbench) -> None:
    result = wb.call("a/apps/show_counter", {"start": 2})
    assert result.data == {"total": 2, "apps": True}  # the server saw the extension with our MIME type
    assert isinstance(result.app, AppView)
    wb.render_apps = False
    wb.reconnect("a")
    plain = wb.call("a/apps/show_counter", {"start": 2})
    assert plain.data == {"total": 2, "apps": False}
    assert plain.app is None


def test_tool_ui_is_read_from_meta_and_marked_in_listings(wb: Workbench) -> None:
    tools = {t.name: t for t in wb.tools("a")}
    assert tools["show_counter"].ui == ToolUI("ui://counter/app.html", ("model", "app"))
    assert tools["bump"].ui is not None and tools["bump"].ui.visibility == ("app",) and tools["bump"].ui.app_only
    assert tools["secret_total"].ui is not None and tools["secret_total"].ui.visibility == ("model",)
    assert tools["old_style"].ui == ToolUI("ui://counter/app.html")  # the older flat _meta key
    assert tools["plain_tool"].ui is None
    listing = repr(wb.tools("a"))
    assert "a/apps/bump" in listing and "[app only]" in listing
    assert "[app]" in listing.splitlines()[0]
    assert "<i>[app only]</i>" in wb.tools("a")._repr_html_()


def test_tool_ui_from_meta_variants() -> None:
    assert ToolUI.from_meta(None) is None
    assert ToolUI.from_meta({"ui": {"visibility": ["app"]}}) is None  # no page, no UI
    assert ToolUI.from_meta({"ui": {"resourceUri": "ui://x", "visibility": []}}) == ToolUI("ui://x", ())
    info = ToolInfo("t", "s", "n", meta={"ui/resourceUri": "ui://old"})
    assert info.ui == ToolUI("ui://old", ("model", "app"))


def test_handshake_order_and_host_context(wb: Workbench) -> None:
    view = wb.call("a/apps/show_counter", {"start": 3}).app
    assert view is not None
    answer = view.handle({"jsonrpc": "2.0", "id": 7, "method": "ui/initialize", "params": {}})
    assert answer is not None and answer["id"] == 7
    init = answer["result"]
    assert init["hostInfo"]["name"] == "workbench-magic"
    assert set(init["hostCapabilities"]) >= {
        "openLinks",
        "serverTools",
        "serverResources",
        "logging",
        "updateModelContext",
        "message",
    }
    context = init["hostContext"]
    assert context["toolInfo"]["tool"]["name"] == "show_counter"
    assert context["theme"] == "light" and context["displayMode"] == "inline"
    assert {"containerDimensions", "locale", "timeZone"} <= set(context)
    assert view.take() == []
    view.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
    sent = view.take()
    assert [m["method"] for m in sent] == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
    assert sent[0]["params"] == {"arguments": {"start": 3}}
    assert sent[1]["params"]["structuredContent"] == {"total": 3, "apps": True}
    view.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
    assert view.take() == []  # tool-input is sent once


def test_app_calls_tools_of_its_server_by_visibility(wb: Workbench) -> None:
    view = wb.call("a/apps/show_counter", {"start": 10}).app
    assert view is not None
    started(view)
    bumped = view.handle(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "bump", "arguments": {"by": 5}}}
    )
    assert bumped is not None and bumped["result"]["structuredContent"] == {"total": 15}
    refused = view.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "secret_total"}})
    assert refused is not None and refused["error"]["code"] == -32000
    assert "not callable by apps" in refused["error"]["message"]
    missing = view.handle({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "nope"}})
    assert missing is not None and "not found" in missing["error"]["message"]
    # the model-only tool still works for the notebook itself
    assert wb.call("a/apps/secret_total").data == {"total": 15}
    unknown = view.handle({"jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": {}})
    assert unknown is not None and unknown["error"]["code"] == -32601


def test_reads_logs_links_messages_context_modes_and_sizes(wb: Workbench) -> None:
    view = wb.call("a/apps/show_counter").app
    assert view is not None
    started(view)
    read = view.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "ui://probe/app.html"}}
    )
    assert read is not None and read["result"]["contents"][0]["mimeType"] == APP_MIME_TYPE
    assert view.handle({"jsonrpc": "2.0", "id": 2, "method": "ping"}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello log"}}
    assert view.handle(log) is None
    assert "hello log" in wb.logs("a/apps")
    link = view.handle({"jsonrpc": "2.0", "id": 3, "method": "ui/open-link", "params": {"url": "https://example.org"}})
    assert link is not None and link["result"] == {} and view.links == ["https://example.org"]
    bad = view.handle({"jsonrpc": "2.0", "id": 4, "method": "ui/open-link", "params": {"url": "javascript:alert(1)"}})
    assert bad is not None and "error" in bad and view.links == ["https://example.org"]
    said = {"role": "user", "content": {"type": "text", "text": "summarise this"}}
    view.handle({"jsonrpc": "2.0", "id": 5, "method": "ui/message", "params": said})
    assert view.messages == [said]
    context = {"structuredContent": {"selected": 3}}
    view.handle({"jsonrpc": "2.0", "id": 6, "method": "ui/update-model-context", "params": context})
    assert view.model_context == context
    mode = view.handle({"jsonrpc": "2.0", "id": 7, "method": "ui/request-display-mode", "params": {"mode": "pip"}})
    assert mode is not None and mode["result"] == {"mode": "inline"}
    view.handle({"jsonrpc": "2.0", "method": "ui/notifications/size-changed", "params": {"width": 300, "height": 420}})
    assert view.size == (300.0, 420.0)
    methods = [r.arguments["method"] for r in wb.history if r.kind == "app"]
    assert methods[:3] == ["ui/initialize", "ui/notifications/initialized", "-> ui/notifications/tool-input"]
    assert {"resources/read", "ping", "ui/open-link", "ui/message", "ui/notifications/size-changed"} <= set(methods)


def test_timeout_gives_a_cancelled_view(wb: Workbench) -> None:
    with pytest.raises(CallTimeoutError) as caught:
        wb.call("a/apps/slow_counter", {"seconds": 5}, timeout=0.5)
    view = caught.value.app  # type: ignore[attr-defined]
    assert isinstance(view, AppView) and view.result is None
    sent = started(view)
    assert [m["method"] for m in sent] == ["ui/notifications/tool-input", "ui/notifications/tool-cancelled"]
    assert "timed out" in sent[1]["params"]["reason"]


def test_teardown_is_sent_once_and_its_answer_recorded(wb: Workbench) -> None:
    view = wb.call("a/apps/show_counter").app
    assert view is not None
    started(view)
    request = view.teardown("the cell was re-run")
    assert request is not None and request["method"] == "ui/resource-teardown"
    assert view.take() == [request]
    assert view.teardown("again") is None and view.take() == []
    assert view.handle({"jsonrpc": "2.0", "id": request["id"], "result": {}}) is None
    assert view.teardown_answered


def test_html_is_read_on_first_use_and_must_be_an_app_page(wb: Workbench) -> None:
    view = wb.call("a/apps/show_counter").app
    assert view is not None
    before = [r for r in wb.history if r.kind != "tool"]
    assert '<h3 id="title">Counter app</h3>' in view.html
    assert view.csp.startswith(DEFAULT_CSP)
    plain = wb.call("a/apps/plain_page").app
    assert plain is not None
    with pytest.raises(AppError) as caught:
        plain.load()
    message = str(caught.value)
    assert "\n" not in message and "'text/html', not 'text/html;profile=mcp-app'" in message
    assert before == [r for r in wb.history if r.kind != "tool"]


def test_text_front_ends_show_one_line_about_the_app(wb: Workbench) -> None:
    result = wb.call("a/apps/show_counter")
    bundle = result._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle  # no kernel here
    assert "This tool has an app (ui://counter/app.html)" in bundle["text/plain"]
    assert "This tool has an app" in bundle["text/html"]
    assert wb.call("a/apps/plain_tool").app is None


def test_csp_and_permissions() -> None:
    assert build_csp(None).startswith(DEFAULT_CSP) and "frame-src 'none'" in build_csp({})
    csp = build_csp({"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]})
    assert "connect-src https://api.example.com" in csp
    assert "script-src 'self' 'unsafe-inline' https://cdn.example.com" in csp
    assert "frame-src 'none'" in csp and "object-src 'none'" in csp
    sneaky = build_csp({"connectDomains": ["https://a.example; script-src *"]})
    assert "script-src *" not in sneaky and "connect-src 'none'" in sneaky
    assert build_allow({"camera": {}, "clipboardWrite": {}}) == "camera; clipboard-write"
    assert build_allow(None) == ""
    page = with_csp("<!doctype html><script>evil()</script><html><head></head></html>", "default-src 'none'")
    assert page.startswith('<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="default-src')
    assert page.index("Content-Security-Policy") < page.index("<script>")


def _serve_config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "workbench-config.json", {"toolboxes": {"a": toolbox({"apps": apps_server()})}})


@pytest.mark.parametrize("mode", ["proxy", "dynamic"])
def test_serve_leaves_app_only_tools_out(tmp_path: Path, mode: str) -> None:
    config = _serve_config(tmp_path)
    command = [*python_command("-m", "workbench_magic", "serve"), "--config", str(config), "--mode", mode]

    async def main() -> None:
        params = StdioServerParameters(command=command[0], args=command[1:], env=None)
        with open(tmp_path / "serve.stderr", "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as c:
                opened = (await c.call_tool("open_toolbox", {"toolbox": "a"})).structured_content
                names = {t["name"] for t in opened["tools"]}
                assert "show_counter" in names and "secret_total" in names
                assert "bump" not in names
                found = (await c.call_tool("search_tools", {"query": "counter"})).structured_content
                assert "bump" not in {t["name"] for t in found["tools"]}
                assert "show_counter" in {t["name"] for t in found["tools"]}
                used = await c.call_tool("use_tool", {"tool": {"toolbox": "a", "server": "apps", "name": "bump"}})
                assert used.is_error and "for its app only" in used.content[0].text
                if mode == "dynamic":
                    listed = {t.name for t in (await c.list_tools(cache_mode="bypass")).tools}
                    assert "a__apps__show_counter" in listed and "a__apps__bump" not in listed

    asyncio.run(asyncio.wait_for(main(), 90))


@pytest.mark.parametrize("name", ["basic-vanillajs", "cohort-heatmap"])
def test_published_app_servers(name: str) -> None:
    wb = Workbench({"toolboxes": {"ext": {"mcpServers": {"app": npm_server(name, "--stdio")}}}})
    try:
        ui_tools = [t for t in wb.tools("ext") if t.ui is not None]
        assert ui_tools, "the server lists UI tools to a host that advertises the extension"
        tool = next(t for t in ui_tools if not t.ui or not t.ui.app_only)
        result = wb.call(tool.identifier, _sample_arguments(tool))
        assert not result.is_error, result.text
        view = result.app
        assert view is not None
        assert "<script" in view.html and view.html.lower().lstrip().startswith("<!doctype html")
        sent = started(view)
        assert [m["method"] for m in sent] == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
        json.dumps(sent)  # what goes to the frame is plain JSON
    finally:
        wb.close_all()


def _sample_arguments(tool: ToolInfo) -> dict[str, Any]:
    return {
        name: spec["default"] if "default" in spec else _example(spec)
        for name, spec in tool.parameters.items()
        if name in tool.required
    }


def _example(spec: dict[str, Any]) -> Any:
    kind = spec.get("type")
    if "enum" in spec:
        return spec["enum"][0]
    return {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(str(kind), "x")


def test_interrupt_gives_a_cancelled_view(wb: Workbench) -> None:
    wb.open("a")
    main = threading.main_thread().ident or 0
    timer = threading.Timer(0.5, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as caught:
        wb.call("a/apps/slow_counter", {"seconds": 30})
    timer.join()
    view = caught.value.app  # type: ignore[attr-defined]
    assert isinstance(view, AppView) and view.result is None
    sent = started(view)
    assert [m["method"] for m in sent] == ["ui/notifications/tool-input", "ui/notifications/tool-cancelled"]
    assert sent[0]["params"] == {"arguments": {"seconds": 30}}
    assert sent[1]["params"] == {"reason": "The call was interrupted"}


def test_a_cancelled_await_gives_a_cancelled_view(wb: Workbench) -> None:
    wb.open("a")

    async def cancel_it() -> BaseException:
        task = asyncio.ensure_future(wb.acall("a/apps/slow_counter", {"seconds": 30}))
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as exc:
            return exc
        raise AssertionError("the call was not cancelled")

    view = asyncio.run(cancel_it()).app  # type: ignore[attr-defined]
    assert isinstance(view, AppView)
    assert [m["method"] for m in started(view)][-1] == "ui/notifications/tool-cancelled"


def test_another_view_of_the_same_call_starts_afresh(wb: Workbench) -> None:
    view = wb.call("a/apps/show_counter", {"start": 3}).app
    assert view is not None
    first = started(view)
    again = view.again()
    assert view.shown_again == [again]
    assert started(again) == first  # the same tool-input and tool-result, though the first view is initialized
