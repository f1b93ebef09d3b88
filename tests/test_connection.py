"""Connections: both protocol eras, tool-list change notifications, concurrent start-up."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import children, stdio_server, toolbox

from workbench_magic import ToolError, ToolNotFoundError
from workbench_magic.core import ToolsChanged


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
    wb = make_workbench({"toolboxes": {"t": toolbox({"silent": silent, "ok": stdio_server()})}}, connect_timeout=3)
    box = wb.open("t")
    assert box.connected == ["ok"]
    assert "no answer to the handshake within 3 s" in box.failed["silent"]
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
