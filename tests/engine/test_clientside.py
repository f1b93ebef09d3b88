"""The client side of MCP on both protocol generations: identity, sampling, elicitation, roots,
server log messages, completions, resource templates and subscriptions, task-only tools.

`cs` is tests/servers/clientserver.py speaking 2026-07-28 (server requests ride inside
`InputRequiredResult`, the SDK retries); `csl` is the same server speaking only the 2025-11-25
handshake era (real server-to-client requests). server-everything is the npm reference server.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from conftest import npm_server, python_server, toolbox

from workbench_magic import ToolError, UrlElicitationRequired, Workbench

ERAS = [pytest.param("cs", "2026-07-28", id="2026-07-28"), pytest.param("csl", "2025-11-25", id="2025-11-25")]


def clientserver(*extra: str, **config: Any) -> dict[str, Any]:
    return python_server("clientserver.py", *extra, **config)


@pytest.fixture
def both(make_workbench):
    """A workbench factory over one toolbox `t` holding both eras of the client-feature server."""

    def make(**kwargs: Any) -> Workbench:
        servers = {"cs": clientserver(), "csl": clientserver("--legacy")}
        wb = make_workbench({"toolboxes": {"t": toolbox(servers)}}, **kwargs)
        box = wb.open("t")
        assert {s: st.protocol for s, st in box.servers.items()} == {"cs": "2026-07-28", "csl": "2025-11-25"}
        return wb

    return make


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_servers_see_workbench_magic_as_the_client(both, server: str, protocol: str) -> None:
    from workbench_magic import __version__

    wb = both()
    assert wb.call(f"t/{server}/client_info").data == {"result": {"name": "workbench-magic", "version": __version__}}


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_sampling_handlers_answer_and_are_recorded(both, server: str, protocol: str) -> None:
    threads: list[str] = []

    def model(messages: list[Any], params: Any) -> str:
        threads.append(threading.current_thread().name)
        return f"echo: {messages[-1].content.text} ({params.max_tokens} tokens)"

    wb = both(sampling_handler=model)
    answer = wb.call(f"t/{server}/sample", {"prompt": "hello", "max_tokens": 7}).data
    assert answer == {
        "model": "workbench-magic",
        "role": "assistant",
        "text": "echo: hello (7 tokens)",
        "stop_reason": "endTurn",
    }
    assert threads and threads[0] != "workbench-loop"  # a sync handler runs off the loop thread
    record = next(r for r in reversed(wb.history) if r.kind == "sampling")
    assert (record.identifier.toolbox, record.identifier.server) == ("t", server)
    assert record.arguments["messages"] == [{"role": "user", "text": "hello"}]
    assert record.answer == "echo: hello (7 tokens)"
    assert "t/" + server + " <- sampling" in repr(wb.history)

    # a dict and an async function that returns a CreateMessageResult work too
    from mcp_types import CreateMessageResult, TextContent

    wb.sampling_handler = lambda messages, params: {"text": "from a dict", "model": "dict-model"}
    assert wb.call(f"t/{server}/sample", {"prompt": "x"}).data["model"] == "dict-model"

    async def on_loop(messages: list[Any], params: Any) -> CreateMessageResult:
        threads.append(threading.current_thread().name)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="async"), model="m")

    wb.sampling_handler = on_loop
    assert wb.call(f"t/{server}/sample", {"prompt": "x"}).data["text"] == "async"
    assert threads[-1] == "workbench-loop"


def test_sampling_is_advertised_only_while_a_handler_is_set(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {"e": toolbox({"ev": npm_server("everything")})}})
    wb.open("e")
    names = {t.name for t in wb.tools("e")}
    assert "trigger-sampling-request" not in names  # hidden from a client without the capability
    assert "trigger-elicitation-request" in names and "get-roots-list" in names
    wb.sampling_handler = lambda messages, params: "the model says hi"  # the server reconnects, declaring it
    result = wb.call("e/ev/trigger-sampling-request", {"prompt": "say hi"})
    assert "the model says hi" in result.text
    wb.sampling_handler = None
    assert "trigger-sampling-request" not in {t.name for t in wb.tools("e")}


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_a_handler_set_after_open_reconnects_the_servers_that_declared_otherwise(
    both, server: str, protocol: str
) -> None:
    from conftest import children

    outside = children()
    wb = both()
    with pytest.raises(ToolError, match="did not declare the sampling capability"):
        wb.call(f"t/{server}/sample", {"prompt": "x"})
    first = children() - outside
    wb.sampling_handler = lambda messages, params: "first"
    assert wb.call(f"t/{server}/sample", {"prompt": "x"}).data["text"] == "first"
    reconnected = children() - outside
    assert len(reconnected) == len(first) == 2 and not reconnected & first  # both servers, new processes
    wb.sampling_handler = lambda messages, params: "second"  # still declared: nobody reconnects
    assert wb.call(f"t/{server}/sample", {"prompt": "x"}).data["text"] == "second"
    assert children() - outside == reconnected
    wb.sampling_handler = None
    with pytest.raises(ToolError, match="did not declare the sampling capability"):
        wb.call(f"t/{server}/sample", {"prompt": "x"})


def test_a_server_with_a_call_in_flight_keeps_its_session_and_a_warning_says_so(both) -> None:
    asked, release = threading.Event(), threading.Event()

    def person(message: str, schema: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        release.wait(60)
        return {"name": "Ada"}

    wb = both(elicitation_handler=person)
    call = wb.submit("t/csl/ask_person", {"message": "wait"})
    assert asked.wait(60)
    with pytest.warns(UserWarning, match=r"^t/csl had a call in flight: sampling is offered from their next reconnect"):
        wb.sampling_handler = lambda messages, params: "hi"
    release.set()
    assert call.result(60).data == {"action": "accept", "content": {"name": "Ada"}}  # not cut off
    assert wb.call("t/cs/sample", {"prompt": "x"}).data["text"] == "hi"  # the idle one reconnected
    with pytest.raises(ToolError, match="did not declare the sampling capability"):
        wb.call("t/csl/sample", {"prompt": "x"})
    wb.reconnect("t/csl")  # as the warning says
    assert wb.call("t/csl/sample", {"prompt": "x"}).data["text"] == "hi"


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_elicitation_canned_answers_callables_and_declines(both, server: str, protocol: str) -> None:
    wb = both(elicitation_handler={"name": "Ada", "age": 36})
    assert wb.call(f"t/{server}/ask_person").data == {"action": "accept", "content": {"name": "Ada", "age": 36}}
    asked: list[tuple[str, dict[str, Any]]] = []

    def person(message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        asked.append((message, schema))
        return None if "decline" in message else {"name": "Grace", "color": "blue"}

    wb.elicitation_handler = person
    assert wb.call(f"t/{server}/ask_person", {"message": "please"}).data == {
        "action": "accept",
        "content": {"name": "Grace", "color": "blue"},
    }
    assert asked[0][0] == "please" and set(asked[0][1]["properties"]) == {"name", "age", "color", "subscribe"}
    assert wb.call(f"t/{server}/ask_person", {"message": "decline me"}).data == {"action": "decline", "content": None}
    from mcp_types import ElicitResult

    wb.elicitation_handler = lambda message, schema: ElicitResult(action="cancel")
    assert wb.call(f"t/{server}/ask_person").data["action"] == "cancel"
    kinds = [r.kind for r in wb.history]
    assert kinds.count("elicitation") == 4


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_nobody_to_ask_declines_with_one_log_line(both, server: str, protocol: str, caplog) -> None:
    wb = both()  # no handler: ask the person; pytest's stdin is not a terminal
    with caplog.at_level(logging.WARNING, logger="workbench_magic"):
        assert wb.call(f"t/{server}/ask_person").data == {"action": "decline", "content": None}
    lines = [r.getMessage() for r in caplog.records if "nobody can answer" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith(f"t/{server} asked for input")


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_url_elicitation_and_the_url_required_error(both, server: str, protocol: str) -> None:
    wb = both(elicitation_handler={})
    assert wb.call(f"t/{server}/ask_url", {"url": "https://example.com/ok"}).data == {"action": "accept"}
    wb.elicitation_handler = lambda message, schema: None
    assert wb.call(f"t/{server}/ask_url").data == {"action": "decline"}
    with pytest.raises(UrlElicitationRequired) as info:
        wb.call(f"t/{server}/need_url")
    assert info.value.urls == ["https://example.com/authorize"]
    assert "https://example.com/authorize" in str(info.value) and len(str(info.value).splitlines()) == 1


def test_server_everything_url_elicitation_error_path(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {"e": toolbox({"ev": npm_server("everything")})}}, elicitation_handler={})
    wb.open("e")
    tool = wb.tool("e/ev/trigger-url-elicitation")
    arguments = {"url": "https://example.com/consent", "message": "Consent please"}
    assert "errorPath" in tool.parameters
    with pytest.raises(UrlElicitationRequired) as info:
        wb.call("e/ev/trigger-url-elicitation", {**arguments, "errorPath": True})
    assert info.value.urls == ["https://modelcontextprotocol.io"]  # the server's prerequisite link
    assert "https://modelcontextprotocol.io" in str(info.value)
    # the retry after the prerequisite goes the request path: the URL is asked (and accepted here)
    retried = wb.call("e/ev/trigger-url-elicitation", {**arguments, "errorPath": True})
    assert not retried.is_error and "accept" in retried.text


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_roots_default_config_and_set_roots(make_workbench, tmp_path, server: str, protocol: str) -> None:
    flag = ("--legacy",) if server == "csl" else ()
    servers = {
        server: clientserver(*flag),
        "fixed": clientserver(*flag, roots=[str(tmp_path), "file:///data"]),
        "none": clientserver(*flag, roots=False),
    }
    wb = make_workbench({"toolboxes": {"t": toolbox(servers)}})
    wb.open("t")
    assert wb.roots == []
    assert wb.call(f"t/{server}/my_roots").data["roots"] == []  # declared, none offered until set
    assert [r["uri"] for r in wb.call("t/fixed/my_roots").data["roots"]] == [tmp_path.as_uri(), "file:///data"]
    with pytest.raises(ToolError, match="did not declare the roots capability"):
        wb.call("t/none/my_roots")  # "roots": false: no roots capability, the server cannot ask
    wb.set_roots(f"t/{server}", [str(tmp_path / "a")])
    assert [r["uri"] for r in wb.call(f"t/{server}/my_roots").data["roots"]] == [(tmp_path / "a").as_uri()]
    if protocol == "2025-11-25":  # handshake-era servers are told; 2026-07-28 ones ask per request
        assert wb.call(f"t/{server}/roots_changed_count", {"at_least": 1}).data["result"] >= 1
    wb.roots = [str(tmp_path / "b")]
    assert wb.roots == [(tmp_path / "b").as_uri()]
    assert [r["uri"] for r in wb.call(f"t/{server}/my_roots").data["roots"]] == [(tmp_path / "a").as_uri()]
    wb.set_roots(f"t/{server}", None)
    assert [r["uri"] for r in wb.call(f"t/{server}/my_roots").data["roots"]] == [(tmp_path / "b").as_uri()]


def _wait_for_line(wb: Workbench, target: str, *lines: str, count: int = 1, limit: float = 20.0) -> str:
    """Poll the server's log (its stderr) until one of `lines` is in it `count` times; that line."""
    deadline = time.monotonic() + limit
    while True:
        log = wb.logs(target)
        found = [line for line in lines if log.count(line) >= count]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"none of {lines} in the log of {target}:\n{log}"
        time.sleep(0.05)


FS_TOLD = "Updated allowed directories from MCP roots"  # server-filesystem took the roots it was given
FS_KEPT = "No valid root directories provided by client"  # it was given none: it keeps its arguments


def test_default_roots_leave_a_servers_configured_directory_alone(make_workbench, tmp_path) -> None:
    """server-filesystem serves the client's roots instead of its arguments whenever it is given any:
    with no roots set, it is given none and serves the directory on its command line."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("from the configured directory")
    wb = make_workbench({"toolboxes": {"t": toolbox({"fs": npm_server("filesystem", str(tmp_path / "project"))})}})
    wb.open("t")
    heard = _wait_for_line(wb, "t/fs", FS_TOLD, FS_KEPT)  # it asks for roots once initialized
    read = wb.call("t/fs/read_text_file", {"path": str(tmp_path / "project" / "notes.txt")})
    assert (read.is_error, read.text) == (False, "from the configured directory")
    assert heard == FS_KEPT
    assert [r.answer for r in wb.history if r.kind == "roots"] == [[]]


@pytest.mark.parametrize("how", ["wb.roots", "config", "set_roots"])
def test_roots_once_set_replace_a_servers_configured_directory(make_workbench, tmp_path, how: str) -> None:
    """Roots set on the workbench, in the server's config or with `set_roots` are what it serves."""
    for name in ("project", "elsewhere"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "notes.txt").write_text(f"from {name}")
    elsewhere = str(tmp_path / "elsewhere")
    fs = npm_server("filesystem", str(tmp_path / "project"), **({"roots": [elsewhere]} if how == "config" else {}))
    wb = make_workbench(
        {"toolboxes": {"t": toolbox({"fs": fs})}}, **({"roots": [elsewhere]} if how == "wb.roots" else {})
    )
    wb.open("t")
    if how == "set_roots":
        assert _wait_for_line(wb, "t/fs", FS_TOLD, FS_KEPT) == FS_KEPT
        wb.set_roots("t/fs", [elsewhere])  # roots/list_changed: it asks again
    assert _wait_for_line(wb, "t/fs", FS_TOLD) == FS_TOLD
    assert wb.call("t/fs/read_text_file", {"path": str(tmp_path / "elsewhere" / "notes.txt")}).text == "from elsewhere"
    denied = wb.call("t/fs/read_text_file", {"path": str(tmp_path / "project" / "notes.txt")})
    assert denied.is_error and "Access denied" in denied.text


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_server_log_messages_reach_the_log_and_the_python_logger(both, server: str, protocol: str, caplog) -> None:
    wb = both()
    with caplog.at_level(logging.DEBUG, logger=f"workbench_magic.server.t.{server}"):
        seen: list[str] = []
        wb.call(f"t/{server}/log_at", {"message": "hi there"}, server_log=seen.append)
    log = wb.logs(f"t/{server}")
    assert "notifications/message [info] clientserver: hi there" in log
    assert "notifications/message [error] clientserver: hi there" in log
    assert "[debug]" not in log  # the default level is info
    records = [
        (r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("workbench_magic.server")
    ]
    assert (f"workbench_magic.server.t.{server}", "WARNING", "hi there") in records
    assert seen == [f"t/{server} warning: hi there", f"t/{server} error: hi there"]
    assert wb.call(f"t/{server}/last_log_level").data == {"result": "info"}


def test_server_log_level_is_asked_of_servers(both) -> None:
    wb = both(server_log_level="error")
    for server in ("cs", "csl"):
        wb.call(f"t/{server}/log_at", {"message": "level check"})
        log = wb.logs(f"t/{server}")
        assert "[error] clientserver: level check" in log and "[warning] clientserver: level check" not in log
    wb.server_log_level = "debug"  # at once: logging/setLevel (handshake era), each next request's _meta (2026-07-28)
    assert wb.call("t/csl/last_log_level").data == {"result": "debug"}
    assert wb.call("t/cs/last_log_level").data == {"result": "debug"}


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_completions_templates_and_reading_a_template(both, server: str, protocol: str) -> None:
    wb = both()
    target = f"t/{server}"
    assert wb.complete(target, "prompt:greet", "language", "es") == ["esperanto", "estonian"]
    assert wb.complete(target, "city://{country}/{city}", "country", "f") == ["france", "finland", "fiji"]
    assert wb.complete(target, "city://{country}/{city}", "city", "", {"country": "finland"}) == ["helsinki", "espoo"]
    templates = {r.uri for r in wb.resources(target) if r.template}
    assert templates == {"city://{country}/{city}", "note://{id}", "pages://{n}"}  # one per page on the server
    assert wb.read_resource(target, "city://{country}/{city}", country="france", city="paris").text == "paris, france"


def test_completions_without_the_capability_are_empty(make_workbench) -> None:
    wb = make_workbench({"toolboxes": {"m": toolbox({"memory": npm_server("memory")})}})
    wb.open("m")
    assert wb.complete("m/memory", "prompt:anything", "x", "y") == []


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_watching_a_resource(both, server: str, protocol: str) -> None:
    wb = both()
    values: list[str] = []
    got = threading.Semaphore(0)

    def on_update(value: Any) -> None:
        values.append(value.text)
        got.release()

    watch = wb.watch(f"t/{server}", "counter://value", callback=on_update)
    assert watch.value is not None and watch.value.text == "0" and watch.updates == 0
    wb.call(f"t/{server}/bump", {"by": 2})
    assert got.acquire(timeout=15), "no update arrived"
    assert watch.updates == 1 and watch.value.text == "2" and values == ["2"]
    watch.close()
    wb.call(f"t/{server}/bump")
    assert not got.acquire(timeout=1.0)  # closed: nothing more (a bounded wait for an absence)
    assert watch.updates == 1


def test_a_task_only_tool_runs_as_a_task_and_a_server_may_answer_at_once(both) -> None:
    """`needs_task` requires a task (handshake-era listings say so); the SDK's server answers a
    task-augmented call with the result itself, which is the call's result (tests/engine/
    test_tasks.py runs real tasks)."""
    wb = both()
    calls = len(wb.history)
    result = wb.call("t/csl/needs_task")
    assert not result.is_error and result.text == "ran"
    assert len(wb.history) == calls + 1


def test_acall_asks_with_a_widget_form_on_the_callers_loop(both, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a kernel `acall` shows an Accept/Decline/Cancel form; its click answers the server."""
    import asyncio

    from workbench_magic.api.presenting import Presenters
    from workbench_magic.notebook.widgets.asking import WidgetAsker

    wb = both()
    asker = WidgetAsker()
    shown: list[Any] = []
    wb.presenters = Presenters(asker=lambda: asker)  # what a kernel's is
    monkeypatch.setattr("IPython.display.display", lambda obj, **_: shown.append(obj))

    async def main() -> tuple[Any, Any]:
        call = asyncio.ensure_future(wb.acall("t/cs/ask_person", {"message": "Widget?"}))
        while not asker.panels:  # the form appears on this loop while the call waits
            await asyncio.sleep(0.01)
        panel = asker.panels[0]
        assert panel.form is not None
        panel.form.field("name").input.value = "Lin"
        panel.accept.click()  # what the front end's click does
        first = await call
        declined = asyncio.ensure_future(wb.acall("t/csl/ask_person"))
        while len(asker.panels) < 2:
            await asyncio.sleep(0.01)
        asker.panels[1].decline.click()
        return first, await declined

    first, declined = asyncio.run(main())
    assert first.data == {"action": "accept", "content": {"name": "Lin", "color": "green"}}
    assert declined.data == {"action": "decline", "content": None}
    assert [type(w).__name__ for w in shown] == ["VBox", "VBox"]
    assert "answered: accept" in asker.panels[0].result.value


def test_terminal_asker_checks_types_choices_and_defaults() -> None:
    from workbench_magic.api.asking import TerminalAsker

    schema = {
        "properties": {
            "name": {"type": "string", "minLength": 2},
            "count": {"type": "integer", "minimum": 1, "maximum": 3},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
            "ok": {"type": "boolean"},
        },
        "required": ["name", "count"],
    }
    typed = iter(["A", "Al", "9", "two", "2", "3", "", "n"])
    said: list[str] = []
    asker = TerminalAsker(read=lambda prompt: next(typed), write=said.append)
    answer = asker.form("t/s", "Set it up", schema)
    assert answer == {"action": "accept", "content": {"name": "Al", "count": 2, "mode": "slow", "ok": False}}
    assert said[0] == "t/s asks: Set it up  (empty answer to a required field declines)"
    assert [s.strip() for s in said[1:4]] == [
        "at least 2 characters; try again (empty to decline)",
        "at most 3; try again (empty to decline)",
        "expected a whole number; try again (empty to decline)",
    ]
    typed = iter([""])
    assert TerminalAsker(read=lambda prompt: next(typed), write=said.append).form("t/s", "m", schema) == {
        "action": "decline"
    }
    typed = iter(["", "decline"])
    url_asker = TerminalAsker(read=lambda prompt: next(typed), write=said.append)
    assert url_asker.url("t/s", "Log in", "https://example.com") == {"action": "accept"}
    assert url_asker.url("t/s", "Log in", "https://example.com") == {"action": "decline"}


def test_the_explorer_asks_in_its_own_panel(both) -> None:
    from workbench_magic.notebook.widgets import Explorer

    wb = both()
    explorer = Explorer(wb, "t")
    try:
        explorer.select("t/cs/ask_person")
        assert explorer.call() is not None
        assert explorer.wait_until(lambda: bool(explorer.requests_box.children), 30), "no question shown"
        panel = explorer.questions[0]
        panel.form.field("name").input.value = "Explorer"
        panel.accept.click()
        result = explorer.wait(30)
        assert result is not None and result.data["content"]["name"] == "Explorer"
        assert explorer.requests_box.children == ()  # answered: the panel is gone
    finally:
        explorer.close()


def test_server_everything_client_features(make_workbench) -> None:
    """The reference server's client-feature tools, prompt and templates (2025-11-25 over stdio)."""
    import time

    wb = make_workbench(
        {"toolboxes": {"e": toolbox({"ev": npm_server("everything")})}},
        sampling_handler=lambda messages, params: "a sampled reply",
        elicitation_handler={"name": "Ada"},
        server_log_level="debug",
    )
    wb.open("e")
    assert "a sampled reply" in wb.call("e/ev/trigger-sampling-request", {"prompt": "hi"}).text
    elicited = wb.call("e/ev/trigger-elicitation-request").text
    assert "accept" in elicited and "Ada" in elicited
    assert "no roots are currently configured" in wb.call("e/ev/get-roots-list").text  # none until set
    # completions: the completable prompt (the second argument depends on the first) and a template
    assert wb.complete("e/ev", "prompt:completable-prompt", "department", "E") == ["Engineering"]
    assert wb.complete("e/ev", "prompt:completable-prompt", "name", "", {"department": "Sales"}) == [
        "David",
        "Eve",
        "Frank",
    ]
    template = next(r.uri for r in wb.resources("e/ev") if r.template and "/text/" in r.uri)
    assert wb.complete("e/ev", template, "resourceId", "3") == ["3"]
    assert wb.read_resource("e/ev", template, resourceId=3).text
    # simulated logging: one message at once (every level is asked for), then one every 5 s
    assert "Started simulated" in wb.call("e/ev/toggle-simulated-logging").text
    deadline = time.monotonic() + 20
    while "notifications/message [" not in wb.logs("e/ev") and time.monotonic() < deadline:
        time.sleep(0.1)  # the server sends on its own timer: no reply of ours orders it
    wb.call("e/ev/toggle-simulated-logging")
    assert "-level message" in wb.logs("e/ev") or "level-message" in wb.logs("e/ev")
    # subscriber updates every 5 s for subscribed resources
    static = next(r.uri for r in wb.resources("e/ev") if not r.template)
    got = threading.Semaphore(0)
    with wb.watch("e/ev", static, callback=lambda value: got.release()) as watch:
        wb.call("e/ev/toggle-subscriber-updates")
        try:
            assert got.acquire(timeout=20), "no resource update within 20 s"
            assert watch.updates >= 1 and watch.value is not None
        finally:
            wb.call("e/ev/toggle-subscriber-updates")


@pytest.mark.parametrize(("server", "protocol"), ERAS)
def test_sampling_answered_by_hand_in_the_explorer(both, server: str, protocol: str) -> None:
    """`sampling_handler = "ask"`: the person writes the model's reply in the explorer's panel."""
    from workbench_magic.notebook.widgets import Explorer

    wb = both(sampling_handler="ask")
    explorer = Explorer(wb, "t")
    try:
        explorer.select(f"t/{server}/sample")
        assert explorer.form is not None
        explorer.form.set_value({"prompt": "What is 2 + 2?", "max_tokens": 5})
        explorer.call()
        assert explorer.wait_until(lambda: bool(explorer.questions), 30), "no sampling panel shown"
        panel = explorer.questions[0]
        assert "What is 2 + 2?" in panel.conversation.value
        panel.reply.value = "4"
        panel.accept.click()
        result = explorer.wait(30)
        assert result is not None and result.data == {
            "model": "person",
            "role": "assistant",
            "text": "4",
            "stop_reason": "endTurn",
        }
        record = next(r for r in reversed(wb.history) if r.kind == "sampling")
        assert record.answer == "4"
    finally:
        explorer.close()


def test_sampling_by_hand_where_nobody_can_answer_fails_the_request(both) -> None:
    wb = both(sampling_handler="ask")
    result_or_error: Any
    try:
        result_or_error = wb.call("t/cs/sample", {"prompt": "anyone?"})
    except ToolError as exc:
        result_or_error = exc
    assert "declined" in str(getattr(result_or_error, "text", result_or_error))


def test_terminal_asker_takes_a_reply_for_a_model() -> None:
    from workbench_magic.api.asking import TerminalAsker

    said: list[str] = []
    typed = iter(["  hello back  ", ""])
    asker = TerminalAsker(read=lambda prompt: next(typed), write=said.append)
    messages = [{"role": "user", "text": "hello"}]
    assert asker.sample("t/s", messages, "Be brief.") == "hello back"
    assert said[:3] == [
        "t/s asks for a model's reply (you answer; empty declines):",
        "  [system] Be brief.",
        "  [user] hello",
    ]
    assert asker.sample("t/s", messages, None) is None
