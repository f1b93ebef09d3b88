"""MCP Apps in a real browser: JupyterLab headless + chromium, our Apps test server, the sandboxed frame.

The app renders in the cell output, the handshake completes (the page shows the tool input and
result), a click inside the frame calls a tool back and the frame shows the answer, size-changed
resizes the frame, running the cell again and closing the toolbox tear the views down, and a page
cannot reach the Jupyter page or its API; then the demo's chart app redraws through its app-only
tool. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import python_config, python_server, toolbox, write_config
from test_browser import ARTIFACTS, Lab, _require_browser

pytestmark = pytest.mark.timeout(300)

CELLS = [
    "%load_ext workbench_magic\nfrom workbench_magic import Workbench\nwb = Workbench.shared()\nshown = []",
    'shown.append(wb.call("a/apps/show_counter", {"start": 10}))\nshown[-1]',
    'wb.call("a/apps/probe")',
    'wb.close("a")',
    "views = [r.app for r in shown]\n"
    "print('STATE', json.dumps([[v.initialized, v.teardown_answered, v.theme] for v in views]))\n"
    "print('METHODS', sorted({r.arguments['method'] for r in wb.history if r.kind == 'app'}))",
    'wb.call("demo/datasets/chart", {"dataset": "penguins", "x": "bill_length_mm", "y": "body_mass_g"})',
]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    _require_browser()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in ["import json\n" + CELLS[0], *CELLS[1:]]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "apps.ipynb")
    apps = python_server("apps_server.py")
    datasets = python_config("-m", "workbench_magic.demo.datasets")
    boxes = {"a": toolbox({"apps": apps}), "demo": toolbox({"datasets": datasets})}
    write_config(tmp_path / "workbench-config.json", {"toolboxes": boxes})
    server = Lab(tmp_path)
    yield server
    server.stop()


def run_cell(page: Any, index: int) -> None:
    """Run one cell (Shift+Enter in its editor) and wait until the kernel has taken it."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text()
    cell.locator(".jp-InputPrompt").click()  # select the cell (command mode)
    page.click(".jp-NotebookPanel-toolbar [data-command='notebook:run-cell-and-select-next']")
    page.wait_for_function(
        "([el, before]) => el.innerText !== before && el.innerText.trim() !== '[ ]:'",
        arg=[prompt.element_handle(), before],
        timeout=60_000,
    )


def output_of(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def test_app_in_jupyterlab(lab: Lab) -> None:
    with lab.notebook_page("apps.ipynb", height=1400, failure="app-failure.png") as page:
        run_cell(page, 0)
        run_cell(page, 1)
        frame_el = output_of(page, 1).locator("iframe.wb-app-frame")
        frame_el.wait_for(timeout=120_000)
        assert frame_el.get_attribute("sandbox") == "allow-scripts"  # never allow-same-origin
        app = output_of(page, 1).frame_locator("iframe.wb-app-frame")
        # the handshake: the page got the tool input and result, and our host context
        app.locator("#result:has-text('\"total\":10')").wait_for(timeout=60_000)
        assert json.loads(app.locator("#input").inner_text()) == {"start": 10}
        assert app.locator("#theme").inner_text() == "light"
        assert "host: workbench-magic" in app.locator("#log").inner_text()
        # a click in the frame calls the app-only tool back; the page shows the answer
        app.locator("#bump").click()
        app.locator("#total:has-text('15')").wait_for(timeout=60_000)
        # the model-only tool is refused to the app
        app.locator("#secret").click()
        app.locator("#log:has-text('secret refused')").wait_for(timeout=60_000)
        # size-changed resizes the frame
        before = frame_el.bounding_box()["height"]
        app.locator("#grow").click()
        page.wait_for_function(
            "h => document.querySelector('iframe.wb-app-frame').getBoundingClientRect().height > h + 300",
            arg=before,
            timeout=30_000,
        )
        page.screenshot(path=str(ARTIFACTS / "app-counter.png"), full_page=True)
        # the cell run again: its old view is torn down (answered from its hidden page), a new one starts
        run_cell(page, 1)
        app.locator("#result:has-text('\"total\":10')").wait_for(timeout=60_000)
        # a page that tries to leave its frame finds nothing
        run_cell(page, 2)
        probe = output_of(page, 2).frame_locator("iframe.wb-app-frame")
        probe.locator("#api:not(:has-text('?'))").wait_for(timeout=60_000)
        assert probe.locator("#parent").inner_text() == "blocked"
        assert probe.locator("#origin").inner_text() == "null"  # an opaque origin, not the notebook's
        assert probe.locator("#cookie").inner_text() == "blocked"
        assert probe.locator("#api").inner_text() == "blocked"
        page.screenshot(path=str(ARTIFACTS / "app-probe.png"), full_page=True)
        # closing the toolbox tears the views down: each page answers ui/resource-teardown, then goes
        run_cell(page, 3)
        page.wait_for_function("() => document.querySelectorAll('iframe.wb-app-frame').length === 0", timeout=60_000)
        run_cell(page, 4)
        out = output_of(page, 4)
        out.locator("text=METHODS").wait_for(timeout=60_000)
        text = out.inner_text()
        state = json.loads(text.split("STATE", 1)[1].splitlines()[0])
        # initialized, teardown answered (the first on the re-run, the second on close), JupyterLab's theme
        assert state == [[True, True, "light"], [True, True, "light"]], text
        for method in ("tools/call", "-> ui/resource-teardown", "response", "ui/notifications/size-changed"):
            assert f"'{method}'" in text, text
        # the demo's chart: picking another column calls the app-only chart_points and redraws
        run_cell(page, 5)
        chart = output_of(page, 5).frame_locator("iframe.wb-app-frame")
        chart.locator("#status:has-text('penguins: ')").wait_for(timeout=60_000)
        chart.locator("#y").select_option("flipper_length_mm")
        chart.locator("svg text:has-text('flipper_length_mm')").wait_for(timeout=60_000)
        drawn = int(chart.locator("#status").inner_text().split(": ")[1].split()[0])
        assert drawn > 50 and chart.locator("svg circle").count() == drawn
        chart.locator("#note").click()
        output_of(page, 5).locator("text=message from the app").wait_for(timeout=30_000)
        assert "Look at flipper_length_mm against bill_length_mm" in output_of(page, 5).inner_text()
        page.screenshot(path=str(ARTIFACTS / "app-chart.png"), full_page=True)
