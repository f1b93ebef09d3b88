"""Record a session against real servers (stdio and HTTP), then replay it with the servers gone."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, HttpServer, children, stdio_server, toolbox
from IPython.core.interactiveshell import InteractiveShell

from workbench_magic import Workbench
from workbench_magic.engine.cassette import Cassette, CassetteError
from workbench_magic.vocabulary.errors import ConnectError, ToolNotFoundError

SECRET_ENV = "sk-from-the-environment-1234"
SECRET_LITERAL = "literal-env-value-5678"
SECRET_HEADER = "bearer-token-abcdef"
GONE = {"command": "/nonexistent/server-was-removed"}


def live_config(http_url: str | None = None) -> dict[str, Any]:
    servers: dict[str, Any] = {"s": stdio_server(env={"API_KEY": "${CASSETTE_TEST_KEY}", "OTHER": SECRET_LITERAL})}
    if http_url is not None:
        servers["web"] = {"url": http_url, "headers": {"Authorization": f"Bearer {SECRET_HEADER}"}}
    return {"toolboxes": {"t": toolbox(servers, "recorded box")}}


def gone_config() -> dict[str, Any]:
    """The same toolbox with its servers removed: nothing could start."""
    return {"toolboxes": {"t": toolbox({"s": GONE, "web": {"url": "http://127.0.0.1:9/mcp"}})}}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASSETTE_TEST_KEY", SECRET_ENV)


def record_session(wb: Workbench, path: Path, http: bool = True) -> dict[str, Any]:
    """A session touching every kind of answer; returns the live results to compare with."""
    with wb.record(path):
        out = {
            "echo": wb.call("t/s/echo", {"text": "hi"}),
            "add": wb.call("t/s/add", {"a": 1, "b": 2}),
            "image": wb.call("t/s/image"),
            "table": wb.call("t/s/table", {"n": 3}),
            "env": wb.call("t/s/env", {"name": "API_KEY"}),
            "echo_secret": wb.call("t/s/echo", {"text": SECRET_ENV}),
            "fail": wb.call("t/s/fail", {"message": "on purpose"}),
            "resource": wb.read_resource("t/s", "test://hello"),
            "prompt": wb.get_prompt("t/s/greet", {"name": "Ada"}),
            "prompts": wb.prompts("t/s"),
        }
        if http:
            out["web"] = wb.call("t/web/table", {"n": 2})
    return out


@dataclass
class Recorded:
    """A session recorded live (`record_session`) against the stdio test server and an HTTP one."""

    wb: Workbench
    live: dict[str, Any]
    cassette: Path
    web: HttpServer


@pytest.fixture
def recorded(
    make_workbench: Callable[..., Workbench],
    http_server: Callable[..., HttpServer],
    secret_env: None,
    tmp_path: Path,
) -> Recorded:
    web = http_server("http")
    cassette = tmp_path / "session.json"
    wb = make_workbench(live_config(web.url))
    return Recorded(wb, record_session(wb, cassette), cassette, web)


def test_record_then_replay_with_the_servers_gone(make_workbench: Callable[..., Workbench], recorded: Recorded) -> None:
    live, cassette = recorded.live, recorded.cassette
    protocol = recorded.wb.status()["t"]["s"].protocol
    recorded.wb.close_all()
    recorded.web.stop()
    before = children()

    wb = make_workbench(gone_config(), replay=cassette)
    box = wb.open("t")
    assert box.failed == {}
    assert {s.name: (s.status, s.transport) for s in box.servers.values()} == {
        "s": ("connected", "replay"),
        "web": ("connected", "replay"),
    }
    assert box.servers["s"].protocol == protocol
    assert box.servers["s"].server_info == "testserver (replayed)"
    assert "echo" in [t.name for t in wb.tools("t/s")]
    assert wb.tool("t/s/add").input_schema["required"] == ["a", "b"]

    for name, args in [("echo", {"text": "hi"}), ("add", {"a": 1, "b": 2}), ("table", {"n": 3})]:
        replayed = wb.call(f"t/s/{name}", args)
        assert replayed.replayed and not live[name].replayed
        assert replayed.data == live[name].data
        assert replayed.structured_content == live[name].structured_content
        assert replayed.content == live[name].content
    image = wb.call("t/s/image")
    assert [(i.data, i.mime_type) for i in image.images] == [(i.data, i.mime_type) for i in live["image"].images]
    assert image.images[0].data.startswith(b"\x89PNG")
    table = wb.call("t/s/table", {"n": 3}).to_pandas()
    assert table.equals(live["table"].to_pandas()) and list(table.columns) == ["id", "name", "value"]
    assert wb.call("t/web/table", {"n": 2}).data == live["web"].data
    failed = wb.call("t/s/fail", {"message": "on purpose"})
    assert failed.is_error and failed.replayed and "on purpose" in failed.text
    assert wb.read_resource("t/s", "test://hello").text == "hello"
    assert wb.get_prompt("t/s/greet", {"name": "Ada"}).messages == live["prompt"].messages
    assert [p.name for p in wb.prompts("t/s")] == [p.name for p in live["prompts"]]
    assert "replayed" in repr(image) and "replayed" in image._repr_html_()
    assert children() == before  # no server process started


def test_the_cassette_is_readable_json_without_secrets(recorded: Recorded) -> None:
    live, cassette = recorded.live, recorded.cassette
    assert live["env"].text == SECRET_ENV and live["echo_secret"].text == SECRET_ENV  # the servers saw them
    text = cassette.read_text()
    for secret in (SECRET_ENV, SECRET_LITERAL, SECRET_HEADER):
        assert secret not in text
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    assert data["workbench-cassette"] == 1
    entries = data["interactions"]
    assert [(e["kind"], e["server"], e["name"]) for e in entries][:3] == [
        ("tool", "s", "echo"),
        ("tool", "s", "add"),
        ("tool", "s", "image"),
    ]
    assert ("resource", "test://hello") in [(e["kind"], e["name"]) for e in entries]
    assert ("prompt", "greet", {"name": "Ada"}) in [(e["kind"], e["name"], e["arguments"]) for e in entries]
    echo = entries[0]
    assert list(echo) == ["kind", "toolbox", "server", "name", "arguments", "result", "elapsed"]  # fixed order
    assert echo["arguments"] == {"text": "hi"} and echo["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert 0 < echo["elapsed"] < 30
    assert [e["arguments"] for e in entries if e["name"] == "echo"][1] == {"text": "***"}  # equal to a secret
    server = data["servers"]["t/s"]
    assert server["server_info"]["name"] == "testserver"
    assert server["protocol"] and server["transport"] == "stdio"
    assert {"echo", "add", "image"} <= {t["name"] for t in server["tools"]}
    assert data["servers"]["t/web"]["transport"] == "http"
    assert [p["name"] for p in server["prompts"]] == ["greet"]


def test_a_missing_call_fails_with_one_line(
    make_workbench: Callable[..., Workbench], secret_env: None, tmp_path: Path
) -> None:
    cassette = tmp_path / "c.json"
    wb = make_workbench(live_config())
    with wb.record(cassette):
        wb.call("t/s/echo", {"text": "hi"})
    replay = make_workbench(gone_config(), replay=cassette)
    with pytest.raises(CassetteError) as caught:
        replay.call("t/s/echo", {"text": "something else"})
    message = str(caught.value)
    assert "\n" not in message
    assert 't/s/echo with arguments {"text": "something else"}' in message and str(cassette) in message
    with pytest.raises(ToolNotFoundError):
        replay.call("t/s/never_existed")
    with pytest.raises(CassetteError, match="read of t/s test://other"):
        replay.read_resource("t/s", "test://other")
    assert replay.call("t/s/echo", {"text": "hi"}).text == "hi"  # the workbench goes on
    assert [(h.identifier.name, h.ok) for h in replay.history] == [("echo", False), ("echo", True)]


def test_matching_ignores_key_order_and_repeats_replay_in_order(
    make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    cassette = tmp_path / "c.json"
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    with wb.record(cassette):
        wb.call("t/s/add", {"a": 1, "b": 2})
        first = wb.call("t/s/add_tool", {"name": "extra"})
        second = wb.call("t/s/add_tool", {"name": "extra"})
    assert not first.is_error and second.is_error  # the live server answered differently

    replay = make_workbench({"toolboxes": {}}, replay=cassette)
    assert replay.call("t/s/add", {"b": 2, "a": 1}).data == {"sum": 3}
    again = [replay.call("t/s/add_tool", {"name": "extra"}) for _ in range(3)]
    assert [r.is_error for r in again] == [False, True, True]  # recorded order, then the last again
    assert replay.toolboxes()[0].description.startswith("replayed from")


def test_auto_mode_replays_what_it_has_and_calls_the_rest(
    make_workbench: Callable[..., Workbench], secret_env: None, tmp_path: Path
) -> None:
    cassette = tmp_path / "c.json"
    wb = make_workbench(live_config())
    with wb.record(cassette):
        wb.call("t/s/echo", {"text": "recorded"})
    wb.close_all()
    auto = make_workbench(live_config(), replay=cassette, replay_mode="auto")
    before = children()
    hit = auto.call("t/s/echo", {"text": "recorded"})
    assert hit.replayed and children() == before  # no server yet
    miss = auto.call("t/s/echo", {"text": "live"})
    assert miss.text == "live" and not miss.replayed
    assert len(children() - before) == 1  # the live server started for the miss
    assert auto.call("t/s/echo", {"text": "recorded"}).replayed
    auto.close_all()
    assert children() == before


def test_plain_record_call_until_record_none_and_record_at_construction(
    make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}}, record=first)
    wb.call("t/s/echo", {"text": "one"})
    wb.record(None)
    wb.call("t/s/echo", {"text": "not recorded"})
    recording = wb.record(second)
    wb.call("t/s/echo", {"text": "two"})
    recording.stop()
    wb.call("t/s/echo", {"text": "not recorded either"})
    assert [e["arguments"]["text"] for e in Cassette.load(first).interactions] == ["one"]
    assert [e["arguments"]["text"] for e in Cassette.load(second).interactions] == ["two"]
    assert wb.recordings == [str(first), str(second)]


def test_config_replay_needs_neither_the_variables_nor_the_servers(
    make_workbench: Callable[..., Workbench], secret_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "cassettes" / "c.json"
    wb = make_workbench(live_config())
    with wb.record(cassette):
        wb.call("t/s/echo", {"text": "from the config"})
    monkeypatch.delenv("CASSETTE_TEST_KEY")
    config = tmp_path / "workbench-config.json"
    boxed = live_config()
    boxed["toolboxes"]["t"]["replay"] = "cassettes/c.json"  # relative to the config file
    boxed["toolboxes"]["t"]["mcpServers"]["s"]["command"] = GONE["command"]
    config.write_text(json.dumps(boxed))
    before = children()
    replay = make_workbench(str(config))
    assert replay.call("t/s/echo", {"text": "from the config"}).replayed
    assert replay.status()["t"]["s"].transport == "replay"
    assert children() == before
    boxed["toolboxes"]["t"]["replay"] = "cassettes/missing.json"
    boxed["toolboxes"]["other"] = toolbox({"s": stdio_server()})
    config.write_text(json.dumps(boxed))
    broken = make_workbench(str(config))
    with pytest.raises(ConnectError, match=r"server 's': Cassette .*missing.json not found"):
        broken.open("t")
    assert broken.call("other/s/echo", {"text": "still works"}).text == "still works"


def test_a_server_the_cassette_lacks_fails_to_open_in_strict_mode(
    make_workbench: Callable[..., Workbench], tmp_path: Path
) -> None:
    cassette = tmp_path / "c.json"
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    with wb.record(cassette):
        wb.call("t/s/echo", {"text": "x"})
    replay = make_workbench({"toolboxes": {"t": toolbox({"s": GONE, "other": GONE})}}, replay=cassette)
    box = replay.open("t")
    assert box.failed == {
        "other": f"Failed to connect to server 'other' in toolbox 't': not in the cassette {cassette}"
    }
    only = make_workbench({"toolboxes": {"t": toolbox({"other": GONE})}}, replay=cassette)
    assert only.open("t").connected == ["s"]  # the cassette's server joins the configured toolbox
    with pytest.raises(ConnectError, match="no server connected"):
        make_workbench({"toolboxes": {"u": toolbox({"other": GONE})}}, replay=cassette).open("u")


def test_bad_cassettes_are_one_line_errors(make_workbench: Callable[..., Workbench], tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="not found"):
        make_workbench({"toolboxes": {}}, replay=tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(CassetteError, match="invalid JSON at line 1"):
        make_workbench({"toolboxes": {}}, replay=bad)
    bad.write_text('{"some": "json"}')
    with pytest.raises(CassetteError, match="is not a workbench cassette"):
        make_workbench({"toolboxes": {}}, replay=bad)
    bad.write_text('{"workbench-cassette": 1, "servers": {}, "interactions": []}')
    with pytest.raises(CassetteError, match="Unknown replay mode"):
        make_workbench({"toolboxes": {}}).replay(bad, mode="x")


def test_magics_record_stop_and_replay(
    make_workbench: Callable[..., Workbench], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        cassette = tmp_path / "magic.json"
        shell.run_line_magic("workbench", f"record {cassette}")
        shell.run_cell("%use_tool t/s/echo text=recorded")
        shell.run_line_magic("workbench", "record stop")
        shell.run_cell("%use_tool t/s/echo text=after")
        assert [e["arguments"] for e in Cassette.load(cassette).interactions] == [{"text": "recorded"}]
        shell.run_line_magic("workbench", f"replay {cassette}")  # the open toolbox reopens replayed
        result = shell.run_cell("%use_tool t/s/echo text=recorded")
        assert result.result.replayed and result.result.text == "recorded"
        missing = shell.run_cell("%use_tool t/s/echo text=after")
        assert isinstance(missing.error_in_exec, CassetteError)
        shell.run_line_magic("workbench", f"replay {cassette} --auto")
        assert not shell.run_cell("%use_tool t/s/echo text=after").result.replayed
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")


STATION = ROOT / "notebooks" / "cassettes"


def test_the_station_server_needs_its_token(monkeypatch: pytest.MonkeyPatch) -> None:
    script = runpy.run_path(str(STATION / "record_station.py"))
    port = script["free_port"]()
    env = {**os.environ, "STATION_TOKEN": "station-test-token-42"}
    proc = subprocess.Popen([sys.executable, str(script["SERVER"]), "--port", str(port)], env=env)
    try:
        script["wait_listening"](port, proc, timeout=60)  # a loaded machine starts it slowly
        url = f"http://127.0.0.1:{port}/mcp"
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=10)
        assert caught.value.code == 401
        authorized = urllib.request.Request(url, data=b"{}", method="POST")
        authorized.add_header("Authorization", "Bearer station-test-token-42")
        with pytest.raises(urllib.error.HTTPError) as caught:  # past the gate: the MCP endpoint's own answer
            urllib.request.urlopen(authorized, timeout=10)
        assert caught.value.code != 401
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_committed_demo_cassette_is_what_recording_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATION_TOKEN", "station-test-token-42")
    fresh = tmp_path / "weather-station.json"
    runpy.run_path(str(STATION / "record_station.py"))["record"](fresh)
    text = fresh.read_text()
    assert "station-test-token-42" not in text and "/work/" not in text
    new, committed = Cassette.load(fresh), Cassette.load(STATION / "weather-station.json")

    def requests(cassette: Cassette) -> list[tuple[str, str, Any]]:
        return [(e["kind"], e["name"], e["arguments"]) for e in cassette.interactions]

    assert requests(new) == requests(committed)  # notebook 08 finds every answer it asks for
    assert new.servers["weather/station"]["tools"] == committed.servers["weather/station"]["tools"]


def test_the_explorer_shows_the_replayed_badge(make_workbench: Callable[..., Workbench], tmp_path: Path) -> None:
    import ipywidgets

    from workbench_magic.notebook.widgets.results import render_result

    cassette = tmp_path / "c.json"
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    with wb.record(cassette):
        live = wb.call("t/s/echo", {"text": "hi"})
    replayed = make_workbench({"toolboxes": {}}, replay=cassette).call("t/s/echo", {"text": "hi"})
    shown = []
    for result in (live, replayed):
        out = ipywidgets.Output()
        render_result(out, result)
        shown.append(json.dumps(out.outputs))
    assert "wb-replayed" not in shown[0] and "wb-replayed" in shown[1]
    assert "replayed]" in shown[1]


def test_only_a_replayed_toolbox_may_leave_variables_unset() -> None:
    from workbench_magic.config.parser import parse_config
    from workbench_magic.vocabulary.errors import ConfigError

    server = {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${UNSET_FOR_REPLAY_TEST}"}}
    replayed = parse_config({"toolboxes": {"t": {"replay": "c.json", "mcpServers": {"s": server}}}}, environ={})
    assert replayed.toolboxes["t"].replay == "c.json"
    assert replayed.toolboxes["t"].mcp_servers["s"].headers == {"Authorization": "Bearer "}
    with pytest.raises(ConfigError, match="UNSET_FOR_REPLAY_TEST is not set"):
        parse_config({"toolboxes": {"t": {"mcpServers": {"s": server}}}}, environ={})
