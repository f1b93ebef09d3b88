"""The explorer's Resources, Prompts and Logs panes at the Python level, against real servers."""

from __future__ import annotations

import gc
import json
import os
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import SERVERS, python_config, python_server, stdio_server, toolbox
from IPython.core.interactiveshell import InteractiveShell

from workbench_magic import Workbench
from workbench_magic.notebook.cellargs import parse_pairs, substitute
from workbench_magic.notebook.widgets.explorer import Explorer
from workbench_magic.notebook.widgets.log_pane import LogPane
from workbench_magic.notebook.widgets.pane import Pane
from workbench_magic.notebook.widgets.prompt_pane import PromptPane
from workbench_magic.notebook.widgets.resource_pane import ResourcePane, magic_pair
from workbench_magic.vocabulary.errors import WorkbenchError

P = TypeVar("P", bound=Pane)
CLIENTSERVER = str(SERVERS / "clientserver.py")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
BLOB_SERVER = f'''
import base64
from mcp.server import MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp_types import ImageContent

PNG = base64.b64decode("{PNG}")
server = MCPServer("blobs")
server.resource("blob://dot.png", name="dot", mime_type="image/png")(lambda: PNG)
server.resource("blob://data.bin", name="data", mime_type="application/octet-stream")(lambda: b"\\x00\\x01\\x02binary")
server.resource("file:///readme.md", name="readme")(lambda: "# Title\\n\\nsome *markdown*")

@server.prompt()
def picture() -> list:
    """A prompt with an image."""
    image = ImageContent(type="image", data="{PNG}", mime_type="image/png")
    return [UserMessage(content=image), AssistantMessage(content="a dot")]

server.run()
'''


def outputs_text(out: Any) -> str:
    """Everything an Output widget shows, as text, HTML and markdown."""
    parts = []
    for output in out.outputs:
        data = output.get("data", {})
        parts += [str(data.get(kind, "")) for kind in ("text/plain", "text/html", "text/markdown")]
    return "\n".join(parts)


def mimes(out: Any) -> set[str]:
    return {kind for output in out.outputs for kind in output.get("data", {})}


def live_widgets() -> int:
    from ipywidgets.widgets import widget as widget_module

    gc.collect()
    return len(widget_module._instances)


def select(pane: ResourcePane, uri: str) -> None:
    pane.select.value = next(i for i, r in enumerate(pane.resources) if r.uri == uri)


def subscribe(pane: ResourcePane, uri: str = "counter://value") -> None:
    """Select the resource `uri` and click Subscribe."""
    select(pane, uri)
    pane.subscribe_button.value = True


def fill_prompt(pane: PromptPane, prompt: str, **values: str) -> None:
    """Select `prompt` and type `values` into its form."""
    pane.select.value = prompt
    for field, value in values.items():
        pane.fields[field].value = value


@contextmanager
def showing(kind: type[P], wb: Workbench, target: str | None = None) -> Iterator[P]:
    """A new pane of `kind` showing `toolbox/server` (`target`, None: nothing), closed afterwards."""
    pane = kind(wb)
    try:
        if target is not None:
            toolbox_name, server = target.split("/")
            pane.show(toolbox_name, server)
        yield pane
    finally:
        pane.close()


@pytest.fixture
def wb(make_workbench: Callable[..., Workbench]) -> Workbench:
    wb = make_workbench(
        {
            "toolboxes": {
                "c": toolbox({"cs": python_server(CLIENTSERVER)}),
                "legacy": toolbox({"csl": python_server(CLIENTSERVER, "--legacy")}),
                "demo": toolbox({"datasets": python_config("-m", "workbench_magic.demo.datasets")}),
                "broken": toolbox(
                    {
                        "ok": python_server(CLIENTSERVER),
                        "bad": {"command": "sh", "args": ["-c", "echo cannot-start >&2; exit 2"]},
                    }
                ),
            }
        }
    )
    wb.open("c")
    return wb


@pytest.fixture
def blobs(make_workbench: Callable[..., Workbench], tmp_path: Path) -> Workbench:
    """A workbench with a server of binary resources and a prompt with an image."""
    script = tmp_path / "blobserver.py"
    script.write_text(textwrap.dedent(BLOB_SERVER))
    wb = make_workbench({"toolboxes": {"b": toolbox({"s": {"command": sys.executable, "args": [str(script)]}})}})
    wb.open("b")
    return wb


def run_in_shell(wb: Workbench, monkeypatch: pytest.MonkeyPatch, cell: str) -> Any:
    """Run a copied cell in an IPython shell whose shared workbench is `wb`; its result."""
    monkeypatch.setattr(Workbench, "_shared", wb)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench_magic")
    # names a template uses, defined in the notebook: IPython must not fill them into the cell
    names = {"country": "spain", "city": "madrid", "id": "0"}
    shell.user_ns.update(names)
    try:
        outcome = shell.run_cell(cell)
        assert outcome.error_in_exec is None and outcome.error_before_exec is None
        return outcome.result
    finally:
        shell.run_line_magic("unload_ext", "workbench_magic")
        for name in names:  # the shell is the process's: later tests must not see them
            shell.user_ns.pop(name, None)


# ---- nothing selected ---------------------------------------------------------------------------
def test_panes_without_a_server_show_hints(wb: Workbench) -> None:
    with (
        showing(ResourcePane, wb) as resources,
        showing(PromptPane, wb) as prompts,
        showing(LogPane, wb) as logs,
    ):
        assert "wb-resources" in resources.widget._dom_classes
        assert "wb-prompts" in prompts.widget._dom_classes
        assert "wb-logs" in logs.widget._dom_classes
        assert "Select a server" in resources.hint.value and resources.select.options == ()
        assert "Select a server" in prompts.hint.value and prompts.select.options == ()
        assert "Select a server" in logs.hint.value and "select a server" in logs.view.value
        for pane in (resources, prompts, logs):
            with pytest.raises(WorkbenchError):
                pane.copy_as_cell()
            assert pane.cell is None


def test_a_failed_server_is_one_red_line(wb: Workbench) -> None:
    wb.open("broken")
    with showing(ResourcePane, wb, "broken/bad") as pane:
        assert "wb-error" in pane.hint.value and "cannot-start" in pane.hint.value
        assert pane.select.options == ()
        pane.show("broken", "ok")
        assert "2 resources, 3 templates" in pane.hint.value


@pytest.mark.parametrize("value", ["french", "Ada Lovelace", "7", "true", "null", "[1]", "$x", "$$y", 'it\'s "q"'])
def test_copied_values_come_back_as_the_same_strings(value: str) -> None:
    import shlex

    assert substitute(parse_pairs(shlex.split(magic_pair("k", value))), {}) == {"k": value}


# ---- resources ----------------------------------------------------------------------------------
def test_resource_list_has_templates_and_a_plain_resource_reads_its_text(wb: Workbench) -> None:
    with showing(ResourcePane, wb, "c/cs") as pane:
        labels = [label for label, _ in pane.select.options]
        assert "counter — counter://value" in labels
        assert "city — city://{country}/{city}   [template]" in labels
        assert "page — pages://{n}   [template]" in labels
        assert "2 resources, 3 templates" in pane.hint.value
        assert pane.select.layout.width == "100%"
        select(pane, "about://clientserver")
        assert "clientserver: a test server for MCP client features" in outputs_text(pane.result_pane)
        assert "class='wb-text'" in outputs_text(pane.result_pane)
        assert pane.subscribe_button.disabled is False
        assert pane.copy_as_cell() == "%workbench read c/cs about://clientserver"
        assert pane.cell_text.value == pane.cell and pane.cell_text.layout.display is None


def test_a_json_resource_renders_as_a_tree(wb: Workbench) -> None:
    wb.open("demo")
    with showing(ResourcePane, wb, "demo/datasets") as pane:
        select(pane, "dataset://index")
        shown = outputs_text(pane.result_pane)
        assert "<div class='wb-json'><details open><summary>[…] 3 items" in shown and "penguins" in shown


def test_images_markdown_and_downloads(blobs: Workbench) -> None:
    with showing(ResourcePane, blobs, "b/s") as pane:
        select(pane, "blob://dot.png")
        assert "image/png" in mimes(pane.result_pane)
        select(pane, "blob://data.bin")
        assert (
            "<a class='wb-download' download='data.bin' href='data:application/octet-stream;base64,AAECYmluYXJ5'>"
            in outputs_text(pane.result_pane)
        )
        select(pane, "file:///readme.md")
        assert "text/markdown" in mimes(pane.result_pane) and "# Title" in outputs_text(pane.result_pane)


def test_template_form_completes_and_reads(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    with showing(ResourcePane, wb, "c/cs") as pane:
        select(pane, "city://{country}/{city}")
        assert list(pane.fields) == ["country", "city"]
        assert pane.subscribe_button.disabled is True
        assert all("wb-template-var" in box._dom_classes for box in pane.fields.values())
        assert pane.read_button in pane.form_box.children
        country, city = pane.fields["country"], pane.fields["city"]
        assert country.options == ("france", "finland", "fiji")  # offered before typing
        country.value = "fi"
        assert country.options == ("finland", "fiji")
        country.value = "f"
        assert country.options == ("france", "finland", "fiji")
        country.value = "france"
        assert city.options == ("paris", "lyon")  # the country is the context
        pane.read_button.click()
        assert "Fill in city" in outputs_text(pane.result_pane)  # nothing read
        city.value = "paris"
        pane.read_button.click()
        assert pane.result is not None and pane.result.text == "paris, france"
        assert "paris, france" in outputs_text(pane.result_pane)
        cell = pane.copy_as_cell()
        assert cell == "%workbench read c/cs 'city://{{country}}/{{city}}' country=france city=paris"
    again = run_in_shell(wb, monkeypatch, cell)
    assert again.text == "paris, france"


def test_a_refresh_keeps_the_template_values(wb: Workbench) -> None:
    with showing(ResourcePane, wb, "c/cs") as pane:
        select(pane, "note://{id}")
        pane.fields["id"].value = "7"
        pane.refresh()
        assert pane.selected is not None and pane.selected.uri == "note://{id}"
        assert pane.fields["id"].value == "7"
        pane.read()
        assert pane.result is not None and pane.result.text == "note 7"
        assert pane.copy_as_cell() == """%workbench read c/cs 'note://{{id}}' 'id="7"'"""  # stays a string
        pane.show(None, None)  # another server: the cell still repeats the last read
        assert pane.select.options == () and pane.fields == {}
        assert pane.copy_as_cell() == """%workbench read c/cs 'note://{{id}}' 'id="7"'"""


@pytest.mark.parametrize(("toolbox_name", "server"), [("c", "cs"), ("legacy", "csl")])
def test_subscribe_counts_updates(wb: Workbench, toolbox_name: str, server: str) -> None:
    wb.open(toolbox_name)
    target = f"{toolbox_name}/{server}"
    with showing(ResourcePane, wb, target) as pane:
        subscribe(pane)
        assert pane.watch is not None and pane.updates_label.value == "live · 0 updates"
        assert pane.copy_as_cell() == (
            "from workbench_magic import Workbench\n\nwb = Workbench.shared()\n"
            f'w = wb.watch("{target}", "counter://value", callback=print)'
        )
        wb.call(f"{target}/bump", {"by": 5})
        deadline = time.monotonic() + 15
        while pane.updates < 1 and time.monotonic() < deadline:
            pane.changed.wait(0.5)
            pane.sync()
        assert pane.updates == 1 and pane.updates_label.value == "live · 1 update"
        assert pane.result is not None and pane.result.text == "5"
        assert "5" in outputs_text(pane.result_pane)
        watch = pane.watch
        pane.subscribe_button.value = False
        assert pane.watch is None and watch.closed and pane.updates_label.value == ""


def test_the_copied_subscription_cell_runs(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    with showing(ResourcePane, wb, "c/cs") as pane:
        subscribe(pane)
        cell = pane.copy_as_cell()
    monkeypatch.setattr(Workbench, "_shared", wb)
    namespace: dict[str, Any] = {}
    exec(cell, namespace)
    watch = namespace["w"]
    try:
        assert watch.value.text == "0" and not watch.closed
    finally:
        watch.close()


# ---- prompts ------------------------------------------------------------------------------------
def test_prompt_form_completes_and_gets(wb: Workbench, monkeypatch: pytest.MonkeyPatch) -> None:
    with showing(PromptPane, wb, "c/cs") as pane:
        assert pane.select.options[0][0].startswith("greet(language, name) — A greeting prompt")
        pane.select.value = "greet"
        language, name = pane.fields["language"], pane.fields["name"]
        assert language.description == "language *" and name.description == "name *"
        assert all("wb-prompt-arg" in box._dom_classes for box in pane.fields.values())
        language.value = "e"
        assert language.options == ("english", "esperanto", "estonian")
        language.value = "french"
        name.value = "Ada Lovelace"
        pane.get_button.click()
        assert pane.result is not None and pane.result.text == "Greet Ada Lovelace in french."
        shown = outputs_text(pane.result_pane)
        assert "wb-role-user" in shown and "Greet Ada Lovelace in french." in shown
        assert "c/cs/greet · 1 message" in shown
        cell = pane.copy_as_cell()
        assert cell == "%workbench prompt c/cs/greet language=french 'name=Ada Lovelace'"
        assert pane.cell_text.value == cell
    again = run_in_shell(wb, monkeypatch, cell)
    assert again.text == "Greet Ada Lovelace in french."


def test_a_missing_required_argument_is_one_red_line(wb: Workbench) -> None:
    with showing(PromptPane, wb, "c/cs") as pane:
        fill_prompt(pane, "greet", language="french")
        pane.get_button.click()
        assert "Missing required argument: name" in pane.error.value and "#b00020" in pane.error.value
        assert pane.error.value.count("<div") == 1
        assert pane.result is None and pane.result_pane.outputs == ()
        assert pane.copy_button.disabled is True
        pane.fields["name"].value = "Bo"
        pane.get_button.click()
        assert pane.error.value == "" and pane.result is not None


def test_prompt_messages_with_images_by_role(blobs: Workbench) -> None:
    with showing(PromptPane, blobs, "b/s") as pane:
        pane.select.value = "picture"
        assert pane.fields == {}
        pane.get()
        shown = outputs_text(pane.result_pane)
        assert "wb-role-user" in shown and "wb-role-assistant" in shown and "a dot" in shown
        assert "image/png" in mimes(pane.result_pane)
        assert pane.copy_as_cell() == "%workbench prompt b/s/picture"


# ---- logs ---------------------------------------------------------------------------------------
def test_log_pane_filters_clears_and_follows(wb: Workbench) -> None:
    with showing(LogPane, wb, "c/cs") as pane:
        assert any(line.startswith("--- workbench: connecting") for line in pane.shown)
        wb.call("c/cs/log_at", {"levels": ["info", "warning"], "message": "first"})
        pane.refresh()
        assert "notifications/message [warning] clientserver: first" in pane.shown
        assert "notifications/message [info] clientserver: first" in pane.shown
        assert "wb-log-warning" in pane.view.value and "first" in pane.view.value
        pane.level.value = "warning"
        assert "notifications/message [info] clientserver: first" not in pane.shown
        assert "notifications/message [warning] clientserver: first" in pane.shown
        assert "1 hidden by the filter" in pane.status.value
        assert any(line.startswith("--- workbench:") for line in pane.shown)  # not a message: shown
        pane.messages_only.value = True
        assert pane.shown == ["notifications/message [warning] clientserver: first"]
        pane.messages_only.value = False
        pane.level.value = "all"
        # a refresh that finds nothing new leaves the view alone
        changes: list[str] = []
        pane.view.observe(lambda change: changes.append(change["new"]), names="value")
        pane.refresh()
        assert changes == []
        pane.clear_button.click()
        assert pane.shown == [] and "nothing yet" in pane.view.value
        assert "notifications/message" in wb.logs("c/cs")  # the server's log is untouched
        wb.call("c/cs/log_at", {"levels": ["error"], "message": "later"})
        pane.refresh()
        assert pane.shown == ["notifications/message [error] clientserver: later"]
        assert pane.copy_as_cell() == "%workbench logs c/cs"


def test_log_pane_sets_the_servers_log_level(wb: Workbench) -> None:
    wb.open("legacy")
    per_server = hasattr(Workbench, "set_server_log_level")
    with showing(LogPane, wb, "legacy/csl") as pane:
        assert pane.server_level.value == "info"
        pane.server_level.value = "error"
        assert wb.server_log_level == ("info" if per_server else "error")
        assert wb.call("legacy/csl/last_log_level").text == "error"  # asked at once (handshake era)
        wb.call("legacy/csl/log_at", {"levels": ["info", "warning", "error"], "message": "lvl"})
        pane.refresh()
        assert [line for line in pane.shown if "lvl" in line] == ["notifications/message [error] clientserver: lvl"]
        pane.show("c", "cs")
        assert pane.server_level.value == ("info" if per_server else "error")
        pane.show("legacy", "csl")
        assert pane.server_level.value == "error"
        wb.server_log_level = "debug"  # the global setting wins again
        pane.refresh()
        assert pane.server_level.value == "debug"


# ---- list changes -------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", [(), ("--legacy",)], ids=["2026-07-28", "2025-11-25"])
def test_the_explorer_lists_resources_and_prompts_the_server_adds(
    make_workbench: Callable[..., Workbench], flags: tuple[str, ...]
) -> None:
    wb = make_workbench({"toolboxes": {"t": toolbox({"s": stdio_server(*flags)})}})
    wb.open("t")
    explorer = Explorer(wb, "t")
    try:
        explorer.tabs.selected_index = explorer.tabs.titles.index("Resources")
        resources = explorer.resources
        assert resources.target == "t/s" and "1 resources" in resources.hint.value
        select(resources, "test://hello")
        wb.call("t/s/add_resource", {"uri": "test://fresh", "text": "new"})
        listed = explorer.wait_until(lambda: any(r.uri == "test://fresh" for r in resources.resources), 15)
        assert listed, "the Resources tab did not list the new resource after ResourcesChanged"
        assert "2 resources" in resources.hint.value
        assert any(label == "fresh — test://fresh" for label, _ in resources.select.options)
        assert resources.selected is not None and resources.selected.uri == "test://hello"  # kept

        explorer.tabs.selected_index = explorer.tabs.titles.index("Prompts")
        prompts = explorer.prompts
        assert prompts.target == "t/s" and [p.name for p in prompts.prompts] == ["greet"]
        wb.call("t/s/add_prompt", {"name": "fresh"})
        listed = explorer.wait_until(lambda: "fresh" in [p.name for p in prompts.prompts], 15)
        assert listed, "the Prompts tab did not list the new prompt after PromptsChanged"
        assert "2 prompts" in prompts.hint.value
        assert "fresh" in [value for _, value in prompts.select.options]
    finally:
        explorer.close()


# ---- closing ------------------------------------------------------------------------------------
def test_close_leaves_no_widgets_and_ends_the_subscription(wb: Workbench) -> None:
    before = live_widgets()
    resources, prompts, logs = ResourcePane(wb), PromptPane(wb), LogPane(wb)
    for pane in (resources, prompts, logs):
        pane.show("c", "cs")
    select(resources, "city://{country}/{city}")
    resources.fields["country"].value = "france"
    select(resources, "note://{id}")  # the city form is replaced (and closed)
    subscribe(resources)
    watch = resources.watch
    resources.copy_as_cell()
    fill_prompt(prompts, "greet", language="french", name="Ada")
    prompts.get()
    prompts.copy_as_cell()
    logs.copy_as_cell()
    assert live_widgets() > before
    for pane in (resources, prompts, logs):
        pane.close()
        pane.close()  # twice is fine
    assert watch is not None and watch.closed
    del resources, prompts, logs
    assert live_widgets() == before


# ---- in a real kernel ---------------------------------------------------------------------------
KERNEL_SETUP = """
from workbench_magic import Workbench
from workbench_magic.notebook.cellargs import parse_pairs, substitute
from workbench_magic.notebook.widgets.resource_pane import ResourcePane, magic_pair
wb = Workbench.shared()
wb.open("c")
pane = ResourcePane(wb)
pane.show("c", "cs")
pane.select.value = next(i for i, r in enumerate(pane.resources) if r.uri == "counter://value")
print(pane.subscribe_button.model_id)
"""
KERNEL_WAIT = """
import asyncio
wb.call("c/cs/bump", {"by": 3})
for _ in range(150):
    if pane.updates:
        break
    await asyncio.sleep(0.1)  # the kernel's loop delivers the update meanwhile
print("updates", pane.updates, pane.result.text, pane.pending())
pane.close()
wb.close_all()
"""


def test_in_a_kernel_a_subscription_clicked_on_updates_the_pane_by_itself(tmp_path: Path) -> None:
    from conftest import kernel_manager

    config = {"toolboxes": {"c": toolbox({"cs": python_server(CLIENTSERVER)})}}
    path = tmp_path / "workbench-config.json"
    path.write_text(json.dumps(config))
    km = kernel_manager()
    km.start_kernel(cwd=str(tmp_path), env={**os.environ, "WORKBENCH_CONFIG": str(path)})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)

        def run(code: str) -> str:
            out: list[dict[str, Any]] = []
            reply = kc.execute_interactive(code, timeout=60, output_hook=out.append)
            assert reply["content"]["status"] == "ok", reply["content"]
            return "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")

        model_id = run(KERNEL_SETUP).strip().splitlines()[-1]
        # what a front end sends when the Subscribe toggle is clicked
        state = {"method": "update", "state": {"value": True}, "buffer_paths": []}
        msg = kc.session.msg("comm_msg", {"comm_id": model_id, "data": state})
        kc.shell_channel.send(msg)
        assert "updates 1 3 False" in run(KERNEL_WAIT)  # shown without any sync() call
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
