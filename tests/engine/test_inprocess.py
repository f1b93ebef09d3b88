"""In-process servers: `"python": "module:attribute"` and `Workbench.add_server` (real SDK servers,
the SDK's in-memory transport, each on a thread and loop of its own)."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import SERVERS, children, wait_until
from mcp.server import MCPServer

from workbench_magic import ConfigError, ConnectError, UsageError, Workbench
from workbench_magic.notebook.widgets import Explorer
from workbench_magic.vocabulary.events import ToolsChanged


def server_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("workbench-server-")]


@pytest.fixture
def inproc(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(SERVERS))
    import inproc

    inproc.RELEASE.clear()
    yield inproc
    inproc.RELEASE.set()


def box(**servers: str) -> dict[str, Any]:
    return {"toolboxes": {"t": {"mcpServers": {name: {"python": spec} for name, spec in servers.items()}}}}


def test_a_python_server_runs_in_process(make_workbench, inproc: Any) -> None:
    before = children()
    wb = make_workbench(box(a="inproc:mcp", b="inproc:make"))
    opened = wb.open("t")
    assert children() == before  # no process started
    assert wb.status()["t"]["a"].transport == "python"
    assert sorted(server_threads()) == ["workbench-server-t-a", "workbench-server-t-b"]
    result = wb.call("t/a/add", {"a": 2, "b": 3})
    assert result.data == {"total": 5, "terms": [2, 3]}
    assert wb.call("t/b/ping", {}).data == {"result": "pong"}
    assert wb.read_resource("t/a", "inproc://hello").text == "hello from the test process"
    assert "a" in opened.connected and "b" in opened.connected
    wb.close("t")
    assert server_threads() == []


def test_argument_errors_keep_their_texts(make_workbench, inproc: Any) -> None:
    from workbench_magic import ArgumentError

    wb = make_workbench(box(a="inproc:mcp"))
    wb.open("t")
    with pytest.raises(ArgumentError, match=r"argument 'a': 'x' is not of type 'integer'"):
        wb.call("t/a/add", {"a": "x", "b": 1})
    with pytest.raises(ArgumentError, match=r"missing required argument 'b'"):
        wb.call("t/a/add", {"a": 1})


def test_a_crash_inside_a_tool_is_an_error_result_and_logged(make_workbench, inproc: Any) -> None:
    wb = make_workbench(box(a="inproc:mcp"))
    wb.open("t")
    result = wb.call("t/a/boom", {})
    assert result.is_error
    assert wb.call("t/a/warn", {"text": "thin ice"}).is_error is False
    logs = wb.logs("t/a")
    assert "kaboom from inside the tool" in logs  # the traceback, as a stdio server's stderr
    assert "WARNING inproc.tools: careful: thin ice" in logs
    assert wb.call("t/a/add", {"a": 1, "b": 1}).data["total"] == 2  # the server lives on


def test_warnings_raised_while_serving_go_to_the_log(make_workbench, inproc: Any, recwarn) -> None:
    wb = make_workbench(box(a="inproc:mcp"))
    wb.open("t")
    assert wb.call("t/a/caution", {}).text == "ok"
    assert "UserWarning: this tool is getting old" in wb.logs("t/a")
    assert not [w for w in recwarn if "getting old" in str(w.message)]  # not shown in the notebook


def test_a_resource_warning_the_collector_gives_the_server_is_not_in_its_log(
    make_workbench, inproc: Any, recwarn: pytest.WarningsRecorder
) -> None:
    """The garbage collector runs finalizers on whichever thread it runs: an event loop the test
    left unclosed, collected while a demo server served, put `ResourceWarning: unclosed event loop`
    in the server's log (CI, once). Nothing says such a warning is the server's: it goes where
    warnings went before."""
    wb = make_workbench(box(a="inproc:mcp"))
    wb.open("t")
    gc.disable()  # the cycle below is collected by the tool's `gc.collect()`, on the server's thread
    try:
        loop = asyncio.new_event_loop()
        loop.itself = loop  # type: ignore[attr-defined]
        del loop
        assert wb.call("t/a/collect", {}).data["result"] > 0
    finally:
        gc.enable()
    assert "ResourceWarning" not in wb.logs("t/a")
    assert [w.category for w in recwarn if "unclosed event loop" in str(w.message)] == [ResourceWarning]


def test_a_blocking_tool_stalls_only_its_own_server(make_workbench, inproc: Any) -> None:
    wb = make_workbench(box(a="inproc:mcp", b="inproc:mcp"))
    wb.open("t")
    held = wb.submit("t/a/hold", {})
    # Server a's loop is blocked until RELEASE is set, and it is set only after b answered:
    # if b shared a's loop (or ours), this call could not finish and would time out.
    assert wb.call("t/b/add", {"a": 1, "b": 2}, timeout=10).data["total"] == 3
    inproc.RELEASE.set()
    assert held.result(timeout=30).data == {"result": "released"}


def test_a_server_that_crashes_while_starting_fails_its_open(make_workbench, inproc: Any) -> None:
    wb = make_workbench(box(a="inproc:crashing"))
    with pytest.raises(ConnectError, match="lifespan failed on purpose"):
        wb.open("t")
    assert "RuntimeError: lifespan failed on purpose" in wb.logs("t/a")
    assert server_threads() == []


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("no_such_module_here:mcp", "cannot import 'no_such_module_here': ModuleNotFoundError"),
        ("inproc:missing", "module 'inproc' has no attribute 'missing'"),
        ("inproc:NOT_A_SERVER", "'inproc:NOT_A_SERVER' is int, not an MCPServer"),
        ("inproc:not_a_factory", "'inproc:not_a_factory' returned int, not an MCPServer"),
    ],
)
def test_what_cannot_be_served_says_why(make_workbench, inproc: Any, spec: str, reason: str) -> None:
    wb = make_workbench(box(a=spec))
    with pytest.raises(ConnectError) as info:
        wb.open("t")
    assert reason in str(info.value)
    assert str(info.value).startswith("Failed to open toolbox 't': no server connected (server 'a': ")


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ({"python": "nocolon"}, "'nocolon' is not of the form 'package.module:attribute'"),
        ({"python": "m:x", "command": "y"}, "has both 'python' and 'command'"),
        ({"python": "m:x", "env": {"A": "1"}}, "env: does not apply to in-process servers"),
        ({"python": "m:x", "transport": "http"}, "says 'http', but a 'python' server runs in-process"),
    ],
)
def test_config_rules_for_python_servers(server: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Workbench({"toolboxes": {"t": {"mcpServers": {"a": server}}}})


def test_add_server_creates_replaces_and_closes(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {}})
    events: list[Any] = []
    unsubscribe = wb.subscribe(events.append)

    first = MCPServer("first")

    @first.tool()
    def greet(name: str) -> str:
        """Greet."""
        return f"hello {name}"

    wb.add_server("play/greeter", first)
    assert [t.name for t in wb.tools("play")] == ["greet"]
    assert wb.call("play/greeter/greet", {"name": "ada"}).text == "hello ada"
    explorer = Explorer(wb, "play")
    explorer.server_select.value = "greeter"
    assert [v for _, v in explorer.tool_select.options] == ["greet"]

    second = MCPServer("second")

    @second.tool()
    def greet(name: str, loud: bool = False) -> str:  # noqa: F811  # the cell re-run
        """Greet, maybe loudly."""
        return f"HELLO {name}" if loud else f"hi {name}"

    @second.tool()
    def wave() -> str:
        """Wave."""
        return "~"

    wb.add_server("play/greeter", second)
    assert sorted(t.name for t in wb.tools("play")) == ["greet", "wave"]
    assert wb.call("play/greeter/greet", {"name": "ada", "loud": True}).text == "HELLO ada"
    assert server_threads() == ["workbench-server-play-greeter"]  # the old one ended
    assert any(isinstance(e, ToolsChanged) and e.server == "greeter" for e in events)
    assert explorer.wait_until(lambda: "wave" in [v for _, v in explorer.tool_select.options], 10)
    assert str(wb.history[-1].identifier) == "play/greeter/greet"
    unsubscribe()
    explorer.close()
    wb.close("play")
    assert server_threads() == []
    wb.open("play")  # notebook servers stay configured: it opens again
    assert wb.call("play/greeter/wave", {}).text == "~"


def test_add_server_survives_a_config_reload(make_workbench, tmp_path) -> None:
    wb = make_workbench({"toolboxes": {}})
    wb.add_server("nb/s", MCPServer("s"))
    wb.load_config({"toolboxes": {"other": {"mcpServers": {}}}})
    assert sorted(tb.name for tb in wb.toolboxes()) == ["nb", "other"]


@pytest.mark.parametrize(
    ("target", "server", "error", "message"),
    [
        ("justone", MCPServer("x"), UsageError, "add_server needs 'toolbox/name', got 'justone'"),
        ("a/b/c", MCPServer("x"), UsageError, "add_server needs 'toolbox/name', got 'a/b/c'"),
        ("a/b", 3, UsageError, "add_server needs an MCPServer (or a callable returning one), got int"),
        ("a/b__", MCPServer("x"), ConfigError, "invalid server name 'b__'"),
    ],
)
def test_add_server_errors(make_workbench, target: str, server: Any, error: type[Exception], message: str) -> None:
    wb = make_workbench({"toolboxes": {}})
    with pytest.raises(error) as info:
        wb.add_server(target, server)
    assert message in str(info.value)
    assert server_threads() == []


def test_the_demo_runs_in_process_by_default(make_workbench) -> None:
    before = children()
    wb = make_workbench()
    assert {s.transport for s in wb.settings.toolbox("demo").mcp_servers.values()} == {"python"}
    wb.open("demo")
    assert children() == before
    note = wb.call("demo/notes/add_note", {"title": "t", "body": "b"})
    assert not note.is_error
    wb.reconnect("demo/notes")  # a new connection is a new server: its notes are gone, as with stdio
    assert wb.call("demo/notes/list_notes", {}).data["notes"] == []


def test_the_demo_servers_log_no_warnings_of_their_own(make_workbench, recwarn) -> None:
    """Issue 53: the first lines of the demo's datasets log were two `MCPDeprecationWarning`s (every
    logging helper of the SDK is deprecated at 2026-07-28); its log messages still arrive."""
    wb = make_workbench()
    wb.open("demo")
    assert not wb.call("demo/datasets/query", {"dataset": "penguins", "limit": 2}).is_error
    assert not wb.call("demo/notes/list_notes", {}).is_error
    log = wb.logs("demo/datasets")
    assert "notifications/message [info] datasets: query penguins: every row, limit 2" in log
    assert "Warning" not in log, log
    assert "Warning" not in wb.logs("demo/notes")


def test_logging_of_the_notebook_is_left_as_it_was(make_workbench, inproc: Any, capsys) -> None:
    import logging

    root = logging.getLogger()
    kept = list(root.handlers)
    printing = logging.StreamHandler()  # what MCPServer()'s basicConfig puts on the root in a kernel
    root.addHandler(printing)
    try:
        wb = make_workbench(box(a="inproc:mcp"))
        wb.open("t")
        assert wb.call("t/a/warn", {"text": "inside"}).text == "inside"
        assert "careful: inside" in wb.logs("t/a")
        assert "careful: inside" not in capsys.readouterr().err  # the server's record stays in its log
        logging.getLogger("notebook.code").warning("outside")
        assert "outside" in capsys.readouterr().err  # the notebook's own records still print
    finally:
        root.removeHandler(printing)
    assert [h for h in root.handlers if h not in kept and type(h).__name__ != "_ServerLogHandler"] == []


def test_python_still_prints_warnings_nobody_handles() -> None:
    import subprocess
    import sys

    code = (
        "import logging, sys\n"
        f"sys.path.insert(0, {str(SERVERS)!r})\n"
        "from workbench_magic import Workbench\n"
        "wb = Workbench({'toolboxes': {'t': {'mcpServers': {'a': {'python': 'inproc:mcp'}}}}})\n"
        "wb.open('t')\n"
        "wb.call('t/a/warn', {'text': 'inside'})\n"
        "logging.getLogger('notebook.code').warning('last resort')\n"
        "wb.close_all()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == ["last resort"]  # Python's last resort, and nothing of the server's


def test_what_a_server_sends_after_its_client_left_is_dropped(make_workbench, caplog: pytest.LogCaptureFixture) -> None:
    wb = make_workbench()  # the embedded demo: in-process servers
    wb.open("demo")
    handle = wb.start("demo/datasets/profile", {"dataset": "penguins", "delay": 2})
    assert wait_until(lambda: handle.message is not None, 10)  # the call runs on the server
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        wb.close("demo")  # returns once the server thread ended, after what it sent last was delivered
    assert handle.done()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
