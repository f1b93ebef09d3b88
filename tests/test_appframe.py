"""The app frame widget (widgets/appframe.py) in a real kernel: what a UI tool's result displays.

The browser test (tests/test_browser_apps.py) runs the frame itself; here: the result's display
data carries the widget, the frame's page starts with its CSP, a page that is not an MCP App page
gives one line, and `render_apps = False` leaves results as they were.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVERS, toolbox, write_config
from test_kernel import Kernel

from workbench_magic.widgets.appframe import _ESM

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    apps = {"command": sys.executable, "args": [str(SERVERS / "apps_server.py")]}
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
