"""Workbench against real servers: our test server (stdio, streamable HTTP, SSE), the demo."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest
from conftest import children, stdio_server, toolbox, write_config

from workbench_magic import (
    ArgumentError,
    ConnectError,
    InvalidIdentifierError,
    NotFoundError,
    PromptsChanged,
    ResourcesChanged,
    ServerNotFoundError,
    StatusChanged,
    ToolboxClosed,
    ToolboxNotFoundError,
    ToolError,
    ToolIdentifier,
    ToolNotFoundError,
    ToolsChanged,
    Workbench,
)
from workbench_magic.api.workbench import OpenedToolbox
from workbench_magic.vocabulary.events import Event


@pytest.fixture
def wb(make_workbench):
    return make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()}, "test toolbox")}})


def test_open_lists_servers_tools_and_protocol(wb: Workbench) -> None:
    box = wb.open("t")
    assert isinstance(box, OpenedToolbox)
    status = box.servers["s"]
    assert status.status == "connected"
    assert status.protocol == "2026-07-28"
    assert box.failed == {}
    names = {t.name for t in box.tools}
    assert {"echo", "add", "slow", "fail", "add_tool", "nested"} <= names
    assert all(t.toolbox == "t" and t.server == "s" for t in box.tools)
    echo = wb.tool("t/s/echo")
    assert echo.identifier == ToolIdentifier(toolbox="t", server="s", name="echo")
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert wb.toolboxes()[0].open is True


def test_call_every_identifier_spelling(wb: Workbench) -> None:
    wb.open("t")
    spellings = [
        "t/s/echo",
        "t__s__echo",
        {"toolbox": "t", "server": "s", "name": "echo"},
        ToolIdentifier(toolbox="t", server="s", name="echo"),
    ]
    for spelling in spellings:
        result = wb.call(spelling, {"text": "hi"})
        assert result.text == "hi"
        assert result.identifier == ToolIdentifier(toolbox="t", server="s", name="echo")


def test_tool_names_with_slashes_dots_and_double_underscores(wb: Workbench) -> None:
    wb.open("t")
    assert wb.call("t/s/ns/sub.tool", {"text": "a"}).text == "a"
    assert wb.call("t__s__double__under", {"text": "b"}).text == "b"


def test_lookup_errors_have_the_design_texts(wb: Workbench) -> None:
    wb.open("t")
    with pytest.raises(ToolboxNotFoundError, match=r"^Toolbox 'nope' not found\. Available toolboxes: t$"):
        wb.call("nope/s/echo")
    with pytest.raises(ServerNotFoundError, match=r"^Server 'x' not found in toolbox 't'$"):
        wb.call("t/x/echo")
    with pytest.raises(ToolNotFoundError, match=r"^Tool 'zz' not found in server 's' \(toolbox 't'\)$"):
        wb.call("t/s/zz")
    with pytest.raises(InvalidIdentifierError, match=r"^Invalid tool identifier: toolbox cannot be empty$"):
        wb.call("/s/echo")
    with pytest.raises(InvalidIdentifierError, match="use 'name'"):
        wb.call({"toolbox": "t", "server": "s", "tool": "echo"})


def test_structured_results_and_pandas(wb: Workbench) -> None:
    wb.open("t")
    result = wb.call("t/s/add", {"a": 2, "b": 3.5})
    assert result.data == {"sum": 5.5}
    assert result.structured_content == {"sum": 5.5}
    table = wb.call("t/s/table", {"n": 4})
    frame = table.to_pandas()
    assert len(frame) == 4
    assert list(frame.columns)[:1] == ["id"] or "id" in frame.columns
    bundle = table._repr_mimebundle_()
    assert {"text/plain", "text/html"} <= set(bundle) and "application/json" not in set(bundle)
    assert "<table>" in bundle["text/html"]
    image = wb.call("t/s/image")
    assert image.images and image.images[0].data.startswith(b"\x89PNG")
    assert "image/png" in image._repr_mimebundle_()


def test_tool_error_result_and_raise_for_error(wb: Workbench) -> None:
    wb.open("t")
    result = wb.call("t/s/fail", {"message": "it broke"})
    assert result.is_error
    assert "it broke" in result.text
    with pytest.raises(ToolError, match=r"^Error executing tool 'fail' in server 's' \(toolbox 't'\): .*it broke"):
        result.raise_for_error()
    ok = wb.call("t/s/echo", {"text": "x"})
    assert ok.raise_for_error() is ok
    assert [r.ok for r in wb.history] == [False, True]
    assert wb.history[0].identifier.name == "fail"
    assert wb.history[0].arguments == {"message": "it broke"}


def test_arguments_are_validated_before_sending(wb: Workbench) -> None:
    wb.open("t")
    with pytest.raises(ArgumentError, match="missing required argument 'text'"):
        wb.call("t/s/echo", {})
    with pytest.raises(ArgumentError, match=r"argument 'a': 'x' is not of type 'number'"):
        wb.call("t/s/add", {"a": "x", "b": 1})
    # nested models: the schema uses $defs/$ref; the error names the nested field
    with pytest.raises(ArgumentError, match=r"missing required argument 'config\.name'") as info:
        wb.call("t/s/nested", {"config": {"inner": {"label": "x"}}})
    with pytest.raises(ArgumentError, match=r"argument 'config\.color': 'purple' is not one of"):
        wb.call("t/s/nested", {"config": {"name": "n", "inner": {"label": "x"}, "color": "purple"}})
    with pytest.raises(ArgumentError, match=r"argument 'config\.inner\.weight': 'heavy' is not of type"):
        wb.call("t/s/nested", {"config": {"name": "n", "inner": {"label": "x", "weight": "heavy"}}})
    ok = wb.call("t/s/nested", {"config": {"name": "n", "inner": {"label": "x"}, "color": "blue"}})
    assert ok.data["color"] == "blue" and ok.data["inner"]["weight"] == 1.0
    assert "Invalid arguments for tool 'nested' in server 's' (toolbox 't')" in str(info.value)
    assert [r.identifier.name for r in wb.history] == ["nested"], "invalid calls are never sent"


def test_progress_notifications_reach_the_callback(wb: Workbench) -> None:
    wb.open("t")
    seen: list[tuple[float, float | None, str | None]] = []
    result = wb.call("t/s/slow", {"steps": 3, "delay": 0.01}, progress=lambda p, t, m: seen.append((p, t, m)))
    assert not result.is_error
    assert [p for p, _, _ in seen] == [1, 2, 3]
    assert all(total == 3 for _, total, _ in seen)


def test_timeout_cancels_the_call_and_keeps_the_connection(wb: Workbench) -> None:
    wb.open("t")
    with pytest.raises(ToolError, match=r"timed out after 0\.5 s"):
        wb.call("t/s/sleep", {"seconds": 30}, timeout=0.5)
    assert wb.call("t/s/echo", {"text": "still here"}).text == "still here"
    assert "cancelled" in wb.logs("t/s")


def test_acall_from_another_event_loop(wb: Workbench) -> None:
    wb.open("t")

    async def main() -> list[str]:
        results = await asyncio.gather(*(wb.acall("t/s/echo", {"text": str(i)}) for i in range(5)))
        return [r.text for r in results]

    assert asyncio.run(main()) == ["0", "1", "2", "3", "4"]


def test_one_loop_thread_for_all_workbenches(make_workbench) -> None:
    a = make_workbench({"toolboxes": {"a": toolbox({"s": stdio_server()})}})
    b = make_workbench({"toolboxes": {"b": toolbox({"s": stdio_server()})}})
    a.open("a")
    b.open("b")
    loops = [t for t in threading.enumerate() if t.name == "workbench-loop"]
    assert len(loops) == 1


def test_tool_filters(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(toolFilters=["echo", "a*"])})}})
    wb.open("t")
    assert sorted(t.name for t in wb.tools("t/s")) == ["add", "add_prompt", "add_resource", "add_tool", "echo"]
    with pytest.raises(ToolNotFoundError):
        wb.call("t/s/fail", {"message": "filtered out"})


def test_env_and_cwd_reach_the_child(make_workbench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WB_SECRET_TOKEN", "s3cret")
    monkeypatch.setenv("NOT_PASSED", "parent-only")
    wb = make_workbench(
        {"toolboxes": {"t": toolbox({"s": stdio_server(env={"TOKEN": "${WB_SECRET_TOKEN}"}, cwd=str(tmp_path))})}}
    )
    wb.open("t")
    assert wb.call("t/s/env", {"name": "TOKEN"}).text == "s3cret"
    assert wb.call("t/s/env", {"name": "NOT_PASSED"}).text == ""
    assert wb.call("t/s/env", {"name": "PATH"}).text != ""
    assert Path(wb.call("t/s/cwd").text) == tmp_path


def test_search_and_tools_targets(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(), "u": stdio_server("--name", "other")})}})
    wb.open("t")
    assert {t.server for t in wb.tools("t")} == {"s", "u"}
    assert {t.server for t in wb.tools("t/u")} == {"u"}
    found = wb.search("echo")
    assert found and found[0].name == "echo"
    assert {t.server for t in found if t.name == "echo"} == {"s", "u"}
    assert wb.search("no such words here") == []
    assert wb.call("t/u/whoami").text == "other"


def test_resources_and_prompts(wb: Workbench) -> None:
    wb.open("t")
    uris = {r.uri for r in wb.resources("t")}
    assert "test://hello" in uris
    assert wb.read_resource("t/s", "test://hello").text == "hello"
    prompts = wb.prompts("t")
    assert "greet" in {p.name for p in prompts}
    rendered = wb.get_prompt("t/s/greet", {"name": "Ada"})
    assert "Ada" in rendered.text


def test_subscribers_hear_list_changes_of_the_server_that_changed(make_workbench) -> None:
    import workbench_magic

    assert {"ToolsChanged", "ResourcesChanged", "PromptsChanged", "StatusChanged", "ToolboxClosed"} <= set(
        workbench_magic.__all__
    )
    # one server of each protocol era in the same toolbox
    wb = make_workbench({"toolboxes": {"t": toolbox({"a": stdio_server(), "b": stdio_server("--legacy")})}})
    wb.open("t")
    heard: list[Event] = []
    got_prompts, got_resources = threading.Event(), threading.Event()

    def first(event: Event) -> None:
        if isinstance(event, ResourcesChanged | PromptsChanged):
            heard.append(event)

    def second(event: Event) -> None:
        if event == PromptsChanged("t", "b"):
            got_prompts.set()
        elif event == ResourcesChanged("t", "a"):
            got_resources.set()

    stop = wb.subscribe(first)
    wb.subscribe(second)
    wb.call("t/b/add_prompt", {"name": "p"})
    assert got_prompts.wait(15), "no PromptsChanged"
    assert heard == [PromptsChanged("t", "b")]
    stop()  # `first` hears nothing more; `second` (called after it) shows the event came
    wb.call("t/a/add_resource", {"uri": "test://r", "text": "r"})
    assert got_resources.wait(15), "no ResourcesChanged"
    assert heard == [PromptsChanged("t", "b")]
    kinds = {ToolsChanged("t", "a"), ResourcesChanged("t", "a"), PromptsChanged("t", "a"), StatusChanged("t", "a")}
    assert len(kinds) == 4 and ToolboxClosed("t") == ToolboxClosed("t")  # frozen, hashable, told apart


def test_streamable_http_and_sse(make_workbench, http_server) -> None:
    http = http_server("http")
    sse = http_server("sse")
    wb = make_workbench(
        {
            "toolboxes": {
                "web": toolbox(
                    {
                        "http": {"url": http.url, "headers": {"X-Test": "1"}},
                        "sse": {"url": sse.url, "transport": "sse"},
                    }
                )
            }
        }
    )
    box = wb.open("web")
    assert box.failed == {}
    assert box.servers["http"].transport == "http"
    assert box.servers["sse"].transport == "sse"
    assert wb.call("web/http/echo", {"text": "over http"}).text == "over http"
    assert wb.call("web/sse/echo", {"text": "over sse"}).text == "over sse"
    assert wb.call("web/http/add", {"a": 1, "b": 2}).data == {"sum": 3}


def test_partial_open_keeps_good_servers_and_leaks_nothing(make_workbench, http_server) -> None:
    before = children()
    wb = make_workbench(
        {
            "toolboxes": {
                "t": toolbox(
                    {
                        "good": stdio_server(),
                        "missing": {"command": "/nonexistent/mcp-server"},
                        "exits": {"command": "sh", "args": ["-c", "echo boom-on-stderr >&2; exit 3"]},
                        "refused": {"url": "http://127.0.0.1:9/mcp"},
                    }
                )
            }
        }
    )
    box = wb.open("t")
    assert box.connected == ["good"]
    assert set(box.failed) == {"missing", "exits", "refused"}
    assert box.failed["missing"].startswith("Failed to connect to server 'missing' in toolbox 't': ")
    assert "/nonexistent/mcp-server" in box.failed["missing"]
    assert "boom-on-stderr" in box.failed["exits"]
    assert box.failed["refused"].startswith("Failed to connect to server 'refused' in toolbox 't': ")
    assert wb.call("t/good/echo", {"text": "fine"}).text == "fine"
    with pytest.raises(ConnectError, match="Failed to connect to server 'missing'"):
        wb.call("t/missing/anything")
    assert "boom-on-stderr" in wb.logs("t/exits")
    # only the good server's process is alive
    assert len(children() - before) == 1
    wb.close("t")
    assert children() - before == set()


def test_same_server_name_in_two_toolboxes_is_two_processes(make_workbench) -> None:
    before = children()
    wb = make_workbench(
        {
            "toolboxes": {
                "a": toolbox({"shared": stdio_server("--name", "in-a")}),
                "b": toolbox({"shared": stdio_server("--name", "in-b")}),
            }
        }
    )
    wb.open("a")
    wb.open("b")
    assert len(children() - before) == 2
    assert wb.call("a/shared/whoami").text == "in-a"
    assert wb.call("b/shared/whoami").text == "in-b"
    wb.close("a")
    assert len(children() - before) == 1
    assert wb.call("b/shared/whoami").text == "in-b"
    with pytest.raises(NotFoundError):
        wb.opened("a")


def test_close_and_close_all_end_every_child(make_workbench) -> None:
    before = children()
    wb = make_workbench({"toolboxes": {f"t{i}": toolbox({"s": stdio_server()}) for i in range(3)}})
    for i in range(3):
        wb.open(f"t{i}")
    assert len(children() - before) == 3
    wb.close("t0")
    assert len(children() - before) == 2
    wb.close_all()
    assert children() - before == set()
    assert not any(tb.open for tb in wb.toolboxes())


def test_open_is_idempotent_and_reconnect_restarts(wb: Workbench) -> None:
    before = children()
    wb.open("t")
    pid1 = children() - before
    wb.open("t")
    assert children() - before == pid1
    wb.reconnect("t/s")
    pid2 = children() - before
    assert len(pid2) == 1 and pid2 != pid1
    assert wb.call("t/s/echo", {"text": "again"}).text == "again"


def test_attribute_access_with_signature(wb: Workbench) -> None:
    box = wb.open("t")
    assert "s" in dir(box)
    assert "echo" in dir(box.s)
    assert box.s.echo(text="attr").text == "attr"
    assert box.s.add(1, 2).data == {"sum": 3}
    import inspect

    sig = inspect.signature(box.s.add)
    assert list(sig.parameters)[:2] == ["a", "b"]
    with pytest.raises(AttributeError, match="Tool 'nope' not found"):
        box.s.nope  # noqa: B018


def test_a_closed_toolbox_opens_again_through_its_view_as_a_call_does(wb: Workbench) -> None:
    box = wb.open("t")
    held = box.s  # a server's view kept from before the close
    box.close()
    assert repr(box) == "Toolbox 't': closed (it opens again on use)"
    assert "s" in dir(box) and "echo" not in dir(held)  # Tab lists the config's servers and starts none
    assert not wb.is_open("t")
    with pytest.raises(AttributeError, match=r"^Server 'nope' not found in toolbox 't'"):
        box.nope  # noqa: B018
    assert not wb.is_open("t")  # a name that is no server opens nothing
    assert box.s.echo(text="again").text == "again"  # as wb.call("t/s/echo", ...) would
    assert wb.is_open("t")
    box.close()
    assert held.echo(text="kept").text == "kept"
    box.close()
    assert box["s"].add(1, 2).data == {"sum": 3}
    assert repr(box).startswith("Toolbox 't': 1/1 servers connected")


def test_config_file_and_shared_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(tmp_path / "wb.json", {"toolboxes": {"f": toolbox({"s": stdio_server()})}})
    monkeypatch.setenv("WORKBENCH_CONFIG", str(path))
    monkeypatch.setattr(Workbench, "_shared", None)
    shared = Workbench.shared()
    try:
        assert shared is Workbench.shared()
        assert shared.config_source == str(path)
        assert [t.name for t in shared.toolboxes()] == ["f"]
    finally:
        shared.close_all()
        monkeypatch.setattr(Workbench, "_shared", None)


def test_interpreter_exit_ends_every_server(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from conftest import ROOT

    config = write_config(
        tmp_path / "wb.json", {"toolboxes": {"t": toolbox({"a": stdio_server(), "b": stdio_server()})}}
    )
    script = f"""
import json, os
from conftest import children
from workbench_magic import Workbench
wb = Workbench({str(config)!r})
wb.open("t")
print(json.dumps(sorted(children())), flush=True)
# exit without closing: atexit must end the servers
"""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")},
    )
    assert out.returncode == 0, out.stderr
    pids = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(pids) == 2
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert alive == [], f"servers outlived the interpreter: {alive}"
