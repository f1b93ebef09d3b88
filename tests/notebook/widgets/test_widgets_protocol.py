"""The explorer's Protocol tab at the Python level: the chosen server's JSON-RPC messages,
recorded (`wb.trace`) while the tab shows, against two of our stdio test servers."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from conftest import stdio_server, toolbox, wait_until, wait_until_async

from workbench_magic import Workbench
from workbench_magic.notebook.widgets import protocol_pane
from workbench_magic.notebook.widgets.explorer import TICKING, Explorer
from workbench_magic.notebook.widgets.protocol_pane import ProtocolPane


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    workbench = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(), "s2": stdio_server()})}})
    workbench.open("t")
    return workbench


def show_protocol(explorer: Explorer) -> ProtocolPane:
    explorer.tabs.selected_index = explorer.tabs.titles.index("Protocol")
    pane = explorer.protocol
    assert isinstance(pane, ProtocolPane)
    return pane


def recordings(wb: Workbench) -> tuple[Any, ...]:
    return tuple(wb._core.wire_tap.recordings)


def labels(pane: ProtocolPane) -> list[str]:
    """The labels of the messages shown, with the request ids left out (`tools/call #`)."""
    return [re.sub(r"#\d+$", "#", message.label) for message in pane.messages]


def shows(pane: ProtocolPane, count: int) -> bool:
    """Refresh the pane (what the explorer's tick does) until it shows `count` messages."""
    return wait_until(lambda: (pane.refresh(), len(pane.messages) == count)[1], 60)


def test_the_tab_records_the_chosen_server_only_while_it_shows(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        assert explorer.tabs.titles[-2:] == ("Protocol", "Models") and "Protocol" in TICKING
        assert recordings(wb) == ()  # nothing records before the tab shows
        assert explorer.server_select.value == "s"
        pane = show_protocol(explorer)
        assert "wb-protocol" in pane.widget._dom_classes and pane.recording
        assert len(recordings(wb)) == 1 and pane.trace is not None and pane.trace.target == "t/s"
        assert "(no messages yet: call a tool of t/s)" in pane.view.value
        assert "0 messages (recording t/s)" in pane.status.value

        wb.call("t/s/echo", {"text": "traced"})
        wb.call("t/s2/echo", {"text": "elsewhere"})  # another server of the toolbox: not recorded
        assert shows(pane, 2)
        assert labels(pane) == ["tools/call #", "result #"]
        assert {message.server for message in pane.messages} == {"t/s"}
        assert [message.direction for message in pane.messages] == ["sent", "received"]
        assert pane.messages[0].message["params"]["arguments"] == {"text": "traced"}
        assert "wb-trace" in pane.view.value and "tools/call #" in pane.view.value
        assert "traced" in pane.view.value and "elsewhere" not in pane.view.value
        assert "2 messages (recording t/s)" in pane.status.value

        # another tab: the trace stops, and a call meanwhile is in no trace
        explorer.tabs.selected_index = 0
        assert recordings(wb) == () and pane.trace is None and not pane.recording
        wb.call("t/s/echo", {"text": "unseen"})
        pane = show_protocol(explorer)  # shown again: a new trace, from now on
        assert len(recordings(wb)) == 1 and pane.recording
        pane.refresh()
        assert pane.messages == [] and "unseen" not in pane.view.value
        wb.call("t/s/echo", {"text": "seen"})
        assert shows(pane, 2)
        assert "seen" in pane.view.value and "unseen" not in pane.view.value
    finally:
        explorer.close()
    assert recordings(wb) == ()


def test_another_server_restarts_the_trace_for_it(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        pane = show_protocol(explorer)
        first = pane.trace
        wb.call("t/s/echo", {"text": "on s"})
        assert shows(pane, 2)
        explorer.server_select.value = "s2"
        assert pane.target == "t/s2" and pane.trace is not first and pane.trace is not None
        assert first is not None and not first.recording
        assert [(r.toolbox, r.server) for r in recordings(wb)] == [("t", "s2")]  # the old one stopped
        assert pane.messages == [] and "(no messages yet: call a tool of t/s2)" in pane.view.value
        wb.call("t/s/echo", {"text": "on s again"})  # the server no longer chosen: not recorded
        wb.call("t/s2/echo", {"text": "on s2"})
        assert shows(pane, 2)
        assert {message.server for message in pane.messages} == {"t/s2"}
        assert "on s2" in pane.view.value and "on s again" not in pane.view.value
        assert "recording t/s2" in pane.status.value
        assert pane.copy_as_cell() == "%workbench trace on t/s2" and pane.cell_text.value == pane.cell
        # Clear: a new trace for the same server, empty
        pane.clear_button.click()
        assert pane.messages == [] and pane.target == "t/s2" and len(recordings(wb)) == 1
        assert "0 messages (recording t/s2)" in pane.status.value
    finally:
        explorer.close()
    assert recordings(wb) == ()  # closing the explorer stops the trace


def test_closing_the_explorer_on_the_tab_stops_the_trace(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    pane = show_protocol(explorer)
    trace = pane.trace
    assert trace is not None and trace.recording and len(recordings(wb)) == 1
    explorer.close()
    assert recordings(wb) == () and not trace.recording and pane.closed
    wb.call("t/s/echo", {"text": "after close"})
    assert trace.messages == []


def test_the_bound_keeps_the_newest_messages(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol_pane, "PROTOCOL_LIMIT", 3)
    explorer = Explorer(wb, "t")
    try:
        pane = show_protocol(explorer)
        for n in range(4):
            wb.call("t/s/echo", {"text": f"call {n}"})
        assert wait_until(lambda: (pane.refresh(), pane.dropped == 5)[1], 10)
        assert len(pane.messages) == 3  # 8 messages: the oldest 5 dropped, the newest last
        assert labels(pane) == ["result #", "tools/call #", "result #"]
        assert pane.messages[-1].message["result"]["structuredContent"] == {"result": "call 3"}
        assert [message.time for message in pane.messages] == sorted(message.time for message in pane.messages)
        assert "3 messages (recording t/s) · 5 older dropped" in pane.status.value
        assert "call 3" in pane.view.value and "call 0" not in pane.view.value
    finally:
        explorer.close()


def test_a_refresh_with_no_new_message_touches_no_widget(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        pane = show_protocol(explorer)
        changes: list[Any] = []
        pane.view.observe(changes.append, names="value")
        pane.status.observe(changes.append, names="value")
        pane.refresh()
        assert changes == []
        wb.call("t/s/echo", {"text": "once"})
        assert shows(pane, 2)
        assert changes  # the new messages were drawn
        changes.clear()
        pane.refresh()
        explorer.tabs.selected_index = explorer.tabs.titles.index("Protocol")  # shown again, same server
        assert changes == []
    finally:
        explorer.close()


def test_in_a_kernel_the_tab_follows_the_messages_every_second(wb: Workbench) -> None:
    """The explorer built on a running event loop (as in a kernel) ticks on it: no refresh() call."""

    async def scenario() -> dict[str, Any]:
        explorer = Explorer(wb, "t")
        try:
            pane = show_protocol(explorer)
            await wb.acall("t/s/echo", {"text": "ticked"})
            shown = await wait_until_async(lambda: "ticked" in pane.view.value, 5)
            # the call's request may be drawn a tick before its result: the count follows
            counted = await wait_until_async(lambda: "2 messages (recording t/s)" in pane.status.value, 5)
            explorer.tabs.selected_index = 0
            stopped = recordings(wb) == ()
            ticking = await wait_until_async(lambda: explorer._log_timer is None, 5)  # the tick ends with the tab
            return {"shown": shown, "counted": counted, "stopped": stopped, "tick ended": ticking}
        finally:
            explorer.close()

    outcome = asyncio.run(scenario())
    assert outcome == {"shown": True, "counted": True, "stopped": True, "tick ended": True}


def test_the_diagram_of_large_messages_stays_small_and_each_is_whole_on_asking(
    wb: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every message whole made the pane's value 7 MB here, sent again at each new message: it stays
    within `PROTOCOL_BUDGET`, and the view's "whole message" button gets the JSON from the kernel."""
    explorer = Explorer(wb, "t")
    try:
        pane = show_protocol(explorer)
        texts = [f"big{n:02d}" + "x" * 39_995 for n in range(60)]
        for text in texts:
            wb.call("t/s/echo", {"text": text})
        assert shows(pane, 120)
        value = pane.view.value
        assert len(value) < protocol_pane.PROTOCOL_BUDGET + 10_000
        assert "big59" in value and texts[-1] not in value and "(+39800 chars)" in value
        assert "class='wb-whole'" in value and ".messages[" not in value  # asked for, not carried
        sent: list[Any] = []
        monkeypatch.setattr(pane.view, "send", sent.append)
        request = pane.messages[-2]
        pane.view._handle_custom_msg({"whole": request.key}, [])  # what the button sends
        assert [reply["whole"] for reply in sent] == [request.key]
        assert json.loads(sent[0]["text"]) == request.message and texts[-1] in sent[0]["text"]
    finally:
        explorer.close()
