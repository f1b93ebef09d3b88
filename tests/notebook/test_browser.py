"""The explorer in a real browser: JupyterLab headless, driven by Playwright in Debian's chromium."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import (
    ROOT,
    extension_server,
    free_port,
    python_config,
    python_server,
    stdio_server,
    toolbox,
    write_config,
)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.timeout(300)


def _require_browser() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            raise RuntimeError("chromium is missing: .ci/run installs it with apt")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


class Lab:
    """A headless JupyterLab server on 127.0.0.1 with token auth."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.log = (root / "lab.log").open("w")
        settings = root / ".lab-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(root / ".jupyter"),
            "JUPYTER_RUNTIME_DIR": str(root / ".rt"),
            "JUPYTERLAB_SETTINGS_DIR": str(root / ".lab-settings"),
        }
        env.pop("WORKBENCH_CONFIG", None)
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
                f"--port={self.port}", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
                "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:  # a JupyterLab that never answered is not left running
            self.stop()
            raise

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    @contextlib.contextmanager
    def notebook_page(self, name: str, *, height: int, failure: str) -> Iterator[Any]:
        """A chromium page with notebook `name` open and its kernel idle; when the block fails, a
        screenshot named `failure` in test-artifacts/."""
        from playwright.sync_api import sync_playwright

        ARTIFACTS.mkdir(exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": height})
            try:
                self.open_notebook(page, name)
                yield page
            except Exception:
                page.screenshot(path=str(ARTIFACTS / failure), full_page=True)
                raise
            finally:
                browser.close()

    def open_notebook(self, page: Any, name: str) -> None:
        """Open `name` in `page` and wait until its kernel session is attached and idle (before
        that, a cell cannot run)."""
        page.goto(self.url(f"lab/tree/{name}"), timeout=120_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        page.wait_for_function(
            "() => (document.querySelector('.jp-StatusBar-Widget')?.innerText || '').includes('| Idle')",
            timeout=120_000,
        )

    def _wait_ready(self, timeout: float = 150) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("JupyterLab exited at start-up")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)  # polling a server that is still starting: there is no event to wait on
        raise RuntimeError("JupyterLab did not answer in time")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    _require_browser()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench_magic\n%workbench open demo")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "explore.ipynb")
    # the demo's servers, our client-feature test server (it elicits, logs) and the FastMCP skills
    # server beside them
    demo = {name: python_config("-m", f"workbench_magic.demo.{name}") for name in ("datasets", "notes")}
    cs = python_server("clientserver.py")
    docs = extension_server("skills", "skills_server.py")
    write_config(tmp_path / "workbench-config.json", {"toolboxes": {"demo": toolbox({**demo, "cs": cs, "docs": docs})}})
    server = Lab(tmp_path)
    yield server
    server.stop()


def choose(page: Any, selector: str, prefix: str, *, contains: bool = False) -> None:
    """Select the option whose text starts with (or contains) `prefix` (ipywidgets option values are
    their labels)."""
    # the options change with the kernel's answer to an earlier choice: wait for the one wanted
    test = "o.value.includes(p)" if contains else "o.value.startsWith(p)"
    found = f"([s, p]) => [...(document.querySelector(s)?.options || [])].some(o => {test})"
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(found, arg=[selector, prefix], timeout=30_000)
    except PlaywrightTimeout:  # the assertion below says what was there instead
        pass
    texts = page.eval_on_selector(selector, "el => [...el.options].map(o => [o.text, o.value])")
    values = [value for _, value in texts if (prefix in value if contains else value.startswith(prefix))]
    assert values, f"no option starting with {prefix!r} in {texts}"
    page.select_option(selector, value=values[0])


def test_explorer_in_jupyterlab(lab: Lab) -> None:
    from playwright.sync_api import expect

    with lab.notebook_page("explore.ipynb", height=1000, failure="explorer-failure.png") as page:
        page.click("text=Run >> nth=0")
        page.click("text=Run All Cells")

        explorer = page.wait_for_selector(".wb-explorer", timeout=120_000)
        assert explorer is not None
        choose(page, ".wb-server-select select", "● datasets")
        choose(page, ".wb-tool-select select", "query ")
        # Forms of tools selected before (the first tool, chart, also has a dataset field)
        # stay in the page, hidden: wait for query's own form (limit is only there), then
        # fill the fields shown.
        limit = page.locator(".wb-field-limit input >> visible=true")
        limit.wait_for(timeout=30_000)
        dataset = page.locator(".wb-field-dataset input >> visible=true")
        assert dataset.count() == 1
        dataset.fill("penguins")
        dataset.press("Tab")
        limit.fill("3")
        limit.press("Tab")
        expect(dataset).to_have_value("penguins")
        page.click(".wb-call")
        page.wait_for_function(
            "() => (document.querySelector('.wb-result')?.innerText || '').includes('[ok')", timeout=60_000
        )
        result_text = page.inner_text(".wb-result")
        page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
        assert "demo/datasets/query [ok" in result_text
        assert "Adelie" in result_text
        assert "✓ structured content matches the output schema" in result_text
        # the history tab lists the call
        page.click(".wb-explorer .lm-TabBar-tab:has-text('History')")
        history = page.inner_text(".wb-history")
        assert "demo/datasets/query" in history and json.dumps({"dataset": "penguins", "limit": 3})[:20] in history
        panes(page)
        models(page)


def wait_text(page: Any, selector: str, text: str, timeout: float = 60_000) -> None:
    page.wait_for_function(
        f"() => (document.querySelector({json.dumps(selector)})?.innerText || '').includes({json.dumps(text)})",
        timeout=timeout,
    )


def tab(page: Any, title: str) -> None:
    page.click(f".wb-explorer .lm-TabBar-tab:has-text('{title}')")


def panes(page: Any) -> None:
    """The inspector's panes: a server's question answered by a click, resources, prompts, logs."""
    # a tool that asks the person: the form shows in the explorer, Accept answers the server
    tab(page, "Tools")
    choose(page, ".wb-server-select select", "● cs")
    choose(page, ".wb-tool-select select", "ask_person")
    wait_text(page, ".wb-tool-info", "demo/cs/ask_person")  # the kernel has the choice: Call calls it
    page.click(".wb-call")
    page.wait_for_selector(".wb-elicitation .wb-field-name input", timeout=60_000)
    page.fill(".wb-elicitation .wb-field-name input", "Clicked in a browser")
    page.screenshot(path=str(ARTIFACTS / "explorer-elicitation.png"), full_page=True)
    page.click(".wb-elicitation button:has-text('Accept')")
    wait_text(page, ".wb-result", "demo/cs/ask_person [ok")
    assert '"accept"' in page.inner_text(".wb-result")
    tab(page, "History")  # the answer the server got, in the history's elicitation entry
    wait_text(page, ".wb-history", "Clicked in a browser")
    assert "demo/cs <- elicitation" in page.inner_text(".wb-history")
    tab(page, "Tools")
    # a tool that logs; the Logs tab shows its lines
    choose(page, ".wb-tool-select select", "log_at")
    # Call calls the tool the kernel has chosen: clicked before the choice reached it, Call asked
    # ask_person again (its question unanswered, the cell waited out the limit)
    wait_text(page, ".wb-tool-info", "demo/cs/log_at")
    page.click(".wb-call")
    wait_text(page, ".wb-result", "demo/cs/log_at [ok")  # not the ask_person result still shown
    tab(page, "Logs")
    wait_text(page, ".wb-log-view", "[warning] clientserver: hello")
    page.screenshot(path=str(ARTIFACTS / "explorer-logs.png"), full_page=True)
    # resources of the datasets server: the index reads as JSON
    choose(page, ".wb-server-select select", "● datasets")
    tab(page, "Resources")
    choose(page, ".wb-resource-select select", "dataset://index", contains=True)
    wait_text(page, ".wb-resource-result", "penguins")
    page.screenshot(path=str(ARTIFACTS / "explorer-resources.png"), full_page=True)
    # the skills of the FastMCP server: a skill's files, and its instructions rendered as Markdown
    choose(page, ".wb-server-select select", "● docs")
    tab(page, "Skills")
    choose(page, ".wb-skill-select select", "csv-cleaning")
    wait_text(page, ".wb-skill-info", "references/guide.md")
    wait_text(page, ".wb-skill-result", "digests checked")
    heading = page.locator(".wb-skill-result h1")
    heading.wait_for(timeout=30_000)
    assert heading.inner_text() == "Cleaning a CSV file"  # Markdown rendered, not shown as text
    page.screenshot(path=str(ARTIFACTS / "explorer-skills.png"), full_page=True)
    choose(page, ".wb-server-select select", "● datasets")
    # a prompt with its argument filled in
    tab(page, "Prompts")
    choose(page, ".wb-prompt-select select", "analyze_dataset")
    page.wait_for_selector(".wb-prompt-arg input", timeout=30_000)
    arg = page.locator(".wb-prompt-arg input").first
    arg.fill("penguins")
    arg.press("Tab")
    page.click(".wb-prompt-get")
    wait_text(page, ".wb-prompt-result", "penguins")
    page.screenshot(path=str(ARTIFACTS / "explorer-prompts.png"), full_page=True)


def models(page: Any) -> None:
    """The Models tab of the datasets server (chosen last by `panes`): its schema report, a column per
    provider, and its toolbox's context cost, computed once the tab shows."""
    tab(page, "Models")
    wait_text(page, ".wb-models-schemas", "Schema report of demo/datasets", timeout=120_000)
    header = page.inner_text(".wb-models-schemas thead")
    assert all(provider in header for provider in ("openai", "anthropic", "gemini")), header
    assert "demo/datasets/query" in page.inner_text(".wb-models-schemas tbody")
    wait_text(page, ".wb-models-cost", "dynamic")
    assert all(mode in page.inner_text(".wb-models-cost") for mode in ("flat", "proxy"))
    page.screenshot(path=str(ARTIFACTS / "explorer-models.png"), full_page=True)


TASK_CELLS = [
    "%load_ext workbench_magic",
    "%%use_tool t/s/slow --task -o h\nsteps: 6\ndelay: 0.5",
    "%%use_tool t/s/sleep --task\nseconds: 60",
    "%workbench open t",
]


@pytest.fixture
def task_lab(tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab with tasks.ipynb (TASK_CELLS) and toolbox `t`: our test server as `s`."""
    _require_browser()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in TASK_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "tasks.ipynb")
    write_config(tmp_path / "workbench-config.json", {"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    server = Lab(tmp_path)
    yield server
    server.stop()


def run_cell(page: Any, index: int) -> None:
    """Run cell `index` from the toolbar and wait until the kernel has taken it (its prompt changed)."""
    prompt = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt")
    before = prompt.inner_text()
    prompt.click()  # select the cell (command mode)
    page.click(".jp-NotebookPanel-toolbar [data-command='notebook:run-cell-and-select-next']")
    page.wait_for_function(
        "([el, before]) => el.innerText !== before && el.innerText.trim() !== '[ ]:'",
        arg=[prompt.element_handle(), before],
        timeout=60_000,
    )


def cell_output(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def wait_output(page: Any, index: int, *texts: str, timeout: float = 60_000) -> str:
    """Wait until cell `index`'s output area holds every one of `texts`; its text then."""
    page.wait_for_function(
        "([el, texts]) => texts.every(t => el.innerText.includes(t))",
        arg=[cell_output(page, index).element_handle(), list(texts)],
        timeout=timeout,
    )
    return str(cell_output(page, index).inner_text())


def test_tasks_in_jupyterlab(task_lab: Lab) -> None:
    """A `--task` cell's line follows the work and becomes the result in place; the explorer's
    Tasks tab lists the session's tasks and its Cancel button cancels one."""
    from playwright.sync_api import expect

    with task_lab.notebook_page("tasks.ipynb", height=1200, failure="tasks-failure.png") as page:
        run_cell(page, 0)
        run_cell(page, 1)
        # the handle's line, shown at once while the 6 steps of 0.5 s run ...
        line = wait_output(page, 1, "t1 t/s/slow working")
        assert "done 6 steps" not in line
        # ... becomes the result in the same output area, without another cell run
        text = wait_output(page, 1, "done 6 steps")
        assert "working" not in text, text
        assert cell_output(page, 1).locator(".jp-OutputArea-child").count() == 1
        page.screenshot(path=str(ARTIFACTS / "task-line.png"), full_page=True)

        # a long task, then the explorer's Tasks tab: its row, cancelled by a click
        run_cell(page, 2)
        wait_output(page, 2, "t2 t/s/sleep working")
        run_cell(page, 3)
        page.wait_for_selector(".wb-explorer", timeout=120_000)
        tab(page, "Tasks")
        rows = page.locator(".wb-tasks .wb-task-row")
        row = rows.filter(has=page.locator(".wb-task-id", has_text=re.compile(r"^t2$")))
        expect(row).to_have_class(re.compile(r"\bwb-task-working\b"), timeout=30_000)
        expect(row.locator(".wb-task-status")).to_have_text("working")
        done = rows.filter(has=page.locator(".wb-task-id", has_text=re.compile(r"^t1$")))
        expect(done).to_have_class(re.compile(r"\bwb-task-completed\b"), timeout=30_000)
        expect(done.locator(".wb-task-cancel")).to_be_disabled()
        cancel = row.locator(".wb-task-cancel")
        expect(cancel).to_be_enabled()
        cancel.click()
        expect(row).to_have_class(re.compile(r"\bwb-task-cancelled\b"), timeout=30_000)
        expect(row.locator(".wb-task-status")).to_have_text("cancelled")
        expect(cancel).to_be_disabled()
        # the second cell's line says so too (a cancelled task has no result to show)
        wait_output(page, 2, "t2 t/s/sleep cancelled")
        page.screenshot(path=str(ARTIFACTS / "explorer-tasks.png"), full_page=True)


PROTOCOL_CELLS = [
    "%load_ext workbench_magic\n%workbench open t",
    "%use_tool t/s/echo text=traced",
    "from workbench_magic import Workbench\n"
    "for n in range(30):\n    Workbench.shared().call('t/s/echo', {'text': 'again'})",
    "Workbench.shared().call('t/s/echo', {'text': 'long-' + 'y' * 995 + '-end'})",
    "Workbench.shared().call('t/s/echo', {'text': 'after'})",
]


@pytest.fixture
def protocol_lab(tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab with protocol.ipynb (PROTOCOL_CELLS) and toolbox `t`: our test server as `s`."""
    _require_browser()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in PROTOCOL_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "protocol.ipynb")
    write_config(tmp_path / "workbench-config.json", {"toolboxes": {"t": toolbox({"s": stdio_server()})}})
    server = Lab(tmp_path)
    yield server
    server.stop()


def test_protocol_in_jupyterlab(protocol_lab: Lab) -> None:
    """The Protocol tab records the chosen server while it shows: a cell's call appears as arrows,
    and clicking the `tools/call` arrow opens the message as JSON."""
    from playwright.sync_api import expect

    with protocol_lab.notebook_page("protocol.ipynb", height=1200, failure="protocol-failure.png") as page:
        run_cell(page, 0)
        page.wait_for_selector(".wb-explorer", timeout=120_000)
        choose(page, ".wb-server-select select", "● s")
        tab(page, "Protocol")
        wait_text(page, ".wb-protocol-view", "(no messages yet: call a tool of t/s)")
        run_cell(page, 1)
        wait_output(page, 1, "traced")
        # the tick draws the exchange once the kernel is idle: the request, then its result under it
        arrow = page.locator(".wb-arrow.wb-sent", has_text=re.compile(r"^tools/call #\d+"))
        call = page.locator(".wb-protocol .wb-trace").locator(arrow)
        expect(call).to_have_count(1, timeout=30_000)
        result = page.locator(".wb-protocol .wb-trace .wb-arrow.wb-received", has_text=re.compile(r"result #\d+"))
        expect(result).to_have_count(1, timeout=30_000)
        expect(page.locator(".wb-protocol-status")).to_contain_text("2 messages (recording t/s)")
        message = page.locator(".wb-protocol details", has=arrow)
        expect(message).to_have_count(1)
        json_text = message.locator("pre")
        expect(json_text).to_be_hidden()
        call.click()
        expect(message).to_have_attribute("open", "")
        expect(json_text).to_be_visible()
        expect(json_text).to_contain_text('"method": "tools/call"')
        expect(json_text).to_contain_text('"text": "traced"')
        page.screenshot(path=str(ARTIFACTS / "explorer-protocol.png"), full_page=True)
        # thirty more calls: the diagram is drawn again, the opened message stays open, and the
        # box, scrolled to its end, follows the newest message
        opened = page.locator(f".wb-protocol details[data-key='{message.get_attribute('data-key')}']")
        box = page.locator(".wb-protocol-view div").first
        box.evaluate("box => { box.scrollTop = box.scrollHeight; }")
        run_cell(page, 2)
        expect(page.locator(".wb-protocol-status")).to_contain_text("62 messages (recording t/s)", timeout=30_000)
        expect(opened).to_have_attribute("open", "")
        expect(opened.locator("pre")).to_contain_text('"text": "traced"')
        newest = page.locator(".wb-protocol .wb-trace .wb-arrow").last
        expect(newest).to_be_in_viewport()
        assert box.evaluate("box => box.scrollHeight - box.scrollTop - box.clientHeight") < 8
        # a long value is shortened; "whole message" asks the kernel for the message, which stays
        # whole when the diagram is drawn again
        run_cell(page, 3)
        expect(page.locator(".wb-protocol-status")).to_contain_text("64 messages (recording t/s)", timeout=30_000)
        long_call = page.locator(".wb-protocol details", has=arrow).last
        long_call.locator(".wb-arrow").click()
        shown = long_call.locator("pre")
        expect(shown).to_contain_text("(+804 chars)")
        expect(shown).not_to_contain_text("-end")
        long_call.locator("button.wb-whole").click()
        expect(shown).to_contain_text("y-end", timeout=30_000)
        expect(long_call.locator("button.wb-whole")).to_have_count(0)
        run_cell(page, 4)
        expect(page.locator(".wb-protocol-status")).to_contain_text("66 messages (recording t/s)", timeout=30_000)
        expect(page.locator(".wb-protocol details", has=arrow).nth(-2).locator("pre")).to_contain_text("y-end")


RESULT_CELLS = [
    "%load_ext workbench_magic",
    "%%use_tool demo/datasets/query\ndataset: penguins\nlimit: 5",
    "%workbench open demo",
]
PENGUIN_COLUMNS = ["species", "island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "sex"]
EXPLORER_BOUND = 1200
"""Pixels the explorer may be tall with a 60-row result in it (it was 2,650)."""


@pytest.fixture
def result_lab(tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab with results.ipynb (RESULT_CELLS) and toolbox `demo`: the demo's datasets server
    (its chart is an MCP App) and the FastMCP skills server."""
    _require_browser()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in RESULT_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "results.ipynb")
    servers = {"datasets": python_config("-m", "workbench_magic.demo.datasets")}
    servers["docs"] = extension_server("skills", "skills_server.py")
    write_config(tmp_path / "workbench-config.json", {"toolboxes": {"demo": toolbox(servers)}})
    server = Lab(tmp_path)
    yield server
    server.stop()


def box_of(page: Any, selector: str) -> dict[str, float]:
    """The bounding box of the first visible element `selector` matches."""
    box = page.locator(f"{selector} >> visible=true").first.bounding_box()
    assert box is not None, f"{selector} is not on screen"
    return dict(box)


def call_in_explorer(page: Any, tool: str, own: str, **fields: str) -> None:
    """Choose `tool` of the datasets server, fill the form's `fields`, call it and wait for its result.

    The forms of tools chosen before stay in the page, hidden: `own` is a field of this tool's form
    only, shown once its form is."""
    choose(page, ".wb-tool-select select", f"{tool} ")
    wait_text(page, ".wb-tool-info", f"demo/datasets/{tool}")
    page.locator(f".wb-field-{own} input >> visible=true").wait_for(timeout=30_000)
    for name, value in fields.items():
        field = page.locator(f".wb-field-{name} input >> visible=true")
        assert field.count() == 1, name
        field.fill(value)
        field.press("Tab")
    page.click(".wb-call")
    wait_text(page, ".wb-result", f"demo/datasets/{tool} [ok", timeout=60_000)


def test_results_and_the_explorer_in_jupyterlab(result_lab: Lab) -> None:
    """A structured result shows its table (not JupyterLab's JSON tree); in the explorer an app tool
    shows its app, a 60-row result scrolls in a bounded pane, and the tabs fit their pane."""
    with result_lab.notebook_page("results.ipynb", height=1000, failure="results-failure.png") as page:
        page.click("text=Run >> nth=0")
        page.click("text=Run All Cells")
        # the %%use_tool cell: the result's header line and its table, no JSON viewer
        shown = cell_output(page, 1)
        table = shown.locator("table")
        table.wait_for(timeout=120_000)
        assert "ToolResult demo/datasets/query [ok" in shown.inner_text()
        header = [t.strip() for t in table.locator("thead th").all_inner_texts()]
        assert header[: len(PENGUIN_COLUMNS)] == PENGUIN_COLUMNS, header
        assert table.locator("tbody tr").count() == 5 and "Adelie" in table.locator("tbody").inner_text()
        assert shown.locator(".jp-RenderedJSON").count() == 0
        page.screenshot(path=str(ARTIFACTS / "result-table.png"), full_page=True)

        page.wait_for_selector(".wb-explorer", timeout=120_000)
        choose(page, ".wb-server-select select", "● datasets")
        # the server's status shows once: the line under the choice adds to the label, never repeats it
        label = page.eval_on_selector(".wb-server-select select", "s => s.options[s.selectedIndex].text")
        label, line = label.replace("\xa0", " "), page.inner_text(".wb-server-info").replace("\xa0", " ")
        assert "10 tools" in label and "2026-07-28" in label, label
        assert "tools" not in line and "2026-07-28" not in line and "connected" not in line, line
        assert "stdio" in line, line

        # a 60-row result: the explorer stays bounded, its result pane scrolls both ways
        call_in_explorer(page, "query", "limit", dataset="penguins", limit="60")
        page.locator(".wb-result table tbody tr").nth(59).wait_for(state="attached", timeout=30_000)
        height = box_of(page, ".wb-explorer")["height"]
        assert height < EXPLORER_BOUND, height
        pane = page.locator(".wb-result")
        sizes = pane.evaluate("p => ({sh: p.scrollHeight, ch: p.clientHeight, oy: getComputedStyle(p).overflowY})")
        assert sizes["sh"] > sizes["ch"] and sizes["oy"] in ("auto", "scroll"), sizes
        # the wide table scrolls sideways, and in one place only (what scrolls or clips it):
        wide = page.locator(".wb-result table").evaluate(
            """t => { const out = []; const pane = t.closest('.wb-result');
            for (let e = t.parentElement; e; e = e.parentElement) {
              const s = getComputedStyle(e);
              if (e.scrollWidth > e.clientWidth + 1 && s.overflowX !== 'visible') out.push([e.className, s.overflowX]);
              if (e === pane) break; }
            return out; }"""
        )
        # the pane itself, whose scrollbars stay in view (an output's own would sit under its last row)
        assert len(wide) == 1 and "wb-result" in wide[0][0] and wide[0][1] in ("auto", "scroll"), wide
        pane.evaluate("p => { p.scrollTop = p.scrollHeight; p.scrollLeft = p.scrollWidth; }")
        last = page.locator(".wb-result table tbody tr").nth(59).locator("td").last
        expect_inside(last.bounding_box(), dict(pane.bounding_box()))
        page.locator(".wb-explorer").screenshot(path=str(ARTIFACTS / "explorer-60-rows.png"))

        # an MCP App tool: its app runs in the result pane, as in a cell (no JSON tree)
        call_in_explorer(page, "chart", "x", dataset="penguins")
        frame = page.locator(".wb-result iframe.wb-app-frame")
        frame.wait_for(timeout=60_000)
        assert frame.get_attribute("sandbox") == "allow-scripts"
        app = page.frame_locator(".wb-result iframe.wb-app-frame")
        app.locator("#status:has-text('penguins: ')").wait_for(timeout=60_000)
        assert page.locator(".wb-result .wb-json").count() == 0
        page.locator(".wb-explorer").screenshot(path=str(ARTIFACTS / "explorer-app.png"))

        models_layout(page)
        skills_layout(page)


def expect_inside(inner: Any, outer: dict[str, float], slack: float = 1.0) -> None:
    assert inner is not None
    assert inner["x"] >= outer["x"] - slack and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack, (
        inner,
        outer,
    )


# the left edge of the text of a cell and the right edge, as drawn (not the cell's box)
TEXT_EDGES = """cell => { const r = document.createRange(); r.selectNodeContents(cell);
  const b = r.getBoundingClientRect(); return [b.left, b.right]; }"""


def models_layout(page: Any) -> None:
    """The Models tab: the schema report, scrolled down and sideways, keeps its provider header on
    top and every shown row's tool name in view; the context cost's headers stand over their columns
    (numbers right, words left)."""
    page.set_viewport_size({"width": 1000, "height": 1000})  # a narrower notebook: the report is wider than its view
    tab(page, "Models")
    wait_text(page, ".wb-models-schemas", "Schema report of demo/datasets", timeout=120_000)
    wait_text(page, ".wb-models-cost", "dynamic", timeout=120_000)
    view = page.locator(".wb-models-schemas").first
    sizes = view.evaluate("v => [v.scrollHeight - v.clientHeight, v.scrollWidth - v.clientWidth]")
    assert sizes[0] > 100 and sizes[1] > 20, sizes  # it scrolls both ways
    for down in (0.3, 0.5, 0.8):
        view.evaluate(
            f"v => {{ v.scrollTop = (v.scrollHeight - v.clientHeight) * {down}; v.scrollLeft = v.scrollWidth; }}"
        )
        edges = view.evaluate(
            """v => { const box = v.getBoundingClientRect(); const b = v.clientTop;
            const head = v.querySelector('thead th').getBoundingClientRect();
            const rows = [...v.querySelectorAll('tbody tr')].map(r => [r.getBoundingClientRect(),
              r.cells[0].querySelector('code').getBoundingClientRect()]);
            const shown = rows.filter(([r, c]) => r.bottom > head.bottom + c.height + 8 && r.top < box.bottom);
            return {top: box.top + b, left: box.left + v.clientLeft, bottom: box.top + b + v.clientHeight,
              head: [head.top, head.bottom],
              names: shown.map(([r, c]) => [c.left, c.top, c.bottom])}; }"""
        )
        assert abs(edges["head"][0] - edges["top"]) <= 1, edges  # the provider header row stays on top
        assert edges["names"], edges
        for left, top, bottom in edges["names"]:  # each shown row's name: at the left, under the header
            assert abs(left - edges["left"]) <= 12 and top >= edges["head"][1] - 1 and bottom <= edges["bottom"] + 1, (
                left,
                top,
                bottom,
                edges,
            )
    page.locator(".wb-explorer").screenshot(path=str(ARTIFACTS / "explorer-models-layout.png"))
    # the context cost: each header's text lines up with its column's
    cost = page.locator(".wb-models-cost table").first
    heads = cost.locator("thead th")
    cells = cost.locator("tbody tr").first.locator("td")
    for i in range(heads.count()):
        head, cell = heads.nth(i).evaluate(TEXT_EDGES), cells.nth(i).evaluate(TEXT_EDGES)
        numeric = i in (1, 2, 3)
        edge = 1 if numeric else 0  # right edges for the numbers, left edges for the words
        assert abs(head[edge] - cell[edge]) <= 2, (i, head, cell)
    page.set_viewport_size({"width": 1400, "height": 1000})


def skills_layout(page: Any) -> None:
    """The Skills tab: the list of skills stays within its pane."""
    choose(page, ".wb-server-select select", "● docs")
    tab(page, "Skills")
    choose(page, ".wb-skill-select select", "csv-cleaning")
    wait_text(page, ".wb-skill-result", "digests checked")
    pane = box_of(page, ".wb-skills")
    for selector in (".wb-skill-select select", ".wb-skill-hint", ".wb-skill-info", ".wb-skill-result"):
        expect_inside(box_of(page, selector), pane)
    page.locator(".wb-explorer").screenshot(path=str(ARTIFACTS / "explorer-skills-layout.png"))
