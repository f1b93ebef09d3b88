"""The explorer at the Python level, against the demo and test servers (real stdio servers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import python_config, python_server, stdio_server, toolbox, wait_until
from IPython.core.interactiveshell import InteractiveShell

from workbench_magic import Workbench
from workbench_magic.notebook.widgets import ExploredToolbox, Explorer


def pane_text(explorer: Explorer) -> str:
    """Everything the result pane shows, as text and HTML."""
    parts = []
    for output in explorer.result_pane.outputs:
        data = output.get("data", {})
        parts.append(str(data.get("text/plain", "")))
        parts.append(str(data.get("text/html", "")))
        parts.append(str(data.get("text/markdown", "")))
    return "\n".join(parts)


@pytest.fixture
def wb(make_workbench) -> Workbench:
    wb = make_workbench(
        {
            "toolboxes": {
                "t": toolbox(
                    {"s": stdio_server(), "broken": {"command": "sh", "args": ["-c", "echo cannot-start >&2; exit 2"]}}
                ),
                "demo": toolbox({"datasets": python_config("-m", "workbench_magic.demo.datasets")}),
            }
        }
    )
    wb.open("t")
    return wb


def test_hierarchy_statuses_and_badges(wb: Workbench) -> None:
    wb.open("demo")
    explorer = Explorer(wb, "t")
    assert set(explorer.toolbox_select.options) == {"t", "demo"}
    labels = dict((value, label) for label, value in explorer.server_select.options)
    assert labels["s"].startswith("● s — connected · ") and "2026-07-28" in labels["s"]
    assert labels["broken"].startswith("✖ broken — failed")
    explorer.server_select.value = "broken"
    assert "cannot-start" in explorer.server_info.value
    assert explorer.tool_select.options == ()
    explorer.toolbox_select.value = "demo"
    tool_labels = [label for label, _ in explorer.tool_select.options]
    assert "query  [read-only, idempotent]" in tool_labels


def test_select_fill_call_and_result_pane(wb: Workbench) -> None:
    wb.open("demo")
    explorer = Explorer(wb)
    explorer.select("demo/datasets/query")
    assert explorer.form is not None
    explorer.form.field("dataset").input.value = "penguins"
    explorer.form.field("limit").input.value = 2
    explorer.call_button.click()
    result = explorer.wait(30)
    assert result is not None and not result.is_error
    assert explorer.result is result
    shown = pane_text(explorer)
    assert "demo/datasets/query [ok" in shown
    assert "<table class='wb-table'>" in shown and "Adelie" in shown  # records as a table
    assert "<details open><summary>" in shown  # JSON tree
    assert "✓ structured content matches the output schema" in shown
    assert explorer.progress.bar_style == "success"
    assert "demo/datasets/query" in explorer.history_pane.value
    # copy as cell gives a cell that reproduces the call
    cell = explorer.copy_as_cell()
    assert cell == "%%use_tool demo/datasets/query\ndataset: penguins\ndescending: false\nlimit: 2"
    assert explorer.cell_text.value == cell


def test_copied_cell_reproduces_the_call(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    explorer = Explorer(wb, "t")
    explorer.select("t/s/nested")
    form = explorer.form
    assert form is not None
    form.set_value({"config": {"name": "n", "inner": {"label": "x", "weight": 2.5}, "color": "blue", "values": [1, 2]}})
    explorer.call()
    first = explorer.wait(30)
    assert first is not None and first.data["inner"]["weight"] == 2.5  # an object stays an object
    cell = explorer.copy_as_cell()
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        again = shell.run_cell(cell)
        assert again.error_in_exec is None
        assert again.result.data == first.data
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")
    wb.open("t")  # unload closed everything; reopen for the fixture's own checks


def test_progress_bar_follows_notifications(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    explorer.select("t/s/slow")
    assert explorer.form is not None
    explorer.form.set_value({"steps": 4, "delay": 0.01})
    seen: list[float] = []
    explorer.progress.observe(lambda change: seen.append(change["new"]), names="value")
    explorer.call()
    explorer.wait(30)
    assert seen[:4] == [0.25, 0.5, 0.75, 1.0]
    assert explorer.progress_label.value.startswith("done in")


def test_cancel_button_cancels_on_the_server(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    explorer.select("t/s/slow")
    assert explorer.form is not None
    explorer.form.set_value({"steps": 500, "delay": 0.05})
    future = explorer.call()
    assert future is not None
    assert explorer.wait_until(lambda: explorer.progress.value > 0, 30), "no progress before cancelling"
    assert explorer.cancel_button.disabled is False
    explorer.cancel_button.click()
    explorer.wait(10)
    assert future.cancelled()
    assert "cancelled" in pane_text(explorer)
    assert explorer.call_button.disabled is False
    assert wb.history[-1].error == "cancelled"
    # the server saw the cancellation and the connection still works
    assert wb.call("t/s/echo", {"text": "after"}).text == "after"
    assert "cancelled" in wb.logs("t/s")


def test_errors_show_in_red_in_the_pane(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    explorer.select("t/s/fail")
    assert explorer.form is not None
    explorer.form.set_value({"message": "red alert"})
    explorer.call()
    explorer.wait(30)
    shown = pane_text(explorer)
    assert "class='wb-error'" in shown and "red alert" in shown and "#b00020" in shown
    # a form mistake is reported in the pane, nothing is sent
    explorer.select("t/s/add")
    explorer.form.mode.value = "JSON"
    explorer.form.json_text.value = '{"a": 1, "b": '
    calls = len(wb.history)
    assert explorer.call() is None
    assert "arguments: invalid JSON" in pane_text(explorer)
    assert len(wb.history) == calls


def test_images_markdown_and_text(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    explorer.select("t/s/image")
    explorer.call()
    explorer.wait(30)
    assert any("image/png" in o.get("data", {}) for o in explorer.result_pane.outputs)
    explorer.select("t/s/echo")
    assert explorer.form is not None
    explorer.form.set_value({"text": "# Title\n\n* point"})
    explorer.call()
    explorer.wait(30)
    assert any("text/markdown" in o.get("data", {}) for o in explorer.result_pane.outputs)


def test_tool_list_changes_refresh_the_explorer(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    explorer.server_select.value = "s"
    wb.call("t/s/add_tool", {"name": "brand_new"})
    assert explorer.wait_until(lambda: "brand_new" in [value for _, value in explorer.tool_select.options], 15)


def test_static_fallbacks_are_never_a_bare_vbox(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    bundle: dict[str, Any] = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert not bundle["text/plain"].startswith("VBox(")
    assert "\n    echo\n" in bundle["text/plain"]
    assert (
        "Failed to connect to server 'broken' in toolbox 't': Connection closed (stderr: cannot-start)"
        in (bundle["text/plain"])
    )
    assert "<table>" in bundle["text/html"] and "t/s/echo" in bundle["text/html"]
    opened = ExploredToolbox(wb, "t")
    box_bundle = opened._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in box_bundle
    assert box_bundle["text/plain"].startswith("Toolbox 't': 1/2 servers connected")
    assert opened.failed.keys() == {"broken"}


def test_output_from_background_threads_stays_in_the_pane(wb: Workbench, capsys) -> None:
    explorer = Explorer(wb, "t")
    explorer.select("t/s/echo")
    assert explorer.form is not None
    explorer.form.set_value({"text": "quiet"})
    capsys.readouterr()
    explorer.call()
    explorer.wait(30)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert "quiet" in pane_text(explorer)


def live_widgets() -> int:
    import gc

    from ipywidgets.widgets import widget as widget_module

    gc.collect()
    return len(widget_module._instances)


def test_displays_of_one_open_value_reuse_one_explorer(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    try:
        opened = shell.run_line_magic("workbench", "open t")
        assert isinstance(opened, ExploredToolbox)
        opened._repr_mimebundle_()
        widgets_after_one, listeners_after_one = live_widgets(), wb.subscriber_count
        for _ in range(20):
            opened._repr_mimebundle_()
        assert live_widgets() == widgets_after_one
        assert wb.subscriber_count == listeners_after_one
        # running the cell again gives the same explorer too
        for _ in range(5):
            shell.run_line_magic("workbench", "open t")._repr_mimebundle_()
        assert live_widgets() == widgets_after_one
        assert wb.subscriber_count == listeners_after_one
        explorer = opened.explorer
        assert explorer is ExploredToolbox(wb, "t").explorer
        # closing the toolbox closes its explorer: its widgets and its subscription go
        wb.close("t")
        assert explorer.wait_until(lambda: explorer.closed, 10)
        assert wb.subscriber_count == listeners_after_one - 1
        assert live_widgets() < widgets_after_one - 50
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")
    wb.open("t")


def test_selecting_tools_reuses_their_forms_and_closes_evicted_ones(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        explorer.select("t/s/echo")
        echo_form = explorer.form
        explorer.select("t/s/add")
        baseline = live_widgets()
        for _ in range(10):
            explorer.select("t/s/echo")
            explorer.select("t/s/add")
        assert live_widgets() == baseline
        explorer.select("t/s/echo")
        assert explorer.form is echo_form
    finally:
        explorer.close()


def test_a_tool_list_change_keeps_the_form_being_filled(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        explorer.select("t/s/nested")
        form = explorer.form
        assert form is not None
        form.field("config.name").input.value = "half-filled"
        wb.call("t/s/add_tool", {"name": "appeared"})
        assert explorer.wait_until(lambda: "appeared" in [v for _, v in explorer.tool_select.options], 15)
        assert explorer.tool_select.value == "nested"
        assert explorer.form is form
        assert form.field("config.name").input.value == "half-filled"
    finally:
        explorer.close()


def test_a_closed_explorer_unsubscribes(wb: Workbench) -> None:
    import gc

    before = wb.subscriber_count
    explorer = Explorer(wb, "t")
    assert wb.subscriber_count == before + 1
    explorer.close()
    del explorer
    gc.collect()
    assert wb.subscriber_count == before


def test_tabs_and_markdown_descriptions(wb: Workbench) -> None:
    explorer = Explorer(wb, "t")
    try:
        titles = ("Tools", "Resources", "Skills", "Prompts", "Logs", "History", "Tasks", "Protocol", "Models")
        assert explorer.tabs.titles == titles
        explorer.select("t/s/echo")
        shown = [o["data"] for o in explorer.tool_doc.outputs]
        assert shown and "text/markdown" in shown[0]  # rendered by the front end, `code` and all
        assert shown[0]["text/markdown"] == wb.tool("t/s/echo").description
        # the server's label is whole: the selector spans the explorer's width
        assert explorer.server_select.layout.flex == "1 1 auto"
        label = dict((v, lbl) for lbl, v in explorer.server_select.options)["s"]
        assert label.endswith("· 2026-07-28") and " tools · " in label
        # a pane reads its server when its tab is shown
        explorer.tabs.selected_index = titles.index("Resources")
        assert explorer.resources.target == "t/s"
        explorer.tabs.selected_index = titles.index("Logs")
        assert "connecting (stdio)" in explorer.logs.text
    finally:
        explorer.close()


def test_an_idle_server_shows_its_cached_tools_and_starts_on_a_call(
    make_workbench: Callable[..., Workbench], catalog_cache: Path
) -> None:
    config = {"toolboxes": {"lz": toolbox({"s": stdio_server(start="lazy")})}}
    first = make_workbench(config)
    first.open("lz")  # no catalog yet: it starts, and its catalog is cached
    assert wait_until(lambda: any((catalog_cache / "catalogs").glob("*.json")), 10)
    first.close_all()
    wb = make_workbench(config)
    wb.open("lz")
    explorer = Explorer(wb, "lz")
    try:
        label = dict((v, lbl) for lbl, v in explorer.server_select.options)["s"]
        assert label.startswith("◐ s — idle · ") and label.endswith(" · not started")
        assert "echo" in [value for _, value in explorer.tool_select.options]  # from the cache
        explorer.select("lz/s/echo")
        assert explorer.form is not None
        explorer.form.field("text").input.value = "woke"
        explorer.call()
        result = explorer.wait(30)
        assert result is not None and result.data == {"result": "woke"}
        assert wb.status()["lz"]["s"].status == "connected"
    finally:
        explorer.close()


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_the_server_status_shows_once(wb: Workbench) -> None:
    """The server's choice names its state, tool count and protocol; the line under it adds what the
    label does not say (transport, who it is, extensions), never the same again."""
    explorer = Explorer(wb, "t")
    try:
        explorer.server_select.value = "s"
        label = dict((value, text) for text, value in explorer.server_select.options)["s"]
        assert "connected" in label and "tools" in label and "2026-07-28" in label
        line = explorer.server_info.value
        assert "stdio" in line and "testserver" in line
        assert "connected" not in line and "tools" not in line and "2026-07-28" not in line, line
    finally:
        explorer.close()


def test_a_big_result_shows_in_a_pane_of_bounded_height_that_scrolls(wb: Workbench) -> None:
    """A 60-row query: the pane has a height limit and scrolls both ways (a wide table too)."""
    wb.open("demo")
    explorer = Explorer(wb)
    try:
        explorer.select("demo/datasets/query")
        assert explorer.form is not None
        explorer.form.set_value({"dataset": "penguins", "limit": 60})
        explorer.call()
        result = explorer.wait(30)
        assert result is not None and len(result.data["rows"]) == 60
        layout = explorer.result_pane.layout
        assert layout.max_height and layout.max_height.endswith(("px", "em"))
        assert layout.overflow == "auto"  # vertical and horizontal scroll
        # and the pane is what scrolls: JupyterLab's output boxes in it would scroll a wide table
        # on their own, their scrollbar under the table's last row
        rules = explorer.style.value
        assert rules.startswith("<style>") and rules.rstrip().endswith("</style>")
        inner = ".wb-result .jp-OutputArea, .wb-result .jp-OutputArea-child, .wb-result .jp-OutputArea-output"
        assert f"{inner} {{ overflow: visible; }}" in rules
    finally:
        explorer.close()


def test_an_app_tool_shows_its_app_in_the_result_pane(wb: Workbench) -> None:
    """The demo's chart has an MCP App: the explorer shows the app's frame, as a cell does, not a
    JSON tree; the next call tears the app down, and so does closing the explorer."""
    wb.open("demo")
    explorer = Explorer(wb)
    try:
        explorer.select("demo/datasets/chart")
        assert explorer.form is not None
        explorer.form.set_value({"dataset": "penguins"})
        explorer.call()
        result = explorer.wait(30)
        assert result is not None and result.app is not None
        frame = explorer.app_frame
        assert frame is not None and frame.view is result.app
        assert '<svg id="chart"' in frame.page and frame.page.startswith("<!DOCTYPE html><meta http-equiv=")
        views = [o["data"][WIDGET_VIEW] for o in explorer.result_pane.outputs if WIDGET_VIEW in o.get("data", {})]
        assert len(views) == 1
        shown = pane_text(explorer)
        assert "demo/datasets/chart [ok" in shown and "(MCP App ui://datasets/chart.html)" in shown
        assert "wb-json" not in shown and "<details" not in shown  # the app, not the tree
        assert "✓ structured content matches the output schema" in shown
        # another call: the app's view is torn down, and the pane shows the new result
        explorer.select("demo/datasets/list_datasets")
        explorer.call()
        explorer.wait(30)
        assert result.app.torn_down and explorer.app_frame is None
        assert not any(WIDGET_VIEW in o.get("data", {}) for o in explorer.result_pane.outputs)
        # and once more, then the explorer closes: the app goes with it
        explorer.select("demo/datasets/chart")
        explorer.call()
        again = explorer.wait(30)
        assert again is not None and again.app is not None and explorer.app_frame is not None
    finally:
        explorer.close()
    assert again.app.torn_down and explorer.app_frame is None


def test_an_app_that_cannot_show_says_why_and_shows_the_data(
    make_workbench: Callable[..., Workbench],
) -> None:
    """A tool whose UI page is not an MCP App page: one red line, then the result as data."""
    wb = make_workbench({"toolboxes": {"a": toolbox({"apps": python_server("apps_server.py")})}})
    wb.open("a")
    explorer = Explorer(wb, "a")
    try:
        explorer.select("a/apps/plain_page")
        explorer.call()
        result = explorer.wait(30)
        assert result is not None and result.app is not None and explorer.app_frame is None
        shown = pane_text(explorer)
        assert "Cannot show the app of tool 'plain_page' in server 'apps' (toolbox 'a')" in shown
        assert "#b00020" in shown and "a/apps/plain_page [ok" in shown
    finally:
        explorer.close()
