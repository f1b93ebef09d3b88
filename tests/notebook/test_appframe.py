"""The app frame widget (widgets/appframe.py) in a real kernel: what a UI tool's result displays.

The browser test (tests/notebook/test_browser_apps.py) runs the frame itself; here: the result's display
data carries the widget, the frame's page starts with its CSP, a page that is not an MCP App page
gives one line, and `render_apps = False` leaves results as they were.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import python_server, toolbox, write_config
from test_kernel import Kernel, text_of

from workbench_magic.notebook.widgets.appframe import _ESM

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    apps = python_server("apps_server.py")
    config = write_config(tmp_path / "workbench-config.json", {"toolboxes": {"a": toolbox({"apps": apps})}})
    k = Kernel(tmp_path, {**os.environ, "WORKBENCH_CONFIG": str(config)})
    k.execute("from workbench_magic import Workbench\nwb = Workbench.shared()")
    yield k
    k.shutdown()


def shown(messages: list[dict[str, Any]]) -> dict[str, Any]:
    results = [m["content"]["data"] for m in messages if m["msg_type"] == "execute_result"]
    assert len(results) == 1, messages
    data: dict[str, Any] = results[0]
    return data


def frame_state(messages: list[dict[str, Any]]) -> dict[str, Any]:
    opened = [m["content"]["data"]["state"] for m in messages if m["msg_type"] == "comm_open"]
    frames = [state for state in opened if "page" in state]
    assert len(frames) == 1, opened
    return frames[0]


def test_a_ui_tool_result_displays_the_frame(kernel: Kernel) -> None:
    reply, messages = kernel.execute('wb.call("a/apps/show_counter", {"start": 4})')
    assert reply["status"] == "ok", reply
    data = shown(messages)
    assert WIDGET in data
    assert "This tool has an app (ui://counter/app.html)" in data["text/plain"]  # what nbconvert keeps
    state = frame_state(messages)
    assert state["page"].startswith('<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="default-src')
    assert "Counter app" in state["page"] and state["allow"] == ""
    # the front end never gives the page the notebook's origin
    assert 'setAttribute("sandbox", "allow-scripts")' in _ESM and "allow-same-origin" not in _ESM
    assert "event.source !== frame.contentWindow" in _ESM


def test_a_page_that_is_not_an_app_gives_one_line(kernel: Kernel) -> None:
    reply, messages = kernel.execute('wb.call("a/apps/plain_page")')
    assert reply["status"] == "ok", reply
    data = shown(messages)
    assert WIDGET not in data
    line = data["text/plain"].splitlines()[-1]
    assert line.startswith("Cannot show the app of tool 'plain_page' in server 'apps' (toolbox 'a')")
    assert "'text/html', not 'text/html;profile=mcp-app'" in line


def test_render_apps_off_leaves_results_as_they_were(kernel: Kernel) -> None:
    reply, messages = kernel.execute('wb.render_apps = False\nwb.call("a/apps/show_counter")')
    assert reply["status"] == "ok", reply
    data = shown(messages)
    assert WIDGET not in data and "has an app" not in data["text/plain"]


HANDSHAKE = """
def handshake(view):
    view.handle({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {}})
    view.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
    return [m["method"] for m in view.take()]
"""


def sent_to_frames(messages: list[dict[str, Any]]) -> list[str]:
    """The JSON-RPC methods the kernel sent to app frames in these messages."""
    custom = [m["content"]["data"].get("content", {}) for m in messages if m["msg_type"] == "comm_msg"]
    return [c["message"].get("method", "") for c in custom if c.get("type") == "rpc"]


def test_running_the_cell_again_tears_its_view_down_first(kernel: Kernel) -> None:
    reply, _ = kernel.execute(HANDSHAKE)
    assert reply["status"] == "ok", reply
    reply, messages = kernel.execute('r = wb.call("a/apps/show_counter")\nr', cell_id="cell-1")
    assert reply["status"] == "ok", reply
    frame_state(messages)
    reply, messages = kernel.execute("print(handshake(r.app), r.app.frame.cell_id)")
    assert "['ui/notifications/tool-input', 'ui/notifications/tool-result'] cell-1" in text_of(messages)
    # another cell leaves the view alone; the same cell run again tears it down before its code runs
    reply, messages = kernel.execute("print('torn down:', r.app.torn_down)", cell_id="cell-2")
    assert "torn down: False" in text_of(messages) and sent_to_frames(messages) == []
    reply, messages = kernel.execute("print('torn down:', r.app.torn_down)", cell_id="cell-1")
    assert "torn down: True" in text_of(messages)
    assert sent_to_frames(messages) == ["ui/resource-teardown"]


def test_each_display_runs_a_page_of_its_own(kernel: Kernel) -> None:
    reply, messages = kernel.execute(HANDSHAKE + 'r = wb.call("a/apps/show_counter", {"start": 7})\ndisplay(r)')
    assert reply["status"] == "ok", reply
    frame_state(messages)
    reply, messages = kernel.execute("print(handshake(r.app))")
    assert "['ui/notifications/tool-input', 'ui/notifications/tool-result']" in text_of(messages)
    # shown again: a new frame whose page gets the whole handshake, not the first view's state
    reply, messages = kernel.execute("display(r)\nsecond = r.app.shown_again[-1]\nprint(handshake(second))")
    assert reply["status"] == "ok", reply
    assert frame_state(messages)["page"].startswith("<!DOCTYPE html>")
    assert "['ui/notifications/tool-input', 'ui/notifications/tool-result']" in text_of(messages)
