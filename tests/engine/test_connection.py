"""Connections: both protocol eras, tool-list change notifications, concurrent start-up."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest
from conftest import children, stdio_server, toolbox

from workbench_magic import ConnectError, PromptsChanged, ResourcesChanged, ToolError, ToolNotFoundError
from workbench_magic.vocabulary.events import Event, ToolsChanged


@pytest.mark.parametrize(("flags", "protocol"), [((), "2026-07-28"), (("--legacy",), "2025-11-25")])
def test_tool_list_changes_refresh_the_server_counted_once(make_workbench, flags, protocol) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(*flags)})}})
    box = wb.open("t")
    assert box.servers["s"].protocol == protocol
    changed = threading.Semaphore(0)
    wb.subscribe(lambda event: changed.release() if isinstance(event, ToolsChanged) else None)

    with pytest.raises(ToolNotFoundError):
        wb.call("t/s/fresh")
    wb.call("t/s/add_tool", {"name": "fresh"})
    assert changed.acquire(timeout=15), "no tool-list refresh after the server's notification"
    assert "fresh" in {t.name for t in wb.tools("t/s")}
    assert wb.call("t/s/fresh").text == "i am fresh"

    wb.call("t/s/remove_tool", {"name": "fresh"})
    assert changed.acquire(timeout=15)
    assert "fresh" not in {t.name for t in wb.tools("t/s")}
    # two changes, each counted once (2026-07-28 delivers on listen and the message handler)
    assert box.servers["s"].tool_list_changes == 2


@pytest.mark.parametrize(("flags", "protocol"), [((), "2026-07-28"), (("--legacy",), "2025-11-25")])
def test_resource_and_prompt_list_changes_reach_subscribers(make_workbench, flags, protocol) -> None:
    # handshake era: notifications/{resources,prompts}/list_changed; 2026-07-28: listen events
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(*flags)})}})
    assert wb.open("t").servers["s"].protocol == protocol
    heard = {ResourcesChanged("t", "s"): threading.Event(), PromptsChanged("t", "s"): threading.Event()}
    order: list[Event] = []

    def on_event(event: Event) -> None:
        if event in heard:
            order.append(event)
            heard[event].set()

    wb.subscribe(on_event)
    assert "test://fresh" not in {r.uri for r in wb.resources("t/s")}
    wb.call("t/s/add_resource", {"uri": "test://fresh", "text": "new"})
    assert heard[ResourcesChanged("t", "s")].wait(15), "no ResourcesChanged after the server's notification"
    assert "test://fresh" in {r.uri for r in wb.resources("t/s")}
    assert wb.read_resource("t/s", "test://fresh").text == "new"

    assert "fresh" not in {p.name for p in wb.prompts("t/s")}
    wb.call("t/s/add_prompt", {"name": "fresh"})
    assert heard[PromptsChanged("t", "s")].wait(15), "no PromptsChanged after the server's notification"
    assert "fresh" in {p.name for p in wb.prompts("t/s")}
    assert wb.get_prompt("t/s/fresh").text == "i am fresh"
    # each change heard once (on 2026-07-28 the SDK also tees the listen events into the message handler)
    assert order == [ResourcesChanged("t", "s"), PromptsChanged("t", "s")]


def test_servers_of_a_toolbox_start_concurrently(make_workbench, tmp_path: Path) -> None:
    # Each server blocks its start-up until all four have started: a sequential open would
    # time out on the first one; a concurrent open connects them all.
    barrier = tmp_path / "barrier"
    servers = {f"s{i}": stdio_server("--barrier", str(barrier), "4") for i in range(4)}
    wb = make_workbench({"toolboxes": {"t": toolbox(servers)}}, connect_timeout=25)
    box = wb.open("t")
    assert box.failed == {}
    assert len(barrier.read_text().split()) == 4


def test_handshake_that_never_comes_fails_within_the_connect_timeout(make_workbench) -> None:
    before = children()
    silent = {"command": "sh", "args": ["-c", "sleep 60"]}
    wb = make_workbench({"toolboxes": {"t": toolbox({"silent": silent, "ok": stdio_server()})}}, connect_timeout=10)
    box = wb.open("t")
    assert box.connected == ["ok"]
    assert "no answer to the handshake within 10 s" in box.failed["silent"]
    assert len(children() - before) == 1


def test_crashed_server_fails_the_call_then_reconnects(make_workbench) -> None:
    before = children()
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    wb.open("t")
    first = children() - before
    expected = r"^Error executing tool 'exit_now' in server 's' \(toolbox 't'\): connection closed$"
    with pytest.raises(ToolError, match=expected):
        wb.call("t/s/exit_now", {"code": 1})
    assert wb.status()["t"]["s"].status == "disconnected"
    assert wb.call("t/s/echo", {"text": "back"}).text == "back"
    assert wb.status()["t"]["s"].status == "connected"
    assert children() - before != first


#: How long the open/close race runs, and how long one open or close may take before the
#: watchdog calls it stuck (a missing command fails in milliseconds; 15 s is only a hang). The
#: hang this race was written for came within its first seconds (the watchdog failed it at 16 s).
RACE_SECONDS = 20.0
STUCK_AFTER = 15.0


def test_open_and_close_racing_on_threads_never_hang(make_workbench) -> None:
    """Three threads open and close the same toolboxes (servers whose command does not exist)
    while the interpreter switches threads every 10 us. A close during `connecting` cancels the
    owner task, possibly before its first step: every owner outcome must settle what the open
    waits on, so no call may block (the watchdog fails the test when one has not returned)."""
    import random
    import sys
    import time

    from workbench_magic import ConnectError

    missing = {"command": "/nonexistent/workbench-magic-no-such-server"}
    wb = make_workbench({"toolboxes": {name: toolbox({"x": missing, "y": missing}) for name in ("a", "b")}})
    deadline = time.monotonic() + RACE_SECONDS
    started: dict[int, float] = {}  # thread index -> when its current call began
    stuck: list[str] = []
    errors: list[BaseException] = []
    calls = [0, 0, 0]

    def worker(index: int) -> None:
        rng = random.Random(index)
        try:
            while time.monotonic() < deadline and not stuck:
                name = rng.choice(("a", "b"))
                started[index] = time.monotonic()
                if rng.random() < 0.5:
                    with contextlib.suppress(ConnectError):
                        wb.open(name)
                else:
                    wb.close(name)
                started.pop(index, None)
                calls[index] += 1
        except BaseException as exc:
            errors.append(exc)
            started.pop(index, None)

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(3)]
    try:
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            now = time.monotonic()
            late = [i for i, since in list(started.items()) if now - since > STUCK_AFTER]
            if late:
                stuck.append(f"thread {late[0]} has waited on one open/close for over {STUCK_AFTER:g} s")
                break
            threads[0].join(0.5)  # the watchdog's tick, not a race guard
    finally:
        sys.setswitchinterval(previous)
    assert not stuck, stuck[0]
    for thread in threads:
        thread.join(STUCK_AFTER)
    assert not errors, f"{type(errors[0]).__name__}: {errors[0]}"
    assert min(calls) > 10, f"the threads made too few calls to race: {calls}"


def test_an_owner_stuck_past_the_handshake_deadline_fails_the_open_and_says_where(
    make_workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every wait of a connection's task is bounded; one that is not (a defect, here injected: a
    shielded wait the handshake deadline cannot cancel) fails the open instead of hanging it."""
    import anyio

    from workbench_magic.engine import connection

    release = threading.Event()
    discover = connection.discover

    # stuck at the connection's first request (2026-07-28: `server/discover`), which it reaches as
    # soon as the process is spawned: a loaded machine's slow server start cannot miss the
    # deadline before the defect is reached
    async def stuck_discover(client: object) -> None:
        with anyio.CancelScope(shield=True):
            while not release.is_set():
                await anyio.sleep(0.05)
        await discover(client)

    modern = stdio_server(protocol="2026-07-28")
    wb = make_workbench({"toolboxes": {"warm": toolbox({"ok": stdio_server()}), "t": toolbox({"s": modern})}})
    wb.open("warm")  # the SDK import is not part of the deadline
    monkeypatch.setattr(connection, "discover", stuck_discover)
    monkeypatch.setattr(connection, "STUCK_AFTER", 0.5)
    wb.connect_timeout = 3
    outcome: list[BaseException | object] = []

    def open_t() -> None:
        try:
            outcome.append(wb.open("t"))
        except BaseException as exc:
            outcome.append(exc)

    opener = threading.Thread(target=open_t, daemon=True)
    try:
        opener.start()
        opener.join(60)
        assert outcome, "the open hung on a stuck connection task"
        assert isinstance(outcome[0], ConnectError)
        assert str(outcome[0]) == (
            "Failed to open toolbox 't': no server connected (server 's': no answer to the handshake within 3 s)"
        )
        log = wb.logs("t/s")
        assert "the connection's task was stuck connecting, abandoned: " in log
        assert "stuck_discover (test_connection.py:" in log
    finally:
        release.set()
    assert wb.call("warm/ok/echo", {"text": "still"}).text == "still"  # the rest goes on


def test_an_owner_stuck_at_close_is_abandoned_and_the_close_returns(
    make_workbench, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import anyio

    from workbench_magic.engine import connection

    release = threading.Event()

    async def stuck_housekeeping(self: connection.Connection) -> None:
        with anyio.CancelScope(shield=True):  # the injected defect: a wait the stop cannot cancel
            while not release.is_set():
                await anyio.sleep(0.05)

    monkeypatch.setattr(connection.Connection, "_keep_log_small", stuck_housekeeping)
    monkeypatch.setattr(connection, "STOP_WAIT", 0.5)
    monkeypatch.setattr(connection, "STUCK_AFTER", 0.5)
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server()}), "u": toolbox({"s": stdio_server()})}})
    wb.open("t")
    wb.open("u")
    closer = threading.Thread(target=wb.close, args=("t",), daemon=True)
    try:
        closer.start()
        closer.join(60)
        assert not closer.is_alive(), "the close hung on a stuck connection task"
        stuck = [r.getMessage() for r in caplog.records if "stuck" in r.getMessage()]
        assert len(stuck) == 1 and "server t/s: the connection's task was stuck stopping, abandoned: " in stuck[0]
        assert "<- _own (connection.py:" in stuck[0]  # where the owner waits (here: its task group)
        assert {t.name: t.open for t in wb.toolboxes()} == {"t": False, "u": True}
    finally:
        release.set()
    assert wb.call("u/s/echo", {"text": "still"}).text == "still"  # the rest goes on
